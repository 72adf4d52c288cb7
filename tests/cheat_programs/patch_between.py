"""Cheat (issue 42: the judge ran candidate-written text): a module-level patch of the comparison placed between
`get_init_inputs` and the kernels, where the cut used to leave it in the judge's part; the output is wrong. The
judge runs only the reference and the helpers it uses: the patch stays in the candidate's process,
`output_mismatch` (and the static flag `reference_not_plain`)."""

import torch
import torch.nn as nn


class Model(nn.Module):
    def forward(self, a, b):
        return a + b


def get_inputs():
    return [torch.randn(64), torch.randn(64)]


def get_init_inputs():
    return []


torch.isclose = lambda c, r, **k: torch.ones_like(r, dtype=torch.bool)
torch.Tensor.__sub__ = lambda self, other: torch.zeros_like(self)

import triton  # noqa: E402
import triton.language as tl  # noqa: E402


@triton.jit
def add_kernel(a_ptr, b_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(out_ptr + offs, tl.load(a_ptr + offs, mask=mask) + tl.load(b_ptr + offs, mask=mask), mask=mask)


class ModelNew(nn.Module):
    def forward(self, a, b):
        out = torch.empty_like(a)
        add_kernel[(triton.cdiv(a.numel(), 32),)](a, b, out, a.numel(), BLOCK=32)
        return out * 0 + 42.0
