"""A regex over a trigram part's skeleton lines (issue 48): its lines with each cut word as a marker
(`queries/ingest/index_pieces.py`: \\x01 a word of ASCII bytes, \\x02 one with others), the hole where a word one
text of its chunk holds was.

For a sound pattern (no anchor but `\\b`, `\\B`: `regex.line_rule`), from Python's parse of its top-level sequence
(plain groups opened), three RE2 patterns over skeleton lines, each part emitted without the newline (as
`rewrite.line_patterns` does) and without the markers, but where said:
- `exact`: a line it matches is a line of its row that the pattern matches within. A marker stands for a word of
  one character or more: an unbounded repeat of a character class that holds every character such a word can be
  made of (`[^\\n]`, `\\S`, `\\w+` for an ASCII word...) takes it anywhere (its repeat takes all of the word), a
  first or last part of one character takes it at the match's start or end (the match starts at the word's last
  character, or ends at its first). None where the pattern has `\\b` or `\\B` (a marker is no word character).
- `possible`: every line of a row that the pattern matches within is one it matches (a superset). A run of parts
  that match only word characters matches one run of word characters of the text, so it is either as written or
  within one cut word: the run or a marker (or nothing, where only parts that may be empty lie between it and the
  run before: both may lie in one word). It lies within one only in a row with a cut word that holds a match of
  it (`Possible.runs`, over the cut words: at the word's end where what follows the run cannot be in a word, at
  its start where what precedes it cannot), so `Possible.lines(holes)` is the pattern where only the runs
  `holes` may be markers: a row is matched with the set of runs its cut words hold. A part of one character that
  matches word and other characters may also be a marker or nothing (it lay within a word), a repeat of one takes
  markers too, anything else is `[^\\n]*`; `\\b`, `\\B` are dropped.
- `starts`: every line of a row where a match across lines can start is one it matches: for each part that can
  match a newline, the parts before it (as `possible` has them), what of that part can precede the newline, at
  the line's end (`rewrite.line_patterns`' `starts`, with markers).
A row without skeleton lines (its text holds a marker byte) is read by the caller whatever these say.
"""

from __future__ import annotations

import functools
import re
import re._constants as sre
import re._parser as sre_parse
from dataclasses import dataclass

import pyarrow as pa
import pyarrow.compute as pc

from queries.search.regex import line_rule, may_match_newline
from queries.search.rewrite import _KEPT_FLAGS, _spliced, _Unsupported, emit, repeat_count
from queries.store import SKELETON_MARKERS as MARKERS

ASCII_HOLE, WIDE_HOLE = r"\x{1}", r"\x{2}"
HOLE = r"[\x{1}\x{2}]"
_ASCII_WORD = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz_"
_SINGLE = (sre.LITERAL, sre.NOT_LITERAL, sre.ANY, sre.IN)
_REPEATS = (sre.MAX_REPEAT, sre.MIN_REPEAT)
MAX_RUNS = 16  # runs of word parts a pattern may have for `possible` (the sets of them a row's cut words hold)


@dataclass(frozen=True)
class Possible:
    """What a row's skeleton lines must match for the row to match: `lines(holes)`, where the runs of word parts
    `holes` (positions in `runs`) may be markers, each run that a cut word of the row holds (`runs`)."""

    pattern: str
    ignore_case: bool
    starts: bool  # the lines a match across lines can start in, not the lines a match lies within
    runs: tuple[str, ...]  # RE2s over the cut words (`words.arrow`), one per run of word parts of the pattern

    def lines(self, holes: frozenset[int]) -> tuple[str, str]:
        """(RE2 over skeleton lines, case-sensitive text every line it matches holds, or "")."""
        return _lines(self.pattern, self.ignore_case, self.starts, holes)


@dataclass(frozen=True)
class HolePatterns:
    exact: str  # "" where there is none
    possible: Possible | None
    starts: Possible | None


NO_HOLES = HolePatterns("", None, None)


def hole_patterns(pattern: str, ignore_case: bool) -> HolePatterns:
    """The skeleton lines' patterns of a sound `pattern` (see the module's docstring); NO_HOLES where it is not
    sound or not understood."""
    parsed = _parsed(pattern)
    if parsed is None:
        return NO_HOLES
    case = _case(parsed, ignore_case)
    items = _spliced(list(parsed))
    exact, runs = _exact(items), _runs(items)
    if runs is None or len(runs) > MAX_RUNS:
        return HolePatterns(case + exact if exact is not None else "", None, None)
    every = frozenset(range(len(runs)))
    possible, starts = (Possible(pattern, ignore_case, across, tuple("(?m)" + case + run for run in runs))
                        for across in (False, True))
    try:
        if possible.lines(every)[0] is None:
            possible = None
        if starts.lines(every)[0] is None:
            starts = None
    except (_Unsupported, RecursionError, ValueError):
        possible = starts = None
    return HolePatterns(case + exact if exact is not None else "", possible, starts)


def _parsed(pattern: str):
    if not line_rule(pattern).sound or "[:" in pattern or re.search(r"\{,", pattern):
        return None
    try:
        parsed = sre_parse.parse(pattern)
    except (re.error, RecursionError, OverflowError, ValueError):
        return None
    return None if parsed.state.flags & ~_KEPT_FLAGS else parsed


def _case(parsed, ignore_case: bool) -> str:
    return "(?i)" if ignore_case or parsed.state.flags & sre.SRE_FLAG_IGNORECASE else ""


@functools.lru_cache(maxsize=256)
def _lines(pattern: str, ignore_case: bool, starts: bool, holes: frozenset[int]) -> tuple[str | None, str]:
    parsed = _parsed(pattern)
    case = _case(parsed, ignore_case)
    items = _spliced(list(parsed))
    if not starts:
        possible = _possible(items, holes)
        return (None if possible is None else case + possible), "" if case else _literal(items, holes)
    dotall = bool(parsed.state.flags & sre.SRE_FLAG_DOTALL)
    alternatives, first = [], None
    for i, item in enumerate(items):
        if may_match_newline([item], dotall):
            before, tail = _possible(items[:i], holes), _tail(item)
            if before is None or tail is None:
                return None, ""
            alternatives.append(before + tail + "$")
            first = i if first is None else first
    if not alternatives:
        return None, ""
    return "(?m)" + case + "(?:" + "|".join(alternatives) + ")", "" if case else _literal(items[:first], holes)


def _literal(items: list, holes: frozenset[int]) -> str:
    """The longest run of characters of the top-level sequence (without newlines) outside the runs `holes`."""
    found, current, run = [], [], -1
    for i, (op, value) in enumerate(items):
        if _word_only(items[i]) and (i == 0 or not _word_only(items[i - 1])):
            run += 1
        if op is sre.LITERAL and value != ord("\n") and not (_word_only(items[i]) and run in holes):
            current.append(chr(value))
        else:
            found.append("".join(current))
            current = []
    return max(found + ["".join(current)], key=len)


def _atom(item):
    """The one-character part `item` repeats, or is; None for anything else."""
    op, value = item
    if op in _SINGLE:
        return item
    if op in _REPEATS and len(value[2]) == 1 and value[2][0][0] in _SINGLE:
        return value[2][0]
    return None


def _kinds(atom) -> tuple[bool, bool]:
    """(whether a one-character part may match a word character, whether it may match another one but the
    newline); conservatively both where unsure."""
    op, value = atom
    if op is sre.LITERAL:
        word = _is_word(value)
        return word, not word and value != ord("\n")
    if op is sre.IN and value and value[0][0] is not sre.NEGATE:
        word = other = False
        for inner, v in value:
            if inner is sre.LITERAL:
                word, other = word or _is_word(v), other or not _is_word(v) and v != ord("\n")
            elif inner is sre.RANGE:
                word = word or any(_is_word(c) for c in range(v[0], min(v[1], 0x80) + 1)) or v[1] >= 0x80
                other = other or any(not _is_word(c) and c != ord("\n") for c in range(v[0], min(v[1], 0x7F) + 1))
            elif inner is sre.CATEGORY and v in (sre.CATEGORY_DIGIT, sre.CATEGORY_WORD):
                word = True
            elif inner is sre.CATEGORY and v == sre.CATEGORY_SPACE:
                other = True
            else:
                return True, True
        return word, other
    return True, True


def _is_word(code: int) -> bool:
    return code >= 0x80 or chr(code).isalnum() or code == ord("_")


def _holes_taken(atom) -> str:
    """The markers a one-character part surely matches a character of (each character, for a repeat): \\x01
    where it matches every ASCII word character, \\x02 too where it matches every character but ASCII ones
    that are no word's (told from its parse: `.`, `\\S`, `[^…]` of such characters)."""
    text = emit(atom, MARKERS)
    if text is None or not _matches_all(text):
        return ""
    return ASCII_HOLE + (WIDE_HOLE if _takes_wide(atom) else "")


def _takes_wide(atom) -> bool:
    op, value = atom
    if op is sre.ANY:
        return True
    if op is sre.NOT_LITERAL:
        return not _is_word(value)
    if op is not sre.IN or not value:
        return False
    if value[0][0] is not sre.NEGATE:
        return any(inner is sre.CATEGORY and v == sre.CATEGORY_NOT_SPACE for inner, v in value)
    return all(inner is sre.LITERAL and not _is_word(v) or inner is sre.CATEGORY and v == sre.CATEGORY_SPACE
               or inner is sre.RANGE and v[1] < 0x80 and not any(_is_word(c) for c in range(v[0], v[1] + 1))
               for inner, v in value[1:])


def _matches_all(atom_text: str) -> bool:
    """Whether RE2 (case as written) matches each ASCII word character with the part."""
    try:
        return bool(pc.match_substring_regex(pa.array([_ASCII_WORD]), f"^(?:{atom_text})+$")[0].as_py())
    except pa.ArrowInvalid:
        return False


def _exact(items: list) -> str | None:
    out = []
    for i, item in enumerate(items):
        op, value = item
        if op is sre.AT:
            return None
        text = emit(item, MARKERS)
        atom = _atom(item)
        if text is None:
            return None
        unbounded = op in _REPEATS and value[1] is sre.MAXREPEAT
        holes = _holes_taken(atom) if atom is not None and (i in (0, len(items) - 1) or unbounded) else ""
        if not holes:
            out.append(text)
            continue
        one = f"[{holes}]"
        if unbounded:  # takes a whole word anywhere
            out.append(f"(?:{emit(atom, MARKERS)}|{one}){repeat_count(value[0], value[1])}")
        elif op in _REPEATS:  # at an edge, the character next to the match's rest is the marker
            low, high = value[0], value[1]
            less = repeat_count(max(low - 1, 0), high - 1)
            short = f"(?:{emit(atom, MARKERS)}){less}"
            out.append(f"(?:{text}|{one + short if i == 0 else short + one})" if high >= 1 else text)
        else:
            out.append(f"(?:{text}|{one})")
    return "".join(out)


def _runs(items: list) -> list[str] | None:
    """The runs of parts that match only word characters (None: one is not written), each at the end of a cut
    word where what follows it cannot be in a word (`$`), at its start (after its `.`, or alone) where what
    precedes it cannot."""
    runs, i = [], 0
    while i < len(items):
        j = i
        while j < len(items) and _word_only(items[j]):
            j += 1
        if j > i:
            texts = [emit(item, MARKERS) for item in items[i:j]]
            if None in texts:
                return None
            start = r"(?:^|\.)" if _bounded(items[:i][::-1]) else ""
            runs.append(start + "".join(texts) + ("$" if _bounded(items[j:]) else ""))
        i = max(j, i + 1)
    return runs


def _bounded(items: list) -> bool:
    """Whether the parts next to a run (nearest first) begin with one that matches a character and never a word's,
    after parts that may be empty and match no word character."""
    for item in items:
        atom = _atom(item)
        if atom is None or _kinds(atom)[0]:
            return False
        if item[0] not in _REPEATS or item[1][0] > 0:
            return True
    return False


def _word_only(item) -> bool:
    atom = _atom(item)
    return atom is not None and _kinds(atom) == (True, False)


def _possible(items: list, holes: frozenset[int]) -> str | None:
    """`possible` (see the module's docstring), where only the runs `holes` may be markers."""
    out = []
    runs, emptiable = 0, True  # runs of word parts so far; whether all parts since the last one may be empty
    i = 0
    while i < len(items):
        op, value = items[i]
        atom = _atom(items[i])
        kinds = _kinds(atom) if atom is not None else (True, True)
        if atom is not None and kinds == (True, False):  # a run of parts that match only word characters
            j = i
            while j < len(items) and _word_only(items[j]):
                j += 1
            texts = [emit(item, MARKERS) for item in items[i:j]]
            if None in texts:
                return None
            run = "".join(texts)  # as written where no cut word of the row holds it
            merged = runs - 1 in holes and emptiable  # within the cut word the run before is in
            out.append(f"(?:{run}|{HOLE}" + ("|)" if merged else ")") if runs in holes else run)
            runs, emptiable, i = runs + 1, True, j
            continue
        if op is sre.AT:
            text, empty = "", True
        elif atom is None:
            text, empty = r"[^\n]*", True
        elif op in _REPEATS and kinds[0]:
            inner = emit(atom, MARKERS)
            text, empty = (None if inner is None else f"(?:{inner}|{HOLE})*"), True
        elif kinds[0]:  # one character, a word's or another's
            inner = emit(atom, MARKERS)
            text, empty = (None if inner is None else f"(?:{inner}|{HOLE}|)"), True
        else:  # never a word character
            text, empty = emit(items[i], MARKERS), op in _REPEATS and value[0] == 0
        if text is None:
            return None
        out.append(text)
        emptiable = emptiable and empty
        i += 1
    return "".join(out)


def _tail(item) -> str | None:
    """What of a part that can match a newline can precede it in the line a match starts in."""
    op, value = item
    if op in _SINGLE:
        return ""
    atom = _atom(item)
    if atom is not None:
        inner = emit(atom, MARKERS)
        return None if inner is None else f"(?:{inner}|{HOLE})*" if _kinds(atom)[0] else f"(?:{inner})*"
    return r"[^\n]*"
