"""What the test programs start from (`tests/programs.py` prepends it): a reference `Model` adding two vectors and a
correct Triton add. Each hostile file adds its own module code and `ModelNew` (redefining `Model` where it must)."""

import torch
import torch.nn as nn
import triton
import triton.language as tl


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, a, b):
        return a + b


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
