"""Honest control (issue 42: it failed with `runtime_error` while comparing): the reference returns a transposed,
non-contiguous tensor; ModelNew computes the same values into a contiguous one. Outputs compare value by value,
whatever their strides: correct, no flag."""

import torch
import torch.nn as nn
import triton
import triton.language as tl


class Model(nn.Module):
    def forward(self, a, b):
        return (a + b).t()


def get_inputs():
    return [torch.randn(512, 16), torch.randn(512, 16)]


def get_init_inputs():
    return []


@triton.jit
def add_kernel(a_ptr, b_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(out_ptr + offs, tl.load(a_ptr + offs, mask=mask) + tl.load(b_ptr + offs, mask=mask), mask=mask)


class ModelNew(nn.Module):
    def forward(self, a, b):
        at, bt = a.t().contiguous(), b.t().contiguous()
        out = torch.empty_like(at)
        add_kernel[(triton.cdiv(at.numel(), 1024),)](at, bt, out, at.numel(), BLOCK=1024)
        return out
