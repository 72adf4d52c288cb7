"""Cheat (issue 42: compared with atol = rtol = 1e-2, an index >= 100 off by one passed): an argmax off by one in
every row. Integer outputs compare exactly: `output_mismatch`."""

import torch
import torch.nn as nn
import triton
import triton.language as tl


class Model(nn.Module):
    def forward(self, x):
        return torch.argmax(x, dim=1)


def get_inputs():
    x = torch.randn(32, 512)
    x[:, :128] -= 100.0  # every row's maximum lies past index 127
    return [x]


def get_init_inputs():
    return []


@triton.jit
def copy_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=mask), mask=mask)


class ModelNew(nn.Module):
    def forward(self, x):
        y = torch.empty_like(x)
        copy_kernel[(triton.cdiv(x.numel(), 1024),)](x, y, x.numel(), BLOCK=1024)
        return torch.argmax(y, dim=1) + 1
