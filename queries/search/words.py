"""Which of a trigram part's cut words a literal could lie across (issue 48): the rows the engine must read.

A trigram part's pieces (`queries/ingest/index_pieces.py`) are its lines cut at the words one text of a chunk
holds; a row whose piece holds a literal holds it. A row that holds it in no piece holds it across a cut: the
place overlaps one of the words cut out, which the index keeps, each after the `.` just before it in the text if
any, and after the word before that `.` where the `.` alone lies between them (`self.x_17`, `).x_17`, `x_17`).
Cut a literal without a newline into runs `r0 r1 … rk`, each of word bytes (`[0-9A-Za-z_]` or not ASCII, as the
pieces cut) or of others. A place overlapping a word `W` either lies within it (the literal is one run of word
bytes: `W` holds it), or covers a word run `ri` of the literal that is all of `W` where it is within the literal
(`0 < i < k`), ends it (`i = 0`: `W` ends with `r0`) or starts it (`i = k`: `W` starts with `rk`). Where `i > 0`,
what lies before `W` ends with `r(i-1)` (is all of it where `i > 1`), so how `W` was kept is known: alone, after
its `.`, or after `r(i-2)` (ending the word where `i = 2`) and a `.`. So one pattern per word run of the literal,
matched as one regex over the cut words (`overlapping`), finds every one a place could overlap; a kept word that
holds the literal is text of its row (`containing`): a hit, read nowhere. Patterns are RE2's over the words'
lines, so they fold case as a search ignoring case does.
"""

from __future__ import annotations

import re

from queries.search.lines import LineQuery, literal_query, literal_regex

_RUNS = re.compile(r"[0-9A-Za-z_\u0080-\U0010ffff]+|[^0-9A-Za-z_\u0080-\U0010ffff]+")
WORD = r"[0-9A-Za-z_\x{80}-\x{10FFFF}]"


def _is_word(run: str) -> bool:
    return not run[0].isascii() or run[0].isalnum() or run[0] == "_"


def word_queries(literal: str, ignore_case: bool) -> tuple[LineQuery, LineQuery | None]:
    """(the cut words that hold `literal`: their rows hold it; the cut words a place of it could overlap, one
    pattern per word run of it, or None where it could overlap none). `literal` has no newline. The second is
    matched as one regex over every line (a pass of RE2's, ~25 ms a part's words): finding a literal as short as
    one of its runs (`1`, `8`) at every place it occurs cost 4x that."""
    containing = literal_query(literal, ignore_case)
    runs = _RUNS.findall(literal)
    if len(runs) == 1:  # one run: of word bytes, within a word (which holds it); of others, in no word
        return containing, None
    patterns = []
    for i, run in enumerate(runs):
        if not _is_word(run):
            continue
        if i == 0:  # W ends with r0, kept alone, after a `.` or after a word and a `.`
            patterns.append(rf"^(?:{WORD}*\.)?{WORD}*{literal_regex(run)}$")
            continue
        gap = runs[i - 1]  # what lies before W ends with it (is all of it where i > 1)
        if not gap.endswith("."):
            kept = ""
        elif gap != ".":  # not a `.` alone: W is kept after its `.`
            kept = r"\."
        elif i == 1:  # the literal starts with the `.`: W after it, or after a word and it
            kept = rf"{WORD}*\."
        else:  # a `.` alone after the word r(i-2) (which ends the word before it where i = 2)
            kept = (WORD + "*" if i == 2 else "") + literal_regex(runs[i - 2]) + r"\."
        patterns.append(f"^{kept}{literal_regex(run)}" + ("$" if i < len(runs) - 1 else f"{WORD}*$"))
    return containing, LineQuery(("(?i)" if ignore_case else "") + "(?m)" + "|".join(f"(?:{p})" for p in patterns))
