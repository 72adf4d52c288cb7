"""A regex rewritten for the line index: what it matches within a line, and which lines a match that crosses a
newline can start in (`line_patterns`).

A sound pattern (no anchor but `\\b`, `\\B`: `search_regex.line_rule`) that can match a newline (`\\s`, `[^…]`,
`(?s).`) is rewritten from Python's parse into RE2 syntax, each part that can match a newline without it
(`\\s` → `[^\\S\\n]`, `[^a]` → `[^a\\n]`, `.` → `[^\\n]`, a newline → nothing). `within` matches a text with no
newline exactly when the pattern does, and never a newline: so the lines it matches are the rows whose text
holds a match within one line, and it runs over many lines at once. A match across lines has its first newline
in some part of the pattern's top-level sequence that can match one; the line it starts in ends with what the
parts before that one match, then (a repeated character class) as much of that part as lies before the newline,
or (anything else) any rest of the line: `starts`, an alternation of those, each anchored at the line's end
(`(?m)$`). Only rows with such a line (and every text the pattern requires) need reading.

Python and RE2 read a few constructs differently; patterns holding them (`{,n}`, POSIX classes) or flags that
change what a character means (other than ignore-case, dot-all, multi-line) get no rewrite (None), as do
patterns Python cannot parse: the caller then narrows by required texts only.
"""

from __future__ import annotations

import re
import re._constants as sre
import re._parser as sre_parse
from dataclasses import dataclass

from queries.search.regex import literal_runs, may_match_newline

_KEPT_FLAGS = sre.SRE_FLAG_UNICODE | sre.SRE_FLAG_IGNORECASE | sre.SRE_FLAG_DOTALL | sre.SRE_FLAG_MULTILINE
_CATEGORIES = {sre.CATEGORY_DIGIT: r"\d", sre.CATEGORY_NOT_DIGIT: r"\D", sre.CATEGORY_SPACE: r"\s",
               sre.CATEGORY_NOT_SPACE: r"\S", sre.CATEGORY_WORD: r"\w", sre.CATEGORY_NOT_WORD: r"\W"}
_NO_NEWLINE = {r"\D": r"[^\d\n]", r"\s": r"[^\S\n]", r"\W": r"[^\w\n]"}  # the categories that hold a newline
_HOLDS_CONTROL = (r"\D", r"\S", r"\W")  # and those that hold control characters
_BOUNDARIES = {sre.AT_BOUNDARY: r"\b", sre.AT_NON_BOUNDARY: r"\B"}
_SINGLE = (sre.LITERAL, sre.NOT_LITERAL, sre.ANY, sre.IN)
NEWLINE = ord("\n")
NOTHING = r"[^\x00-\x{10ffff}]"  # a class no character is in


@dataclass(frozen=True)
class LinePatterns:
    within: str  # RE2: matches a line (or many, one after another) where the pattern matches within one line
    starts: str  # RE2, multi-line: matches the lines a match crossing a newline can start in
    start_literal: str  # a text every line `starts` matches holds, case as written ("": none, or case ignored)


class _Unsupported(Exception):
    pass


def line_patterns(pattern: str) -> LinePatterns | None:
    """The rewrite of a sound `pattern` (None where it is not understood; see the module's docstring)."""
    if "[:" in pattern or re.search(r"\{,", pattern):
        return None
    try:
        parsed = sre_parse.parse(pattern)
        if parsed.state.flags & ~_KEPT_FLAGS:
            return None
        case = "(?i)" if parsed.state.flags & sre.SRE_FLAG_IGNORECASE else ""
        items = _spliced(list(parsed))
        within = "".join(_emit(item) for item in items)
        dotall = bool(parsed.state.flags & sre.SRE_FLAG_DOTALL)
        crossing = [i for i, item in enumerate(items) if may_match_newline([item], dotall)]
        starts = "|".join(_start_in(items, i) for i in crossing) or NOTHING
    except (_Unsupported, re.error, RecursionError, OverflowError, ValueError):
        return None
    runs = literal_runs(items[: crossing[0]]) if crossing and not case else []
    return LinePatterns(case + within, "(?m)" + case + "(?:" + starts + ")", runs[0] if runs else "")


def _spliced(items: list) -> list:
    """The top-level sequence with plain groups (no flags) opened: their parts are parts of the sequence."""
    out = []
    for op, value in items:
        if op is sre.SUBPATTERN and not value[1] and not value[2]:
            out += _spliced(list(value[3]))
        else:
            out.append((op, value))
    return out


def _start_in(items: list, i: int) -> str:
    """The lines a match whose first newline falls in part `i` starts in: the parts before it, then what of
    part `i` can precede the newline, at the line's end."""
    op, value = items[i]
    before = "".join(_emit(item) for item in items[:i])
    if op in _SINGLE:
        return before + "$"
    if op in (sre.MAX_REPEAT, sre.MIN_REPEAT) and len(value[2]) == 1 and value[2][0][0] in _SINGLE:
        return before + "(?:" + _emit(value[2][0]) + ")*$"
    return before + r"[^\n]*$"


def _emit(item, ex: tuple[int, ...] = ()) -> str:
    """One parsed part in RE2 syntax, without the newline (nor the characters `ex`)."""
    op, value = item
    if op is sre.LITERAL:
        return _char(value) if value != NEWLINE and value not in ex else NOTHING
    if op is sre.NOT_LITERAL:
        return f"[^{_char(value)}\\n{_chars(ex)}]"
    if op is sre.ANY:
        return f"[^\\n{_chars(ex)}]"
    if op is sre.IN:
        return _class(value, ex)
    if op is sre.AT and value in _BOUNDARIES:
        return _BOUNDARIES[value]
    if op in (sre.MAX_REPEAT, sre.MIN_REPEAT):
        low, high, inner = value
        return "(?:" + "".join(_emit(i, ex) for i in inner) + ")" + repeat_count(low, high)
    if op is sre.SUBPATTERN:
        _group, add_flags, del_flags, inner = value
        if (add_flags | del_flags) & ~_KEPT_FLAGS:
            raise _Unsupported
        case = "i" if add_flags & sre.SRE_FLAG_IGNORECASE else "-i" if del_flags & sre.SRE_FLAG_IGNORECASE else ""
        return f"(?{case}:" + "".join(_emit(i, ex) for i in inner) + ")"
    if op is sre.BRANCH:
        return "(?:" + "|".join("".join(_emit(i, ex) for i in b) for b in value[1]) + ")"
    raise _Unsupported  # anchors, back references, look-arounds: not in a sound pattern RE2 runs


def emit(item, ex: tuple[int, ...] = ()) -> str | None:
    """`_emit`, or None where the part is not understood."""
    try:
        return _emit(item, ex)
    except (_Unsupported, RecursionError, ValueError):
        return None


def repeat_count(low: int, high: int) -> str:
    return f"{{{low},}}" if high is sre.MAXREPEAT else f"{{{low},{high}}}"


def _class(items: list, ex: tuple[int, ...] = ()) -> str:
    """A character class; without the newline (nor `ex`), as an alternation of classes (a negated class adds
    `\\n` and `ex` to what it excludes; a category that holds the newline, or one of `ex`, becomes its own
    class without them)."""
    negated = bool(items) and items[0][0] is sre.NEGATE
    out = (NEWLINE, *ex)
    parts, alone = [], []
    for op, value in items[negated:]:
        if op is sre.LITERAL:
            if value not in out or negated:
                parts.append(_char(value))
        elif op is sre.RANGE:
            low, high = value
            if negated:
                parts.append(f"{_char(low)}-{_char(high)}")
                continue
            for cut in sorted(c for c in out if low <= c <= high):
                if low < cut:
                    parts.append(f"{_char(low)}-{_char(cut - 1)}")
                low = cut + 1
            if low <= high:
                parts.append(f"{_char(low)}-{_char(high)}")
        elif op is sre.CATEGORY and value in _CATEGORIES:
            name = _CATEGORIES[value]
            if negated or name not in _NO_NEWLINE and not (ex and name in _HOLDS_CONTROL):
                parts.append(name)
            else:
                alone.append(_NO_NEWLINE.get(name, f"[^{name.swapcase()}\\n]")[:-1] + _chars(ex) + "]")
        else:
            raise _Unsupported
    if negated:
        return "[^" + "".join(parts) + "\\n" + _chars(ex) + "]"
    classes = (["[" + "".join(parts) + "]"] if parts else []) + alone
    return "(?:" + "|".join(classes or [NOTHING]) + ")"


def _chars(codes: tuple[int, ...]) -> str:
    return "".join(_char(c) for c in codes)


def _char(code: int) -> str:
    return f"\\x{{{code:x}}}"
