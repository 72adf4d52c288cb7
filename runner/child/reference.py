"""The judge's program: the reference part of a program, without the candidate (design §4: the judge never
imports the candidate).

A program is the reference problem (imports, `class Model`, size constants, `get_inputs`, `get_init_inputs`)
followed by the candidate. The cut is the top-level statement that starts the candidate
(`common.program.syntax_rules.candidate_start`, the rule parsing uses too: `class ModelNew`, or after `class
Model` an import of triton, a second `class Model` or a Triton kernel). Everything before it is the reference, as
written. Where the reference's own names (`Model`, `get_inputs`, `get_init_inputs`) are only defined after the
cut (a problem whose `get_inputs` comes last), those definitions are taken from past the cut too, and nothing else
of it: the candidate's module-level statements (which may patch torch) never run in the judge. A program that
does not parse has no reference; its verdict comes from the candidate's load, which fails the same way.
"""

from __future__ import annotations

import ast

from common.program.syntax_rules import candidate_start, statements, triton_aliases

NAMES = ("Model", "get_inputs", "get_init_inputs")


class NoReference(ValueError):
    """The program's reference part does not define what the judge needs."""


def _defined_name(node: ast.stmt) -> str | None:
    if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
        return node.name
    return None


def reference_source(program: str) -> str:
    """The reference part of `program` as source text the judge can run; NoReference when it lacks one of
    `NAMES`, SyntaxError when the program does not parse."""
    tree = ast.parse(program)
    body = tree.body
    cut = candidate_start(body, triton_aliases(statements(body)))
    kept = body[:cut]
    seen_model = any(isinstance(node, ast.ClassDef) and node.name == "Model" for node in kept)
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
