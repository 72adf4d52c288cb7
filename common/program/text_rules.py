"""The text rules of ingest's first stage, written once for both engines: DuckDB (RE2) and Python (`re`).

Every pattern is valid RE2 and, compiled by `python_regex` (ASCII classes, `\\z` spelled `\\Z`), means the same to
Python's `re`. `queries/sql/ingest_fields.sql` binds them by name; `common/program/parse.py` uses them for its text
fallback and its candidate key, so a row's index fields and its detail page agree.

- **Where the candidate starts** (`text_cut`): at the first line, after the first top-level `class Model` line,
  that imports triton (`import triton...`/`from triton...`, maybe indented), defines a top-level `class Model`
  (a second one) or `class ModelNew`, or starts with a Triton kernel decorator; without such a line after
  `Model`, at the first such line (other than `class Model`) anywhere; without any, the whole text is the
  reference. Import and blank lines just above the cut go to the candidate too: `parse.reference_fields` trims
  them, once per distinct text before the cut.
- **Kernels** (`PATTERNS["kernel"]`): a decorator `@jit`/`@autotune`/`@heuristics` (bare or `@<name>.`, not
  `@torch.jit.script`), its arguments possibly spanning lines, more decorators or comment lines, then
  `def <name>`; no blank line in between (Python allows one; nobody writes it). SQL finds the same matches with
  `kernel_match` (no capture group, so RE2 needs no NFA pass) and takes each one's `last_word` as the name.
- **Candidate key** (`candidate_key`): 16 hex of sha256 of the candidate part (from the cut's line on) without
  comments, triple-quoted strings (docstrings) and ASCII whitespace. DuckDB measures the text before the cut
  (`cut_bytes`); ingest's worker processes take the bytes past it, drop comments (`candidate_bytes_key`), then
  triple-quoted strings and whitespace, and hash (`candidate_fingerprint`: cheaper than any SQL form of it).

- **Static checks** (`static_error`, first that applies): no top-level `class ModelNew` (`no_model_new`), no
  `class Model` (`no_reference`), no `def get_inputs`/`get_init_inputs` (`no_get_inputs`); an unguarded
  top-level import (`import m...`/`from m... import` at the start of a line, so not inside `try:` or a function)
  of a module that is neither the standard library nor `RUNNER_MODULES` (`unavailable_import`: the runner's
  environment cannot import it); no kernel (`no_triton_kernel`); `ModelNew.forward` unable to take the positional
  arguments `Model.forward` takes (`forward_arity_mismatch`: `forward_arity` of both signatures, as
  `model_forward` finds them: the first `def forward(...)` in each class body; no finding when either does not
  parse); else `ok_static` (no static finding). Each is a certain failure on the runner, never a guess.

Patterns start with a literal where they can (`@`, `#`, `\\n...`): RE2 then skips ahead with memchr instead of
stepping its automaton through every byte.
"""

from __future__ import annotations

import ast
import hashlib
import math
import re
import sys
from functools import lru_cache

from common.program.syntax_rules import KERNEL_DECORATORS

_TRITON_IMPORT = r"[ \t]*(?:import|from)[ \t]+triton\b"
_MODEL = r"class[ \t]+Model\b"
_MODEL_NEW = r"class[ \t]+ModelNew\b"
# a Triton kernel's decorator (`syntax_rules.KERNEL_DECORATORS`), as text: any name before it, no import read
_KERNEL_AT = r"@(?:\w+\.)?(?:" + "|".join(KERNEL_DECORATORS) + ")"
_STARTS_AFTER_MODEL = rf"(?:{_TRITON_IMPORT}|{_MODEL_NEW}|{_MODEL}|{_KERNEL_AT}\b)"
_STARTS_ANYWHERE = rf"(?:{_TRITON_IMPORT}|{_MODEL_NEW}|{_KERNEL_AT}\b)"
_IMPORTED = r"(?:from|import)[ \t]+([A-Za-z_]\w*)"
# a kernel decorator, its arguments possibly spanning lines, more decorators or comment lines, then `def `
_KERNEL_UP_TO_NAME = (_KERNEL_AT + r"(?:[^\w.\n][^\n]*)?\n(?:[ \t]*[@)\]}#][^\n]*\n|[ \t]+[^ \t\n][^\n]*\n)*?"
                      r"[ \t]*(?:async[ \t]+)?def[ \t]+")
# top-level packages the runner's environment provides besides the standard library (requirements.txt: torch and
# triton, which bring numpy)
RUNNER_MODULES = ("numpy", "torch", "triton")
AVAILABLE_MODULES = sorted(set(sys.stdlib_module_names) | set(RUNNER_MODULES))

PATTERNS = {
    # the text up to and including the first candidate-start token (after Model / anywhere)
    "cut_after_model": r"\A(?s:.*?)(?m:^)" + _MODEL + r"(?s:.*?)\n" + _STARTS_AFTER_MODEL,
    "cut_anywhere": r"\A(?s:.*?)(?m:^)" + _STARTS_ANYWHERE,
    "start_token_at_end": r"(?m:^)" + _STARTS_AFTER_MODEL + r"\z",
    # group 1: the kernel's name. No blank line inside: that keeps RE2's backward scan (for where a match
    # starts) from running through the body of the function above.
    "kernel": _KERNEL_UP_TO_NAME + r"(\w+)",
    # the same matches without the group, which RE2 finds with its DFAs alone (asked for a group, it runs its NFA
    # from where the search starts: 3x the cost); the name is each match's `last_word`
    "kernel_match": _KERNEL_UP_TO_NAME + r"\w+",
    "last_word": r"\w+\z",
    "autotune": r"@(?:\w+\.)?autotune\b",
    # a comment holding no quote (so never the tail of a string that holds a '#')
    "comment": r"#[^\n\"']*(?m:$)",
    "not_blank": r"[^\t\n\x0b\x0c\r\x1c-\x1f\x85\p{Z}]",  # exactly what str.isspace() is not
    # group 1: the top-level package of an import at the start of a line / of the text
    "import_line": r"\n" + _IMPORTED,
    "import_start": r"\A" + _IMPORTED,
    # top-level definitions the static checks need, at the start of a line (`\n...`) or of the text (`\A...`)
    **{f"{name}_{where}": anchor + body for name, body in (
        ("model_new", _MODEL_NEW), ("model", _MODEL), ("get_inputs", r"def[ \t]+get_inputs\b"),
        ("get_init_inputs", r"def[ \t]+get_init_inputs\b"),
    ) for where, anchor in (("line", r"\n"), ("start", r"\A"))},
}

WHITESPACE = b" \t\n\r\x0b\x0c"
DOUBLE_TRIPLE, SINGLE_TRIPLE = b'"' * 3, b"'" * 3


def python_regex(name: str) -> re.Pattern:
    """`PATTERNS[name]` for Python's `re`, with RE2's meaning (ASCII `\\w` and `\\b`, `\\z` spelled `\\Z`)."""
    return re.compile(PATTERNS[name].replace(r"\z", r"\Z"), re.ASCII)


_CUT_AFTER_MODEL = python_regex("cut_after_model")
_CUT_ANYWHERE = python_regex("cut_anywhere")
_TOKEN_AT_END = python_regex("start_token_at_end")
_COMMENT = python_regex("comment")
_COMMENT_BYTES = re.compile(PATTERNS["comment"].encode())
# `forward`'s signature: a top-level class line (by the class's name), the first `def forward(...)` line after it
# (group 1: the text inside the parentheses), and the class body's end: its first line that is neither blank nor
# indented
_CLASS_LINE = {b"Model": re.compile((_MODEL + r"[^\n]*").encode()),
               b"ModelNew": re.compile((_MODEL_NEW + r"[^\n]*").encode())}
_FORWARD_LINE = re.compile(rb"\n[ \t]+def[ \t]+forward[ \t]*\(([^)]*)\)")
_CLASS_BODY_END = re.compile(rb"\n[^ \t\n]")


def text_cut(x: str) -> int:
    """Offset of the line where the candidate starts by the rule above, before trimming import lines."""
    m = _CUT_AFTER_MODEL.match(x) or _CUT_ANYWHERE.match(x)
    if m is None:
        return len(x)
    return _TOKEN_AT_END.search(m.group(0)).start()


def candidate_key(candidate: str) -> str:
    """The key of a candidate part (ingest computes the same from its bytes: `candidate_bytes_key`)."""
    return candidate_fingerprint(_COMMENT.sub("", candidate).encode("utf-8", "surrogatepass"))


def candidate_fingerprint(without_comments: bytes) -> str:
    """16 hex of sha256 of UTF-8 text already without comments, without triple-quoted strings and whitespace."""
    text = _without_quoted(without_comments, DOUBLE_TRIPLE)
    squeezed = text.translate(None, WHITESPACE)
    if SINGLE_TRIPLE in squeezed:  # else none in `text` either: taking whitespace out never breaks one apart
        squeezed = _without_quoted(text, SINGLE_TRIPLE).translate(None, WHITESPACE)
    return hashlib.sha256(squeezed).hexdigest()[:16]


def _without_quoted(text: bytes, quotes: bytes) -> bytes:
    """`text` without its `quotes`-quoted strings: every other part between `quotes`, an unclosed one to the end."""
    parts = text.split(quotes)
    return b"".join(parts[::2]) if len(parts) > 1 else text


def candidate_bytes_key(candidate: bytes) -> tuple[str, bytes]:
    """`candidate_key` of a candidate part given as UTF-8 bytes (what ingest reads), and that part without its
    comments (for `model_new_forward`)."""
    without_comments = _COMMENT_BYTES.sub(b"", candidate)
    return candidate_fingerprint(without_comments), without_comments


def program_candidate_key(x: str) -> str:
    """The candidate key of a whole program, as ingest computes it."""
    return candidate_key(x[text_cut(x) :])


@lru_cache(maxsize=65536)
def forward_arity(parameters: str) -> tuple[int, float] | None:
    """(fewest, most) positional arguments besides `self` that `def forward(<parameters>)` accepts; None when the
    text does not parse as parameters, has no `self`, or has a keyword-only parameter without default.
    Plain parameter lists (names, annotations and defaults without brackets or quotes) are counted directly;
    others go through Python's parser (~0.1 ms)."""
    simple = _simple_arity(parameters)
    if simple is not _NOT_SIMPLE:
        return simple
    try:
        args = ast.parse(f"def forward({parameters}):\n    pass\n").body[0].args
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return None
    positional = args.posonlyargs + args.args
    if not positional or None in args.kw_defaults:
        return None
    n = len(positional) - 1
    return n - min(len(args.defaults), n), math.inf if args.vararg else n


_NOT_SIMPLE = object()
_SIMPLE_PARAMETER = re.compile(r"\s*(\*{0,2})\s*([A-Za-z_]\w*)?\s*(?::[^=]*)?(?:(=)[^=]*)?\Z", re.ASCII)


def _simple_arity(parameters: str):
    """`forward_arity` of a parameter list without brackets, quotes or `/`, else `_NOT_SIMPLE`."""
    if any(ch in parameters for ch in "()[]{}'\"/#\\") or "lambda" in parameters:
        return _NOT_SIMPLE
    items = parameters.split(",")
    if items and not items[-1].strip():
        items.pop()  # a trailing comma
    positional, defaults, vararg, keyword_only = 0, 0, False, False
    if items and items[-1].strip() == "*":
        return _NOT_SIMPLE  # a bare `*` must be followed by a parameter
    for item in items:
        m = _SIMPLE_PARAMETER.match(item)
        if m is None or (m.group(2) is None and m.group(1) != "*") or (m.group(3) and m.group(1)):
            return _NOT_SIMPLE
        stars, has_default = m.group(1), bool(m.group(3))
        if stars == "**":
            continue
        if stars == "*":
            vararg = vararg or m.group(2) is not None
            keyword_only = True
        elif keyword_only:
            if not has_default:
                return None
        elif defaults and not has_default:
            return _NOT_SIMPLE  # a non-default after a default: a syntax error, let the parser say so
        else:
            positional += 1
            defaults += has_default
    if positional == 0:
        return None
    n = positional - 1
    return n - min(defaults, n), math.inf if vararg else n


def model_forward(reference: str) -> str | None:
    """The parameters of `Model.forward` in a reference text (the first `def forward(` in the body of the first
    top-level `class Model` that has one), None when not found."""
    found = _forward_parameters(reference.encode("utf-8", "surrogatepass"), b"Model")
    return found.decode("utf-8", "surrogatepass") if found is not None else None


def model_new_forward(candidate_without_comments: bytes) -> str | None:
    """The parameters of `ModelNew.forward` in a candidate part, as `model_forward` finds them."""
    found = _forward_parameters(candidate_without_comments, b"ModelNew")
    return found.decode("utf-8", "replace") if found is not None else None


def _forward_parameters(text: bytes, name: bytes) -> bytes | None:
    """Group 1 of the first `_FORWARD_LINE` in the body of a top-level `class <name>` line. Class lines are found
    from the occurrences of `name` and lines with `bytes.find`/`rfind`, which skip ahead faster than a pattern steps
    through them."""
    class_line = _CLASS_LINE[name]
    at = text.find(name)
    while at >= 0:
        found = class_line.match(text, text.rfind(b"\n", 0, at) + 1)
        if found is None:
            at = text.find(name, at + 1)
            continue
        forward = _first_forward_line(text, found.end())
        if forward is None:
            return None  # nor after a later class
        if _CLASS_BODY_END.search(text, found.end(), forward.start() + 1) is None:
            return forward.group(1)
        at = text.find(name, found.end())
    return None


def _first_forward_line(text: bytes, start: int) -> re.Match | None:
    """`_FORWARD_LINE.search(text, start)`, trying only the lines that hold `forward`."""
    at = text.find(b"forward", start)
    while at >= 0:
        line = text.rfind(b"\n", start, at)
        if line >= 0 and (found := _FORWARD_LINE.match(text, line)):
            return found
        at = text.find(b"forward", at + 1)
    return None


def arity_range(parameters: str | None) -> tuple[int | None, int | None]:
    """`forward_arity` as (fewest, most) with None for unknown and -1 for "no upper bound" (*args), for columns."""
    arity = forward_arity(parameters) if parameters is not None else None
    if arity is None:
        return None, None
    return arity[0], -1 if arity[1] == math.inf else int(arity[1])
