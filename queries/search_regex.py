"""The literals a regular expression requires: every text it matches holds each of them (as a substring).

Searches run RE2 (`pyarrow.compute`); the literals are read from Python's own parse of the pattern
(`re._parser`), conservatively: only runs of plain characters in the pattern's top-level sequence and in groups
that must match once (a repeat of at least one, a capturing or plain group); alternations, classes, optional
parts and anything scoped by flags end a run. A pattern Python cannot parse, or one whose flags (other than
ignore-case, which the caller then applies to the literals too) could change what a character means, gives none:
the search falls back to a full scan. Where Python and RE2 read a construct differently, the verifying RE2 match
decides what is found; the literals only choose which rows to verify, and each is something every match of the
pattern as Python reads plain characters must contain.
"""

from __future__ import annotations

import re
import re._constants as sre
import re._parser as sre_parse

MIN_LITERAL = 3  # shorter ones narrow nothing (the index is of trigrams)
_NEUTRAL_FLAGS = sre.SRE_FLAG_UNICODE | sre.SRE_FLAG_IGNORECASE


def required_literals(pattern: str) -> tuple[list[str], bool]:
    """(literals every match contains, whether they are case-insensitive); ([], _) when none can be read."""
    if "[:" in pattern:  # RE2's POSIX classes ([[:alpha:]]) are a class and a literal "]" to Python
        return [], False
    try:
        parsed = sre_parse.parse(pattern)
    except (re.error, RecursionError, OverflowError, ValueError):
        return [], False
    flags = parsed.state.flags
    if flags & ~_NEUTRAL_FLAGS:
        return [], False
    runs: list[str] = []
    _collect(list(parsed), runs)
    literals = sorted({run for run in runs if len(run.encode("utf-8")) >= MIN_LITERAL}, key=lambda r: (-len(r), r))
    return literals, bool(flags & sre.SRE_FLAG_IGNORECASE)


def _collect(items: list, runs: list[str]) -> None:
    """Append to `runs` the runs of literal characters of a sequence every match goes through in full."""
    current: list[str] = []
    for op, value in items:
        if op is sre.LITERAL:
            current.append(chr(value))
            continue
        runs.append("".join(current))
        current = []
        if op is sre.SUBPATTERN:
            _group, add_flags, del_flags, inner = value
            if not add_flags and not del_flags:
                _collect(list(inner), runs)
        elif op in (sre.MAX_REPEAT, sre.MIN_REPEAT, sre.POSSESSIVE_REPEAT):
            low, _high, inner = value
            if low >= 1:
                _collect(list(inner), runs)
        elif op is sre.ATOMIC_GROUP:
            _collect(list(value), runs)
    runs.append("".join(current))
