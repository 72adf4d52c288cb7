"""Cheat (issue 42: the judge ran candidate-written text): `get_inputs` defined after ModelNew, where the judge used
to take it from, carries a decorator that replaces the judge's comparison; the output is wrong. The judge runs
only the reference part before the cut, which lacks `get_inputs`: `reference_rejected`."""

import torch
import torch.nn as nn
import triton
import triton.language as tl


class Model(nn.Module):
    def forward(self, a, b):
        return a + b


def get_init_inputs():
    return []


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


@(lambda fn: (setattr(torch, "isclose", lambda c, r, **k: torch.ones_like(r, dtype=torch.bool)),
              setattr(torch.Tensor, "__sub__", lambda self, other: torch.zeros_like(self)), fn)[-1])
def get_inputs():
    return [torch.randn(64), torch.randn(64)]
