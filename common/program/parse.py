"""Split one dataset program into its reference and Triton candidate, without executing it.

`parse_program(x)` parses the program with `ast` and walks its top-level statements: the candidate starts at
the first statement that belongs to it (where `common/program/syntax_rules.py` starts it: an `import
triton`/`from triton ...` after the reference `Model`, a Triton kernel, `class ModelNew`; or helpers, constants
and imports just above those that only the candidate uses); the reference is everything before. Programs that do not parse fall back to the text rules
ingest uses for every row (`common/program/text_rules.py`: the line where the candidate starts, plus the import lines
just above it; kernels by their decorators).

`problem_key` (16 hex of sha256) hashes the AST dump of the reference without imports and docstrings (memoized
on the reference text: references repeat across the many candidates of a problem), so it ignores formatting and
comments (a reference nested deeper than `MAX_AST_DEPTH` hashes its text, as ingest's fallback does, for bounded
work whatever a row holds); `candidate_key` is ingest's (`text_rules.program_candidate_key`), so the detail page and
the index
agree. Only statements are walked, never expressions (except where a rule needs names), which keeps a parse
close to the cost of `ast.parse`.
"""

from __future__ import annotations

import ast
import functools
import hashlib
import io
import json
import re
import threading
from dataclasses import dataclass, field
from pathlib import Path

from common.checks import first_static_error
from common.program.shapes import input_shapes
from common.program.syntax_rules import (
    candidate_start,
    is_kernel,
    kernel_kind,
    model_at,
    statements,
    triton_aliases,
)
from common.program.text_rules import candidate_key, program_candidate_key, python_regex, text_cut

_TITLE_MAX = 100
_SUMMARY_MAX = 60
_MAX_OPS = 4
_KERNELBENCH = Path(__file__).resolve().parent / "kernelbench_problems.json"
# "Simple model that performs a ...", "Performs ..." : the words before what the model does
_DOC_PREAMBLE = re.compile(
    r"^(?:(?:a |an |the )?(?:simple |basic |custom )?(?:model|module|network|class)\s+(?:that|which)\s+)?"
    r"(?:performs|computes|implements|applies|does)\s+(?:a |an |the )?(?:single |simple )?", re.IGNORECASE)
_KEY_CACHE_SIZE = 20_000
_problem_keys: dict[str, tuple[str, str]] = {}  # reference text -> (problem_key, title)


@dataclass(frozen=True)
class Kernel:
    name: str
    source: str
    autotuned: bool
    lineno: int  # 1-based line of the first decorator in the whole program


@dataclass(frozen=True)
class ParsedProgram:
    reference: str
    candidate: str
    mode: str  # "ast" | "text"
    kernels: list[Kernel] = field(default_factory=list)
    title: str = ""
    static_error: str = "ok_static"
    problem_key: str = ""
    candidate_key: str = ""


# CPython 3.11 counts the AST constructor's recursion depth in state all threads share: two sessions parsing at
# once can end one parse with "SystemError: AST constructor recursion depth mismatch" (python/cpython#106905; seen
# on the Compare page under 20 sessions, RELIABILITY.md "Load figure"). Parsing holds the GIL anyway.
_AST_LOCK = threading.Lock()
# a reference nested deeper is keyed on its text, not its syntax tree (issue 45: a 1,200-deep attribute chain made
# the Kernel and Compare pages raise RecursionError in `_dump`: ast.dump recurses a frame or two a level)
MAX_AST_DEPTH = 200


def _depth_over(tree: ast.AST, limit: int) -> bool:
    """Whether `tree` nests deeper than `limit` (walked without recursion)."""
    stack = [(tree, 0)]
    while stack:
        node, depth = stack.pop()
        if depth > limit:
            return True
        stack.extend((child, depth + 1) for child in ast.iter_child_nodes(node))
    return False


def _ast_parse(source: str) -> ast.Module:
    with _AST_LOCK:
        return ast.parse(source)


def parse_program(x: str) -> ParsedProgram:
    try:
        tree = _ast_parse(x)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return _parse_text(x)
    return _parse_ast(x, tree)


# ---------------------------------------------------------------- AST mode


def _parse_ast(x: str, tree: ast.Module) -> ParsedProgram:
    lines = io.StringIO(x, newline="").readlines()  # the line breaks ast counts: \n, \r\n, \r
    body = tree.body
    aliases = triton_aliases(statements(tree.body))
    start = _candidate_start(body, aliases)
    cut = _reference_end(lines, _first_line(body[start])) if start < len(body) else len(x)
    reference, candidate = x[:cut], x[cut:]
    ref_body, cand_body = body[:start], body[start:]

    kernels = _kernels(tree, lines, aliases)
    model = _first_class(ref_body, "Model")
    problem_key, title = _reference_key(reference, ref_body, model)
    defined = _top_level_names(body)
    found = {"no_model_new": not any(isinstance(s, ast.ClassDef) and s.name == "ModelNew" for s in cand_body),
             "no_reference": model is None,
             "no_get_inputs": not {"get_inputs", "get_init_inputs"} <= defined,
             "no_triton_kernel": not kernels}
    error = first_static_error({name for name, applies in found.items() if applies})
    return ParsedProgram(
        reference=reference,
        candidate=candidate,
        mode="ast",
        kernels=kernels,
        title=title,
        static_error=error,
        problem_key=problem_key,
        candidate_key=program_candidate_key(x),
    )


def _reference_key(reference: str, ref_body: list[ast.stmt], model: ast.ClassDef | None) -> tuple[str, str]:
    """(problem_key, title) of a reference, memoized on its text."""
    cached = _problem_keys.get(reference)
    if cached is None:
        title = _title(model)
        shapes = input_shapes(ref_body)
        init = input_shapes(ref_body, "get_init_inputs")
        if init and "?" not in init:
            shapes = [*shapes, f"init({', '.join(init)})"]
        kept = [s for s in ref_body if not isinstance(s, ast.Import | ast.ImportFrom) and not _is_bare_string(s)]
        for node in statements(kept):  # drop docstrings (the title is taken above); only on a cache miss
            for name in ("body", "orelse", "finalbody"):
                children = getattr(node, name, None)
                if children and any(_is_bare_string(c) for c in children):
                    setattr(node, name, [c for c in children if not _is_bare_string(c)] or [ast.Pass()])
        # the depth is walked here alone (references are few: memoized), not on every parse
        too_deep = any(_depth_over(s, MAX_AST_DEPTH) for s in kept)
        key = candidate_key(reference) if too_deep else _digest(_dump(kept))
        cached = (key, problem_name(key, title, shapes))
        if len(_problem_keys) >= _KEY_CACHE_SIZE:
            _problem_keys.clear()
        _problem_keys[reference] = cached
    return cached


def _is_bare_string(node: ast.stmt) -> bool:
    return isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant) and isinstance(node.value.value, str)


def _candidate_start(body: list[ast.stmt], aliases: dict[str, str]) -> int:
    """Index of the first top-level statement of the candidate (len(body) when there is none): where
    `syntax_rules.candidate_start` starts it, pulled up over the helpers, constants and imports just above that
    only the candidate uses."""
    model = model_at(body)
    start = candidate_start(body, aliases)
    if start == len(body):
        return start
    cand_loads: set[str] | None = None  # names the candidate uses; computed only if a helper may precede it
    ref_core = {"Model", "get_inputs", "get_init_inputs"}
    while start > 0:
        prev = body[start - 1]
        names = _defined_names(prev)
        if isinstance(prev, ast.Import | ast.ImportFrom):
            if start - 1 <= model:
                break
        else:
            if not names or names & ref_core:
                break
            if cand_loads is None:
                cand_loads = set().union(*(_loaded_names(s) for s in body[start:]))
            if not names & cand_loads:
                break
            ref_loads = set().union(set(), *(_loaded_names(s) for s in body[: start - 1]))
            if names & ref_loads:
                break
        if cand_loads is not None:
            cand_loads |= _loaded_names(prev)
        start -= 1
    return start


def _defined_names(node: ast.stmt) -> set[str]:
    if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
        return {node.name}
    if isinstance(node, ast.Import | ast.ImportFrom):
        return {(a.asname or a.name).split(".")[0] for a in node.names}
    if isinstance(node, ast.Assign | ast.AnnAssign | ast.AugAssign):
        targets = node.targets if isinstance(node, ast.Assign) else [node.target]
        return {n.id for t in targets for n in ast.walk(t) if isinstance(n, ast.Name)}
    return set()


def _loaded_names(node: ast.stmt) -> set[str]:
    return {n.id for n in ast.walk(node) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)}


def _top_level_names(body: list[ast.stmt]) -> set[str]:
    return set().union(set(), *(_defined_names(s) for s in body))


def _first_line(node: ast.stmt) -> int:
    return min([node.lineno, *(d.lineno for d in getattr(node, "decorator_list", ()))])


def _reference_end(lines: list[str], first_line: int) -> int:
    """Character offset where the candidate starts: its first line, pulled up over the comments above it (a
    candidate's header such as `# Speedup: 1.05x`, blank lines between them included); blank lines right after the
    reference's code stay with the reference."""
    index = first_line - 1
    while index > 0 and (lines[index - 1].lstrip().startswith("#") or not lines[index - 1].strip()):
        index -= 1
    while index < first_line - 1 and not lines[index].strip():
        index += 1
    return sum(len(s) for s in lines[:index])


def _kernels(tree: ast.Module, lines: list[str], aliases: dict[str, str]) -> list[Kernel]:
    kernels = []
    for node in statements(tree.body):
        if is_kernel(node, aliases):
            first = _first_line(node)
            kinds = {kernel_kind(d, aliases) for d in node.decorator_list}
            source = "".join(lines[first - 1 : node.end_lineno])
            kernels.append(Kernel(node.name, source, "autotune" in kinds, first))
    return sorted(kernels, key=lambda k: k.lineno)


def _first_class(body: list[ast.stmt], name: str) -> ast.ClassDef | None:
    return next((s for s in body if isinstance(s, ast.ClassDef) and s.name == name), None)


@functools.cache
def kernelbench_names() -> dict[str, str]:
    """problem_key -> KernelBench name (`L1 23_Softmax`), from `kernelbench_problems.json`
    (`scripts/make_kernelbench_names.py`); empty when the file is missing or broken."""
    try:
        return dict(json.loads(_KERNELBENCH.read_text(encoding="utf-8"))["problems"])
    except (OSError, ValueError, KeyError, TypeError):
        return {}


def problem_name(problem_key: str, summary: str, shapes: list[str]) -> str:
    """How a researcher names the problem: its KernelBench level and name where the reference is a known
    KernelBench problem, else what `Model` does (docstring or its operations) with the input shapes of
    `get_inputs` and the constant arguments of `get_init_inputs`, e.g. `GRU · 512×10×128 · init(128, 256, 6)`.
    Query time makes names unique per key (`sql/setup_problems.sql`)."""
    known = kernelbench_names().get(problem_key)
    if known:
        return known
    parts = [summary or "Model"]
    inputs = [s for s in shapes if not s.startswith("init(")]
    if inputs:
        parts.append(", ".join(inputs))
    parts.extend(s for s in shapes if s.startswith("init("))
    return _shorten(" · ".join(parts))


def _title(model: ast.ClassDef | None) -> str:
    """What `Model` does: its docstring's first line, else the chain of layers and operations `forward` calls."""
    if model is None:
        return ""
    doc = ast.get_docstring(model)
    if doc and doc.strip():
        first = doc.strip().splitlines()[0].strip()
        core = _DOC_PREAMBLE.sub("", first)
        return _shorten(core[:1].upper() + core[1:] if core else first, _SUMMARY_MAX)
    modules = {}  # self.attr -> layer class name assigned in __init__
    ops: list[str] = []
    for fn in model.body:
        if isinstance(fn, ast.FunctionDef) and fn.name == "__init__":
            for n in ast.walk(fn):
                if isinstance(n, ast.Assign) and isinstance(n.value, ast.Call):
                    for t in n.targets:
                        if isinstance(t, ast.Attribute) and isinstance(t.value, ast.Name) and t.value.id == "self":
                            modules[t.attr] = _call_name(n.value)
    for fn in model.body:
        if isinstance(fn, ast.FunctionDef) and fn.name == "forward":
            calls = sorted((n for n in ast.walk(fn) if isinstance(n, ast.Call)), key=lambda n: (n.lineno, n.col_offset))
            for call in calls:
                f = call.func
                is_self = isinstance(f, ast.Attribute) and isinstance(f.value, ast.Name) and f.value.id == "self"
                op = modules.get(f.attr) if is_self else _call_name(call)
                if op and op not in ops and op != "super":
                    ops.append(op)
    chain = " → ".join(ops[:_MAX_OPS]) + (" → …" if len(ops) > _MAX_OPS else "")
    return _shorten(chain, _SUMMARY_MAX)


def _shorten(text: str, limit: int = _TITLE_MAX) -> str:
    if len(text) <= limit:
        return text
    return text[: limit - 1].rsplit(" ", 1)[0].rstrip(",;:") + "…"


def _call_name(call: ast.Call) -> str | None:
    f = call.func
    return f.attr if isinstance(f, ast.Attribute) else f.id if isinstance(f, ast.Name) else None


def _dump(stmts: list[ast.stmt]) -> str:
    return "\n".join(ast.dump(s, annotate_fields=False, include_attributes=False) for s in stmts)


def _digest(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()[:16]


# ---------------------------------------------------------------- text fallback

_IMPORT_LINE = re.compile(r"^\s*(import\s|from\s+\S+\s+import\s)")
_KERNEL = python_regex("kernel")
_AUTOTUNE = python_regex("autotune")
_NEXT_LINE = re.compile(r"\n([ \t]*)(\S)")


def reference_fields(before_cut: str) -> tuple[int, str, str]:
    """(length, problem_key, title) of the reference in `before_cut`, the text before a `text_cut`: import and
    blank lines just above the cut belong to the candidate. Ingest calls this once per distinct text."""
    cut = len(before_cut)
    lines_above = before_cut.splitlines(keepends=True)
    while lines_above and (_IMPORT_LINE.match(lines_above[-1]) or not lines_above[-1].strip()):
        cut -= len(lines_above.pop())
    reference = before_cut[:cut]
    tree = _try_parse(reference)
    if tree is None:
        return cut, candidate_key(reference), ""
    problem_key, title = _reference_key(reference, tree.body, _first_class(tree.body, "Model"))
    return cut, problem_key, title


def _parse_text(x: str) -> ParsedProgram:
    cut, problem_key, title = reference_fields(x[: text_cut(x)])
    return ParsedProgram(
        reference=x[:cut],
        candidate=x[cut:],
        mode="text",
        kernels=_text_kernels(x),
        title=title,
        static_error="syntax_error",
        problem_key=problem_key,
        candidate_key=program_candidate_key(x),
    )


def _try_parse(source: str) -> ast.Module | None:
    try:
        return _ast_parse(source)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return None


def _text_kernels(x: str) -> list[Kernel]:
    """Kernels found by ingest's pattern; each one's source runs to the next line indented no deeper."""
    kernels = []
    for m in _KERNEL.finditer(x):
        line_start = x.rfind("\n", 0, m.start()) + 1
        indent = m.start() - line_start
        end = len(x)
        for line in _NEXT_LINE.finditer(x, m.end()):
            if len(line.group(1)) <= indent and line.group(2) != ")":
                end = line.start() + 1
                break
        autotuned = _AUTOTUNE.search(m.group(0)) is not None
        kernels.append(Kernel(m.group(1), x[line_start:end], autotuned, x.count("\n", 0, line_start) + 1))
    return kernels
