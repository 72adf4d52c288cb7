"""The syntax-tree rules owned by `common/program/syntax_rules.py` (issue 44): which def is a Triton kernel and
where the candidate starts, as parsing, the hack checks and the runner's judge all read them."""

from __future__ import annotations

import ast

import pytest

from common.program.hack_checks import reference_info, static_flags
from common.program.parse import parse_program
from common.program.syntax_rules import candidate_start, is_kernel, statements, triton_aliases
from runner.child.reference import RejectedReference, reference_source

REFERENCE = '''import torch
import torch.nn as nn

class Model(nn.Module):
    def forward(self, x):
        return x + 1

def get_inputs():
    return [torch.randn(4)]

def get_init_inputs():
    return []
'''


def _kernels(source: str) -> list[str]:
    tree = ast.parse(source)
    aliases = triton_aliases(statements(tree.body))
    return [node.name for node in statements(tree.body) if is_kernel(node, aliases)]


@pytest.mark.parametrize("source, kernels", [
    ("import triton\n@triton.jit\ndef k(x): pass\n", ["k"]),
    ("import triton as tr\n@tr.autotune(configs=[], key=[])\n@tr.jit\ndef k(x): pass\n", ["k"]),
    ("import triton.language as tl\n@tl.jit\ndef k(x): pass\n", ["k"]),
    ("from triton import jit\n@jit\ndef k(x): pass\n", ["k"]),
    ("from triton import heuristics as h\n@h({})\ndef k(x): pass\n", ["k"]),
    ("import torch\n@torch.jit.script\ndef f(x): return x\n", []),
    ("from numba import jit\n@jit\ndef f(x): return x\n", []),
    ("import triton\nclass C:\n    @triton.jit\n    def k(x): pass\n", ["k"]),
])
def test_a_kernel_is_a_def_with_a_triton_kernel_decorator(source, kernels):
    assert _kernels(source) == kernels


def test_the_hack_checks_read_the_same_kernel_rule():
    """A numba `@jit` def is no kernel: ModelNew calling only it defines no Triton kernel to leave uncalled."""
    candidate = ("import triton\nfrom numba import jit\n\n@jit\ndef helper(x):\n    return x\n\n"
                 "@triton.jit\ndef unused(x):\n    pass\n\nclass ModelNew(Model):\n    def forward(self, x):\n"
                 "        return helper(x)\n")
    tree = ast.parse(REFERENCE + candidate)
    ref = reference_info(REFERENCE, ast.parse(REFERENCE))
    flags = static_flags(tree.body[len(ast.parse(REFERENCE).body):], ref, candidate)
    assert "kernel_never_called" in flags


CANDIDATES = {
    "triton import after Model": "import triton\n\n@triton.jit\ndef k(x):\n    pass\n\nclass ModelNew(Model):\n    pass\n",
    "kernel through an alias": "from triton import jit as J\n\n@J\ndef k(x):\n    pass\n\nclass ModelNew(Model):\n    pass\n",
    "ModelNew alone": "class ModelNew(Model):\n    pass\n",
    "a second Model": "class Model(nn.Module):\n    pass\n\nclass ModelNew(Model):\n    pass\n",
}


@pytest.mark.parametrize("name", sorted(CANDIDATES))
def test_the_judge_and_parsing_cut_the_candidate_at_the_same_statement(name):
    program = REFERENCE + "\n" + CANDIDATES[name]
    body = ast.parse(program).body
    start = candidate_start(body, triton_aliases(statements(body)))
    assert start == len(ast.parse(REFERENCE).body)
    for reference in (reference_source(program), parse_program(program).reference):
        assert ast.dump(ast.parse(reference)) == ast.dump(ast.parse(REFERENCE))


def test_the_judge_never_runs_a_model_new_written_above_model():
    """`class ModelNew` starts the candidate wherever it is; the judge's cut used to wait for `class Model` and ran
    a ModelNew written above it. What follows the cut is the candidate's text: the judge refuses the program
    rather than take `Model` from there (issue 42)."""
    program = "import torch\nimport torch.nn as nn\n\nclass ModelNew(nn.Module):\n    pass\n\n" + REFERENCE.split("\n", 2)[2]
    with pytest.raises(RejectedReference, match="does not define Model"):
        reference_source(program)
