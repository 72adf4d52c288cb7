"""Cheat (issue 42: the judge ran candidate-written text): ModelNew and its kernel written before Model, and a
patch of the comparison after them, so that the cut (after Model) left all of it in the judge's part; the output
is wrong. The judge refuses a reference part that defines ModelNew or a kernel before Model: `reference_rejected`."""

import torch
import torch.nn as nn
import triton
import triton.language as tl


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


torch.isclose = lambda c, r, **k: torch.ones_like(r, dtype=torch.bool)
torch.Tensor.__sub__ = lambda self, other: torch.zeros_like(self)


class Model(nn.Module):
    def forward(self, a, b):
        return a + b


def get_inputs():
    return [torch.randn(64), torch.randn(64)]


def get_init_inputs():
    return []
