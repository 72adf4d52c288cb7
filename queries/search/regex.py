"""What the code search index can do for a regular expression: the literals it requires (every text it matches
holds each of them, as a substring), and whether its matches within lines are matches of the text (`LineRule`).

Searches run RE2 (`pyarrow.compute`); the literals are read from Python's own parse of the pattern
(`re._parser`), conservatively: only runs of plain characters in the pattern's top-level sequence and in groups
that must match once (a repeat of at least one, a capturing or plain group); alternations, classes, optional
parts and anything scoped by flags end a run. A pattern Python cannot parse, or one whose flags (other than
ignore-case, which the caller then applies to the literals too) could change what a character means, gives none:
the search falls back to a full scan. Where Python and RE2 read a construct differently, the verifying RE2 match
decides what is found; the literals only choose which rows to verify, and each is something every match of the
pattern as Python reads plain characters must contain. A pattern Python cannot parse gets no line rule either.
"""

from __future__ import annotations

import re
import re._constants as sre
import re._parser as sre_parse
from dataclasses import dataclass

_NEUTRAL_FLAGS = sre.SRE_FLAG_UNICODE | sre.SRE_FLAG_IGNORECASE
_LINE_ANCHORS = (sre.AT_BOUNDARY, sre.AT_NON_BOUNDARY)  # \b, \B: the same at a line's end as before its newline
_NOT_NEWLINE_CLASSES = (sre.CATEGORY_DIGIT, sre.CATEGORY_WORD)
NEWLINE = ord("\n")


@dataclass(frozen=True)
class LineRule:
    sound: bool  # a match within one line of a text is a match of the text (no ^, $, \A: only \b, \B anchor)
    complete: bool  # and every match of the text lies within one line (the pattern cannot match a newline)


NO_RULE = LineRule(False, False)


def line_rule(pattern: str) -> LineRule:
    """What matching `pattern` line by line tells about whole texts (read from Python's parse, conservatively:
    anything it does not know can match a newline)."""
    if "[:" in pattern:
        return NO_RULE
    try:
        parsed = sre_parse.parse(pattern)
    except (re.error, RecursionError, OverflowError, ValueError):
        return NO_RULE
    found = {"anchor": False, "newline": False}
    _walk(list(parsed), bool(parsed.state.flags & sre.SRE_FLAG_DOTALL), found)
    return LineRule(not found["anchor"], not found["anchor"] and not found["newline"])


def may_match_newline(items: list, dotall: bool) -> bool:
    """Whether parsed `items` can match a newline (conservatively: anything unknown can)."""
    found = {"anchor": False, "newline": False}
    _walk(items, dotall, found)
    return found["newline"]


def _walk(items: list, dotall: bool, found: dict) -> None:
    """Note in `found` whether `items` hold an anchor other than a word boundary, and whether they can match a
    newline."""
    for op, value in items:
        if op is sre.AT:
            found["anchor"] |= value not in _LINE_ANCHORS
        elif op is sre.LITERAL:
            found["newline"] |= value == NEWLINE
        elif op is sre.NOT_LITERAL:
            found["newline"] |= value != NEWLINE
        elif op is sre.ANY:
            found["newline"] |= dotall
        elif op is sre.IN:
            found["newline"] |= _class_may_hold_newline(value)
        elif op is sre.SUBPATTERN:
            _group, add_flags, del_flags, inner = value
            inner_dotall = (dotall or bool(add_flags & sre.SRE_FLAG_DOTALL)) and not del_flags & sre.SRE_FLAG_DOTALL
            _walk(list(inner), inner_dotall, found)
        elif op in (sre.MAX_REPEAT, sre.MIN_REPEAT, sre.POSSESSIVE_REPEAT):
            _walk(list(value[2]), dotall, found)
        elif op is sre.BRANCH:
            for branch in value[1]:
                _walk(list(branch), dotall, found)
        elif op is sre.ATOMIC_GROUP:
            _walk(list(value), dotall, found)
        else:  # back references, look-arounds (RE2 has neither), anything else: assume the worst
            found["newline"] = found["anchor"] = True


def _class_may_hold_newline(items: list) -> bool:
    for op, value in items:
        if op is sre.LITERAL and value != NEWLINE:
            continue
        if op is sre.RANGE and not value[0] <= NEWLINE <= value[1]:
            continue
        if op is sre.CATEGORY and value in _NOT_NEWLINE_CLASSES:
            continue
        return True  # the newline itself, a negated class, \s, \S, \D, \W, ...
    return False


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
    return literal_runs(list(parsed)), bool(flags & sre.SRE_FLAG_IGNORECASE)


def literal_runs(items: list) -> list[str]:
    """The runs of literal characters every match of parsed `items` goes through, longest first."""
    runs: list[str] = []
    _collect(items, runs)
    return sorted({run for run in runs if run}, key=lambda r: (-len(r), r))


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
