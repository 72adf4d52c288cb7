"""The judge's program: the reference part of a program, without the candidate (design §4: the judge never
imports the candidate, and never runs text the candidate wrote).

A program is the reference problem (imports, `class Model`, size constants, `get_inputs`, `get_init_inputs`)
followed by the candidate. The cut is the top-level statement that starts the candidate
(`common.program.syntax_rules.candidate_start`, the rule parsing uses too: `class ModelNew`, or after `class
Model` an import of triton, a second `class Model` or a Triton kernel). Before it is the reference; the judge runs
of it `common.program.reference_part.judge_statements` (up to the last of Model, get_inputs and get_init_inputs,
then only the helpers and constants those use), as written, and only that: a reference part that lacks `Model`,
`get_inputs` or `get_init_inputs` (one defined past the cut is the candidate's text), or that is not plain
(`common.program.reference_part`: module-level code, a decorator, a patch, `exec`, `ModelNew` before `Model`), is
refused (`RejectedReference`) before any of it runs. A program that does not parse has no reference; its verdict
comes from the candidate's load, which fails the same way.
"""

from __future__ import annotations

import ast

from common.program.reference_part import judge_statements, reference_problem
from common.program.syntax_rules import candidate_start, statements, triton_aliases


class RejectedReference(ValueError):
    """The program's reference part is incomplete or not plain: the judge does not run it."""


def reference_statements(tree: ast.Module) -> list[ast.stmt]:
    """The top-level statements before the candidate's cut."""
    body = tree.body
    return body[:candidate_start(body, triton_aliases(statements(body)))]


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
