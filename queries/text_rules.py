"""The text rules of ingest's first stage, written once for both engines: DuckDB (RE2) and Python (`re`).

Every pattern is valid RE2 and, compiled by `python_regex` (ASCII classes, `\\z` spelled `\\Z`), means the same to
Python's `re`. `queries/sql/ingest_fields.sql` binds them by name; `queries/parse.py` uses them for its text
fallback and its candidate key, so a row's index fields and its detail page agree.

- **Where the candidate starts** (`text_cut`): at the first line, after the first top-level `class Model` line,
  that imports triton (`import triton...`/`from triton...`, maybe indented), defines a top-level `class Model`
  (a second one) or `class ModelNew`, or starts with a Triton kernel decorator; without such a line after
  `Model`, at the first such line (other than `class Model`) anywhere; without any, the whole text is the
  reference. Import and blank lines just above the cut go to the candidate too: `parse.reference_fields` trims
  them, once per distinct text before the cut.
- **Kernels** (`PATTERNS["kernel"]`): a decorator `@jit`/`@autotune`/`@heuristics` (bare or `@<name>.`, not
  `@torch.jit.script`), its arguments possibly spanning lines, more decorators or comment lines, then
  `def <name>`; no blank line in between (Python allows one; nobody writes it).
- **Candidate key** (`candidate_key`): 16 hex of sha256 of the candidate part (from the cut's line on) without
  comments, triple-quoted strings (docstrings) and ASCII whitespace. DuckDB drops the comments from the whole
  text (`string_split_regex`: cutting the candidate out first costs more in SQL than splitting the reference
  too) and measures the same for the text before the cut; Python skips that many bytes, drops triple-quoted
  strings and whitespace, and hashes (`candidate_fingerprint`: cheaper than any SQL form of it).

Patterns start with a literal where they can (`@`, `#`, `\\n...`): RE2 then skips ahead with memchr instead of
stepping its automaton through every byte.
"""

from __future__ import annotations

import hashlib
import re

_TRITON_IMPORT = r"[ \t]*(?:import|from)[ \t]+triton\b"
_MODEL = r"class[ \t]+Model\b"
_MODEL_NEW = r"class[ \t]+ModelNew\b"
_KERNEL_AT = r"@(?:\w+\.)?(?:jit|autotune|heuristics)"
_STARTS_AFTER_MODEL = rf"(?:{_TRITON_IMPORT}|{_MODEL_NEW}|{_MODEL}|{_KERNEL_AT}\b)"
_STARTS_ANYWHERE = rf"(?:{_TRITON_IMPORT}|{_MODEL_NEW}|{_KERNEL_AT}\b)"

PATTERNS = {
    # the text up to and including the first candidate-start token (after Model / anywhere)
    "cut_after_model": r"\A(?s:.*?)(?m:^)" + _MODEL + r"(?s:.*?)\n" + _STARTS_AFTER_MODEL,
    "cut_anywhere": r"\A(?s:.*?)(?m:^)" + _STARTS_ANYWHERE,
    "start_token_at_end": r"(?m:^)" + _STARTS_AFTER_MODEL + r"\z",
    # group 1: the kernel's name. No blank line inside: that keeps RE2's backward scan (for where a match
    # starts) from running through the body of the function above.
    "kernel": _KERNEL_AT + r"(?:[^\w.\n][^\n]*)?\n(?:[ \t]*[@)\]}#][^\n]*\n|[ \t]+[^ \t\n][^\n]*\n)*?"
    r"[ \t]*(?:async[ \t]+)?def[ \t]+(\w+)",
    "autotune": r"@(?:\w+\.)?autotune\b",
    # a comment holding no quote (so never the tail of a string that holds a '#')
    "comment": r"#[^\n\"']*(?m:$)",
    "not_blank": r"[^\t\n\x0b\x0c\r\x1c-\x1f\x85\p{Z}]",  # exactly what str.isspace() is not
    # top-level definitions the static checks need, at the start of a line (`\n...`) or of the text (`\A...`)
    **{f"{name}_{where}": anchor + body for name, body in (
        ("model_new", _MODEL_NEW), ("model", _MODEL), ("get_inputs", r"def[ \t]+get_inputs\b"),
        ("get_init_inputs", r"def[ \t]+get_init_inputs\b"),
    ) for where, anchor in (("line", r"\n"), ("start", r"\A"))},
}

WHITESPACE = b" \t\n\r\x0b\x0c"
TRIPLE_QUOTES = (b'"' * 3, b"'" * 3)


def python_regex(name: str) -> re.Pattern:
    """`PATTERNS[name]` for Python's `re`, with RE2's meaning (ASCII `\\w` and `\\b`, `\\z` spelled `\\Z`)."""
    return re.compile(PATTERNS[name].replace(r"\z", r"\Z"), re.ASCII)


_CUT_AFTER_MODEL = python_regex("cut_after_model")
_CUT_ANYWHERE = python_regex("cut_anywhere")
_TOKEN_AT_END = python_regex("start_token_at_end")
_COMMENT = python_regex("comment")


def text_cut(x: str) -> int:
    """Offset of the line where the candidate starts by the rule above, before trimming import lines."""
    m = _CUT_AFTER_MODEL.match(x) or _CUT_ANYWHERE.match(x)
    if m is None:
        return len(x)
    return _TOKEN_AT_END.search(m.group(0)).start()


def candidate_key(candidate: str) -> str:
    """The key of a candidate part (at ingest: comments dropped in SQL, the rest by `candidate_fingerprint`)."""
    return candidate_fingerprint(_COMMENT.sub("", candidate).encode("utf-8", "surrogatepass"))


def candidate_fingerprint(without_comments: bytes, may_hold_quotes: bool = True) -> str:
    """16 hex of sha256 of UTF-8 text already without comments, without triple-quoted strings and whitespace
    (`may_hold_quotes=False`: the caller knows the text holds no triple quotes, which saves two scans)."""
    text = without_comments
    for quotes in TRIPLE_QUOTES if may_hold_quotes else ():
        if quotes in text:
            text = b"".join(text.split(quotes)[::2])
    return hashlib.sha256(text.translate(None, WHITESPACE)).hexdigest()[:16]


def program_candidate_key(x: str) -> str:
    """The candidate key of a whole program, as ingest computes it."""
    return candidate_key(x[text_cut(x) :])
