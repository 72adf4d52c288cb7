"""Messages and progress lines of both ingest stages, on stderr."""

from __future__ import annotations

import sys
import time

from common.terminal import inert


def say(message: str) -> None:
    print(inert(message), file=sys.stderr, flush=True)  # it may name the dataset's files and rows


class Progress:
    """Rows/s and ETA on stderr, at most once a second (a carriage-return line on a terminal, else every 10 s)."""

    def __init__(self, total: int, enabled: bool, what: str = "rows"):
        self.total, self.enabled, self.what, self.done_rows = total, enabled, what, 0
        self.started = self.last = time.monotonic()
        self.tty = sys.stderr.isatty()

    def advance(self, rows: int, label: str) -> None:
        self.done_rows += rows
        now = time.monotonic()
        if not self.enabled or now - self.last < (1.0 if self.tty else 10.0):
            return
        self.last = now
        rate = self.done_rows / max(now - self.started, 1e-9)
        eta = (self.total - self.done_rows) / rate if rate > 0 else 0
        line = f"{label}: {self.done_rows:,}/{self.total:,} {self.what}  {rate:,.0f} rows/s  ETA {eta:,.0f} s"
        print(("\r" + line) if self.tty else line, end="" if self.tty else "\n", file=sys.stderr, flush=True)

    def done(self) -> None:
        if self.enabled and self.tty:
            print(file=sys.stderr)
