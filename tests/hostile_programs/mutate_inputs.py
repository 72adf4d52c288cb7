"""output_mismatch: the reference works in place (its output is its first input); the candidate zeroes its own
inputs and returns zeros, which would match only if it had been handed the reference's tensors."""


import torch
import torch.nn as nn
import triton
import triton.language as tl


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, a, b):
        return a.add_(b)


def get_inputs():
    return [torch.randn(64), torch.randn(64)]


def get_init_inputs():
    return []


@triton.jit
def add_kernel(a_ptr, b_ptr, out_ptr, n, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    offs = pid * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(out_ptr + offs, tl.load(a_ptr + offs, mask=mask) + tl.load(b_ptr + offs, mask=mask), mask=mask)


def triton_add(a, b):
    out = torch.empty_like(a)
    add_kernel[(triton.cdiv(a.numel(), 32),)](a, b, out, a.numel(), BLOCK=32)
    return out


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, a, b):
        a.zero_()
        b.zero_()
        return torch.zeros_like(a)
