"""The judge's program: the reference part of a program, without the candidate (design §4: the judge never
imports the candidate).

A program is the reference problem (imports, `class Model`, size constants, `get_inputs`, `get_init_inputs`)
followed by the candidate. The cut is the first top-level statement after `class Model` that starts the
candidate: an import of triton, `class ModelNew`, a second `class Model`, or a function whose decorators name
triton (`@triton.jit`, `@triton.autotune`, `@jit`). Everything before it is the reference, as written. Where the
reference's own names (`Model`, `get_inputs`, `get_init_inputs`) are only defined after the cut (a problem whose
`get_inputs` comes last), those definitions are taken from past the cut too, and nothing else of it: the
candidate's module-level statements (which may patch torch) never run in the judge. A program that does not
parse has no reference; its verdict comes from the candidate's load, which fails the same way.
"""

from __future__ import annotations

import ast

NAMES = ("Model", "get_inputs", "get_init_inputs")
KERNEL_DECORATORS = ("jit", "autotune", "heuristics")


class NoReference(ValueError):
    """The program's reference part does not define what the judge needs."""


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


def _defined_name(node: ast.stmt) -> str | None:
    if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
        return node.name
    return None


def reference_source(program: str) -> str:
    """The reference part of `program` as source text the judge can run; NoReference when it lacks one of
    `NAMES`, SyntaxError when the program does not parse."""
    tree = ast.parse(program)
    body = tree.body
    seen_model = False
    cut = len(body)
    for i, node in enumerate(body):
        if seen_model and starts_candidate(node):
            cut = i
            break
        if isinstance(node, ast.ClassDef) and node.name == "Model":
            seen_model = True
    kept = body[:cut]
    defined = {_defined_name(node) for node in kept}
    missing = [name for name in NAMES if name not in defined]
    for node in body[cut:]:
        name = _defined_name(node)
        if name in missing and not (name == "Model" and seen_model):
            kept.append(node)
            missing.remove(name)
    if missing:
        raise NoReference(f"the reference part does not define {', '.join(missing)}")
    lines = program.splitlines(keepends=True)
    parts = []
    for node in kept:
        start = min([node.lineno, *(d.lineno for d in getattr(node, "decorator_list", []))])
        parts.append("".join(lines[start - 1:node.end_lineno]))
    return "".join(part if part.endswith("\n") else part + "\n" for part in parts)
