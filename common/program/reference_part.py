"""What the judge may run of a program: its reference part, plain (issue 42: the judge never runs candidate-written
text). One rule, used at run time by the judge (`runner/child/reference.py`: a named `reference_rejected`
verdict) and at ingest by the static checks (`common/program/hack_checks.py`: the `reference_not_plain` flag).

The judge runs the top-level statements before the candidate's cut up to the last definition of `Model`,
`get_inputs` or `get_init_inputs`, and of those after it only what the part before uses (its helpers and
constants, transitively): the rest (module-level code between `get_init_inputs` and the kernels, a patch of torch
placed there) is the candidate's text, run in the candidate's process alone (`judge_statements`).
What the judge runs is plain when it defines `Model`,
`get_inputs` and `get_init_inputs` and holds only imports, undecorated functions and classes (methods may carry
`SAFE_DECORATORS`), assignments to plain names and docstrings; and nowhere, not in a function body either,
assigns or deletes an attribute of anything but `self`, or calls one of `FORBIDDEN_CALLS`; and defines neither
`ModelNew` nor a Triton kernel (`common/program/syntax_rules.is_kernel`, the rule's one owner; both belong after
`Model`). On the 1,700 programs of `../shared/data/realworld/` every reference part is plain. Standard library
only.
"""

from __future__ import annotations

import ast

from common.program.syntax_rules import dotted, is_kernel, triton_aliases

NAMES = ("Model", "get_inputs", "get_init_inputs")
SAFE_DECORATORS = frozenset({"staticmethod", "classmethod", "property", "torch.no_grad", "torch.inference_mode",
                             "no_grad", "inference_mode"})
FORBIDDEN_CALLS = frozenset({"exec", "eval", "compile", "setattr", "delattr", "__import__", "globals", "vars",
                             "import_module", "__setattr__", "__delattr__", "system", "_getframe"})


def _decorator(node: ast.expr) -> str:
    target = node.func if isinstance(node, ast.Call) else node
    return dotted(target) or _first_line(target)


def _names_only(target: ast.expr) -> bool:
    if isinstance(target, (ast.Tuple, ast.List)):
        return all(_names_only(t) for t in target.elts)
    return isinstance(target, ast.Name)


def _top_level(node: ast.stmt, aliases: dict[str, str]) -> str | None:
    """Why a top-level statement is not plain, or None (`aliases`: the part's `syntax_rules.triton_aliases`, for
    the kernel rule's one owner)."""
    if isinstance(node, ast.ClassDef) and node.name == "ModelNew":
        return "defines ModelNew before Model"
    if is_kernel(node, aliases):
        return f"defines the Triton kernel `{node.name}` before Model"
    if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
        if node.decorator_list:
            return f"decorates `{node.name}` with `@{_decorator(node.decorator_list[0])}`"
        return None
    if isinstance(node, (ast.Import, ast.ImportFrom)):
        return None
    if isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant):
        return None
    if isinstance(node, ast.Assign) and all(_names_only(t) for t in node.targets):
        return None
    if isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
        return None
    return f"runs `{_first_line(node)}` at module level"


def _anywhere(node: ast.AST) -> str | None:
    """Why a node inside a statement is not plain, or None."""
    if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
        for deco in node.decorator_list:
            if _decorator(deco) not in SAFE_DECORATORS:
                return f"decorates `{node.name}` with `@{_decorator(deco)}`"
    elif isinstance(node, (ast.Assign, ast.AugAssign, ast.AnnAssign, ast.Delete)):
        targets = node.targets if isinstance(node, (ast.Assign, ast.Delete)) else [node.target]
        for target in targets:
            for sub in ast.walk(target):
                if isinstance(sub, ast.Attribute) and (dotted(sub) or "").split(".")[0] != "self":
                    return f"assigns `{dotted(sub) or ast.unparse(sub)}`"
    elif isinstance(node, ast.Call):
        name = dotted(node.func) or ""
        if name.split(".")[-1] in FORBIDDEN_CALLS:
            return f"calls `{name}`"
    elif isinstance(node, (ast.Global, ast.Nonlocal)):
        return f"declares `{_first_line(node)}`"
    return None


def _first_line(node: ast.AST) -> str:
    try:
        text = (ast.unparse(node).splitlines() or [""])[0]
    except (RecursionError, ValueError):  # a hostile depth: the statement's kind says enough
        text = type(node).__name__
    return text if len(text) <= 80 else text[:77] + "..."


def _defines(node: ast.stmt) -> set[str]:
    if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
        return {node.name}
    if isinstance(node, (ast.Import, ast.ImportFrom)):
        return {(a.asname or a.name).split(".")[0] for a in node.names}
    if isinstance(node, (ast.Assign, ast.AnnAssign)):
        targets = node.targets if isinstance(node, ast.Assign) else [node.target]
        return set().union(set(), *(_bound(t) for t in targets))
    return set()


def _bound(target: ast.expr) -> set[str]:
    """The names an assignment target binds (`torch.isclose = ...` binds none)."""
    if isinstance(target, ast.Name):
        return {target.id}
    if isinstance(target, (ast.Tuple, ast.List)):
        return set().union(set(), *(_bound(t) for t in target.elts))
    return _bound(target.value) if isinstance(target, ast.Starred) else set()


def _loads(node: ast.AST) -> set[str]:
    return {n.id for n in ast.walk(node) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)}


def judge_statements(statements: list[ast.stmt]) -> list[ast.stmt]:
    """Of the statements before the cut, those the judge runs: up to the last definition of one of `NAMES`, then
    only those defining a name the kept ones use."""
    last = max((i for i, node in enumerate(statements) if _defines(node) & set(NAMES)), default=len(statements) - 1)
    kept, tail = list(statements[:last + 1]), statements[last + 1:]
    used = set().union(set(), *(_loads(node) for node in kept))
    taken: set[int] = set()
    grew = True
    while grew:
        grew = False
        for i, node in enumerate(tail):
            if i not in taken and _defines(node) & used:
                taken.add(i)
                used |= _loads(node)
                grew = True
    return kept + [node for i, node in enumerate(tail) if i in taken]


def reference_problem(statements: list[ast.stmt]) -> str | None:
    """Why a reference part (its top-level statements) is not plain, one reason naming the line, or None."""
    aliases = triton_aliases(statements)
    for node in statements:
        why = _top_level(node, aliases)
        if why is None:
            why = next((w for sub in ast.walk(node) if (w := _anywhere(sub)) is not None), None)
        if why is not None:
            return f"line {getattr(node, 'lineno', '?')}: {why}"
    defined = {node.name for node in statements if isinstance(node, (ast.FunctionDef, ast.ClassDef))}
    missing = [name for name in NAMES if name not in defined]
    if missing:
        return f"does not define {', '.join(missing)} before the candidate's part"
    return None
