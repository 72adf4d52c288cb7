"""The judge's program: the reference part of a program, without the candidate (design §4: the judge never
imports the candidate, and never runs text the candidate wrote).

A program is the reference problem (imports, `class Model`, size constants, `get_inputs`, `get_init_inputs`)
followed by the candidate. The cut is the first top-level statement after `class Model` that starts the
candidate: an import of triton, `class ModelNew`, a second `class Model`, or a function whose decorators name
triton (`@triton.jit`, `@triton.autotune`, `@jit`). Before it is the reference; the judge runs of it
`common.program.reference_part.judge_statements` (up to the last of Model, get_inputs and get_init_inputs, then only
the helpers and constants those use), as written, and only that: a reference part that lacks `Model`, `get_inputs` or `get_init_inputs` (one defined past the cut is the
candidate's text), or that is not plain (`common.program.reference_part`: module-level code, a decorator, a
patch, `exec`, `ModelNew` before `Model`), is refused (`RejectedReference`) before any of it runs. A program
that does not parse has no reference; its verdict comes from the candidate's load, which fails the same way.
"""

from __future__ import annotations

import ast

from common.program.reference_part import judge_statements, reference_problem

KERNEL_DECORATORS = ("jit", "autotune", "heuristics")


class RejectedReference(ValueError):
    """The program's reference part is incomplete or not plain: the judge does not run it."""


def _decorator_names(node: ast.AST) -> set[str]:
    names: set[str] = set()
    for deco in getattr(node, "decorator_list", []):
        target = deco.func if isinstance(deco, ast.Call) else deco
        for sub in ast.walk(target):
            if isinstance(sub, ast.Name):
                names.add(sub.id)
            elif isinstance(sub, ast.Attribute):
                names.add(sub.attr)
    return names


def starts_candidate(node: ast.stmt) -> bool:
    """Whether a top-level statement (after `class Model`) belongs to the candidate."""
    if isinstance(node, ast.Import):
        return any(alias.name.split(".")[0] == "triton" for alias in node.names)
    if isinstance(node, ast.ImportFrom):
        return (node.module or "").split(".")[0] == "triton"
    if isinstance(node, ast.ClassDef):
        return node.name in ("ModelNew", "Model")
    if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
        names = _decorator_names(node)
        return "triton" in names or bool(names & set(KERNEL_DECORATORS))
    return False


def reference_statements(tree: ast.Module) -> list[ast.stmt]:
    """The top-level statements before the candidate's cut."""
    seen_model = False
    for i, node in enumerate(tree.body):
        if seen_model and starts_candidate(node):
            return tree.body[:i]
        if isinstance(node, ast.ClassDef) and node.name == "Model":
            seen_model = True
    return tree.body


def reference_source(program: str) -> str:
    """The reference part of `program` as source text the judge can run; RejectedReference when it is incomplete
    or not plain, SyntaxError when the program does not parse."""
    kept = judge_statements(reference_statements(ast.parse(program)))
    problem = reference_problem(kept)
    if problem is not None:
        raise RejectedReference(f"the reference part {problem}" if problem.startswith("does not") else
                                f"the reference part, {problem}")
    lines = program.splitlines(keepends=True)
    parts = []
    for node in kept:
        start = min([node.lineno, *(d.lineno for d in getattr(node, "decorator_list", []))])
        parts.append("".join(lines[start - 1:node.end_lineno]))
    return "".join(part if part.endswith("\n") else part + "\n" for part in parts)
