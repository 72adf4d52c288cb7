"""The judge runs only the reference part, plain (issue 42): `common.program.reference_part`'s rule, the judge's cut
(`runner.child.reference`), and the run-time check that the reference part left torch and the judge untouched
(`runner.child.integrity`)."""

from __future__ import annotations

import ast

import pytest
import torch

from common.program.reference_part import judge_statements, reference_problem
from runner.child.integrity import Snapshot
from runner.child.reference import RejectedReference, reference_source

REFERENCE = '''import torch
import torch.nn as nn

N = 64


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.scale = 2.0

    @torch.no_grad()
    def forward(self, a):
        return a * self.scale


def get_inputs():
    return [torch.randn(N)]


def get_init_inputs():
    return []
'''
CANDIDATE = '''
import triton


@triton.jit
def k(x):
    pass


class ModelNew(Model):
    pass
'''


def _problem(text: str) -> str | None:
    return reference_problem(judge_statements(ast.parse(text).body))


def test_a_plain_reference_is_run_as_written():
    assert _problem(REFERENCE) is None
    assert ast.dump(ast.parse(reference_source(REFERENCE + CANDIDATE))) == ast.dump(ast.parse(REFERENCE))


@pytest.mark.parametrize(("text", "reason"), [
    (REFERENCE + "\ntorch.manual_seed(0)\nexec('x = 1')\n", None),  # after get_init_inputs, used by nothing: not run
    (REFERENCE.replace("N = 64", "N = 64\ntorch.isclose = None"), "runs `torch.isclose = None` at module level"),
    (REFERENCE.replace("N = 64", "N = 64\nprint(N)"), "runs `print(N)` at module level"),
    (REFERENCE.replace("def get_inputs", "@staticmethod\ndef get_inputs"), "decorates `get_inputs` with `@staticmethod`"),
    (REFERENCE.replace("return [torch.randn(N)]", "exec('import os')\n    return [torch.randn(N)]"), "calls `exec`"),
    (REFERENCE.replace("return [torch.randn(N)]", "torch.Tensor.add = None\n    return [torch.randn(N)]"),
     "assigns `torch.Tensor.add`"),
    (REFERENCE.replace("    @torch.no_grad()\n", "    @(lambda f: f)\n"), "decorates `forward`"),
    ("class ModelNew:\n    pass\n\n\n" + REFERENCE, "defines ModelNew before Model"),
    # a kernel by `common/program/syntax_rules.py`'s rule, through any import of triton; another `jit` is none
    ("import triton as tr\n\n\n@tr.jit\ndef k(x):\n    pass\n\n\n" + REFERENCE,
     "defines the Triton kernel `k` before Model"),
    ("from triton import jit as J\n\n\n@J\ndef k(x):\n    pass\n\n\n" + REFERENCE,
     "defines the Triton kernel `k` before Model"),
    ("import numba\n\n\n@numba.jit\ndef k(x):\n    pass\n\n\n" + REFERENCE, "decorates `k` with `@numba.jit`"),
    (REFERENCE.replace("def get_inputs():\n    return [torch.randn(N)]\n", ""), "does not define get_inputs"),
])
def test_what_the_judge_refuses(text, reason):
    problem = _problem(text)
    assert (problem is None) if reason is None else (reason in (problem or "")), problem


def test_helpers_after_get_init_inputs_that_the_reference_uses_are_kept():
    text = REFERENCE.replace("N = 64\n", "") + "\nN = 64\nUNUSED = print('candidate')\n"
    kept = judge_statements(ast.parse(text).body)
    assert ast.unparse(kept[-1]) == "N = 64" and "UNUSED" not in ast.unparse(ast.Module(kept, []))
    assert _problem(text) is None


def test_a_get_inputs_past_the_cut_is_the_candidates():
    text = REFERENCE.replace("def get_inputs():\n    return [torch.randn(N)]\n", "") + CANDIDATE
    with pytest.raises(RejectedReference, match="does not define get_inputs before the candidate's part"):
        reference_source(text + "\n\ndef get_inputs():\n    return [torch.randn(N)]\n")


def test_the_snapshot_names_what_was_replaced():
    snapshot = Snapshot()
    original = torch.isclose
    try:
        torch.isclose = lambda *a, **k: True
        torch.Tensor.__sub__ = lambda self, other: self
        torch.some_new_submodule_attr = 1  # torch gains names lazily: no change
        assert set(snapshot.changed()) == {"torch.isclose", "torch.Tensor.__sub__"}
    finally:
        torch.isclose = original
        del torch.Tensor.__sub__
        del torch.some_new_submodule_attr
    assert snapshot.changed() == []
