"""Hand-written KernelBench-shaped problems for the embedded sample dataset.

Each family module (``elementwise``, ``reductions``, ``rownorm``, ``matmul``, ``blocks``) defines a list
``PROBLEMS`` of :class:`Problem`: the reference program text (``Model``, size constants, ``get_inputs``,
``get_init_inputs``), one correct and fast Triton candidate, and the small text edits that turn that candidate
into a slow, wrong, non-compiling or crashing one. :mod:`sample_programs.variants` turns a problem into the
labelled candidate programs that ``scripts/make_sample.py`` writes to Parquet.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass

Edits = tuple[tuple[str, str], ...]


class EditError(ValueError):
    """An edit's text does not occur in the candidate it is meant to change."""


@dataclass(frozen=True)
class Problem:
    """One reference problem with its fast candidate and the edits that derive the other candidates.

    Every edit is ``(old, new)``: all occurrences of ``old`` in the candidate are replaced by ``new``.
    ``slow_factor`` is the provisional slow/fast runtime ratio; ``fast_ms`` the provisional fast runtime.
    """

    level: int
    number: int
    reference: str
    candidate: str
    slow: Edits
    wrong: Edits
    compile_error: Edits
    runtime_error: Edits
    fast_ms: float
    slow_factor: float = 2.5

    @property
    def problem_id(self) -> str:
        return f"{self.level}_{self.number}"

    @property
    def title(self) -> str:
        """First line of the ``Model`` docstring."""
        for node in ast.parse(self.reference).body:
            if isinstance(node, ast.ClassDef) and node.name == "Model":
                doc = ast.get_docstring(node) or ""
                return doc.splitlines()[0] if doc else ""
        return ""


def apply_edits(text: str, edits: Edits, what: str) -> str:
    """Apply ``edits`` to ``text``; raise :class:`EditError` naming ``what`` when an edit does not match."""
    for old, new in edits:
        if old not in text:
            raise EditError(f"{what}: edit target not found: {old!r}")
        text = text.replace(old, new)
    return text


def all_problems() -> list[Problem]:
    """Every sample problem, ordered by level then number (ids are unique)."""
    from . import blocks, elementwise, matmul, reductions, rownorm

    problems = [p for mod in (elementwise, reductions, rownorm, matmul, blocks) for p in mod.PROBLEMS]
    problems.sort(key=lambda p: (p.level, p.number))
    ids = [p.problem_id for p in problems]
    if len(ids) != len(set(ids)):
        raise ValueError(f"duplicate problem ids: {sorted(i for i in ids if ids.count(i) > 1)}")
    return problems
