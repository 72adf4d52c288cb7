"""The project's one error base.

Every error that the project raises on purpose (store, ingest, query, console, runner) derives from `TlxError`.
Its `user_message` is written for the person using the tool: it names the file, row or field at fault and holds
no traceback, so pages and command lines show it as it is. Callers tell errors apart by class, never by matching
message text. Standard library only: the runner imports this under a GPU machine's bare Python.
"""

from __future__ import annotations


class TlxError(Exception):
    """An expected failure with a message safe to show to users."""

    @property
    def user_message(self) -> str:
        return str(self)
