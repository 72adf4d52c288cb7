"""Which of a trigram part's cut words a literal could lie across (issue 48): the rows the engine must read.

A trigram part's pieces (`queries/ingest/index_pieces.py`) are its lines cut at the words one text of a chunk
holds; a row whose piece holds a literal holds it. A row that holds it in no piece holds it across a cut: the
place overlaps one of the words cut out, which the index keeps in their context (`P W N`: the word `W` with the
run of other bytes before it, `P`, and after it, `N`, within its line, each possibly empty). Cut a literal
without a newline into runs `r0 r1 … rk`, each of word bytes (`[0-9A-Za-z_]` or not ASCII, as the pieces cut)
or of others. A place overlapping a word `W` either lies within it (the literal is one run of word bytes: `W`
holds it, and so does its context), or covers a word run `ri` of the literal that is all of `W` where it is
within the literal (`0 < i < k`), ends it (`i = 0`: `W` ends with `r0`) or starts it (`i = k`: `W` starts with
`rk`). Around `W`, the literal's neighbouring runs are all of `P` (or `N`) where the literal goes on beyond them,
else its end (`P` ends with `r0`, `N` starts with `rk`). So per word run of the literal, one pattern over the
contexts (`overlapping`) finds every cut word a place could overlap, and a context that holds the literal
(`containing`) is text of its row: a hit, read nowhere. Patterns are RE2's over the contexts' lines, so they
fold case as a search ignoring case does.
"""

from __future__ import annotations

import re

from queries.search.lines import LineQuery, literal_query, literal_regex

_RUNS = re.compile(r"[0-9A-Za-z_\u0080-\U0010ffff]+|[^0-9A-Za-z_\u0080-\U0010ffff]+")
WORD = r"[0-9A-Za-z_\x{80}-\x{10FFFF}]"
OTHER = r"[^0-9A-Za-z_\x{80}-\x{10FFFF}\n]"


def _is_word(run: str) -> bool:
    return not run[0].isascii() or run[0].isalnum() or run[0] == "_"


def word_queries(literal: str, ignore_case: bool) -> tuple[LineQuery, list[LineQuery]]:
    """(the contexts that hold `literal`: their rows hold it; per word run of it, the contexts of the cut words
    a place of it could overlap). `literal` has no newline."""
    containing = literal_query(literal, ignore_case)
    runs = _RUNS.findall(literal)
    if len(runs) == 1:  # one run: of word bytes, within a word (its context holds it); of others, in no word
        return containing, []
    k = len(runs) - 1
    overlapping = []
    for i, run in enumerate(runs):
        if not _is_word(run):
            continue
        if i == 0:  # W ends with r0
            before, fixed = rf"^{OTHER}*{WORD}*", ""
        elif i == 1:  # P ends with r0 (the literal's first run)
            before, fixed = rf"^{OTHER}*{literal_regex(runs[0])}", runs[0]
        else:  # P is r(i-1)
            before, fixed = f"^{literal_regex(runs[i - 1])}", runs[i - 1]
        fixed += run
        if i == k:  # W starts with rk
            after = rf"{WORD}*{OTHER}*$"
        elif i == k - 1:  # N starts with rk
            after, fixed = rf"{literal_regex(runs[k])}{OTHER}*$", fixed + runs[k]
        else:  # N is r(i+1)
            after, fixed = f"{literal_regex(runs[i + 1])}$", fixed + runs[i + 1]
        overlapping.append(_query(f"(?m){before}{literal_regex(run)}{after}", fixed, ignore_case))
    return containing, overlapping


def _query(regex: str, literal: str, ignore_case: bool) -> LineQuery:
    """Lines (contexts) `regex` matches, each holding `literal` (in any case where `ignore_case`)."""
    if ignore_case:
        return LineQuery("(?i)" + regex, any_case=literal)
    return LineQuery(regex, literal)
