"""Cheat (issue 42: the comparison cast to float64 and dropped the imaginary part): a complex output with a wrong
imaginary part. Complex outputs compare both parts: `output_mismatch`."""

import torch
import torch.nn as nn
import triton
import triton.language as tl


class Model(nn.Module):
    def forward(self, a, b):
        return torch.complex(a + b, b)


def get_inputs():
    return [torch.randn(64), torch.randn(64)]


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
        return torch.complex(out, torch.zeros_like(b))
