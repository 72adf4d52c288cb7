"""The syntax-tree rules of a program, each owned here: which function is a Triton kernel (`kernel_kind`,
`is_kernel`) and which top-level statement starts the candidate (`starts_candidate`, `candidate_start`).

Parsing (`common/program/parse.py`), the static hack checks (`common/program/hack_checks.py`) and the runner's
judge (`runner/child/reference.py`, which cuts the reference it runs at `candidate_start`) all call these. The
text rules (`common/program/text_rules.py`, run by ingest's SQL over every row and by parsing where a program does
not compile) are the same rules spelled as regular expressions, from the same `KERNEL_DECORATORS`. Standard
library only: the runner's child imports this under a GPU machine's bare Python.

- A **Triton kernel** is a def decorated `@triton.jit`, `@triton.autotune` or `@triton.heuristics` (called or
  not), through any import of triton: `import triton as tr` (`@tr.jit`), `import triton.language as tl`
  (`@tl.jit`), `from triton import jit` (`@jit`). `@torch.jit.script` or a numba `@jit` is none.
- The **candidate starts** at `class ModelNew` wherever it is, or, after the reference's `class Model`, at the
  first second `class Model`, import of triton or Triton kernel; `len(body)` when nothing starts it.
"""

from __future__ import annotations

import ast
from collections.abc import Iterable, Iterator

KERNEL_DECORATORS = ("jit", "autotune", "heuristics")


def statements(body: list[ast.stmt]) -> Iterator[ast.stmt]:
    """Every statement, nested ones included (bodies of defs, classes, if/for/while/with/try), no expressions."""
    stack = list(reversed(body))
    while stack:
        node = stack.pop()
        yield node
        for name in ("body", "orelse", "finalbody", "handlers"):
            children = getattr(node, name, None)
            if children:
                stack.extend(reversed(children))
        for case in getattr(node, "cases", ()):
            stack.extend(reversed(case.body))


def triton_aliases(nodes: Iterable[ast.stmt]) -> dict[str, str]:
    """Local name -> what it stands for, from the imports among `nodes`: "triton" for the module (or one of its
    submodules), else the imported attribute ("jit")."""
    aliases = {"triton": "triton"}
    for node in nodes:
        if isinstance(node, ast.Import):
            for a in node.names:
                if a.name == "triton" or a.name.startswith("triton."):
                    aliases[(a.asname or a.name).split(".")[0]] = "triton"
        elif isinstance(node, ast.ImportFrom) and (node.module or "").split(".")[0] == "triton":
            for a in node.names:
                aliases[a.asname or a.name] = a.name
    return aliases


def dotted(node: ast.AST) -> str | None:
    """`a.b.c` for a chain of names and attributes, None otherwise."""
    parts = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if not isinstance(node, ast.Name):
        return None
    parts.append(node.id)
    return ".".join(reversed(parts))


def kernel_kind(decorator: ast.expr, aliases: dict[str, str]) -> str | None:
    """"jit"/"autotune"/"heuristics" when `decorator` is a Triton kernel decorator (called or not), else None."""
    if isinstance(decorator, ast.Call):
        decorator = decorator.func
    if isinstance(decorator, ast.Name):
        kind = aliases.get(decorator.id)
        return kind if kind in KERNEL_DECORATORS else None
    if isinstance(decorator, ast.Attribute) and decorator.attr in KERNEL_DECORATORS:
        root = decorator.value
        while isinstance(root, ast.Attribute):
            root = root.value
        if isinstance(root, ast.Name) and aliases.get(root.id) == "triton":
            return decorator.attr
    return None


def is_kernel(node: ast.AST, aliases: dict[str, str]) -> bool:
    """Whether `node` is a Triton kernel: a def with a Triton kernel decorator (`aliases`: `triton_aliases`)."""
    return isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) and any(
        kernel_kind(d, aliases) for d in node.decorator_list
    )


def is_triton_import(node: ast.stmt) -> bool:
    if isinstance(node, ast.Import):
        return any(a.name == "triton" or a.name.startswith("triton.") for a in node.names)
    return isinstance(node, ast.ImportFrom) and (node.module or "").split(".")[0] == "triton"


def starts_candidate(node: ast.stmt, aliases: dict[str, str], after_model: bool) -> bool:
    """Whether a top-level statement starts the candidate; `after_model`: it comes after the reference's
    `class Model`."""
    if isinstance(node, ast.ClassDef) and node.name == "ModelNew":
        return True
    if not after_model:
        return False
    return (isinstance(node, ast.ClassDef) and node.name == "Model") or is_triton_import(node) or is_kernel(node, aliases)


def model_at(body: list[ast.stmt]) -> int:
    """Index of the reference's `class Model` among the top-level statements, -1 when there is none."""
    return next((i for i, s in enumerate(body) if isinstance(s, ast.ClassDef) and s.name == "Model"), -1)


def candidate_start(body: list[ast.stmt], aliases: dict[str, str]) -> int:
    """Index of the top-level statement where the candidate starts (`len(body)` when none does). Without a
    `class Model`, every statement counts as after it."""
    model = model_at(body)
    return next((i for i, s in enumerate(body) if starts_candidate(s, aliases, i > model)), len(body))
