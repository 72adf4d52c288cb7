"""Text for a terminal, made inert: what a program, a dataset row or a file name put in a message reaches the
operator's terminal as visible escapes, never as control (issue 45: a verdict's message wrote the clipboard with
OSC 52, cleared the screen, and faked `status: ok` with a carriage return). The command lines' text output
(`runner eval`, `submit`, `bulk`; `queries ingest`, `agreement`, `score-predictions`) goes through `inert`; their
`--json` output is escaped by JSON itself. Standard library only: the runner imports this under a GPU machine's
bare Python."""

from __future__ import annotations

import re

# C0 controls but newline and tab, DEL, C1 controls (8-bit CSI and OSC), and the bidirectional overrides and
# isolates that reorder what a line shows ("Trojan Source")
_CONTROL = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]")


def _escape(match: re.Match[str]) -> str:
    code = ord(match.group())
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def inert(text: object) -> str:
    """`text` (str() of it) with every control character but newline and tab written as a visible escape
    (`\\x1b`, `\\x0d`, `\\u202e`)."""
    return _CONTROL.sub(_escape, str(text))
