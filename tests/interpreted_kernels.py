"""A Triton kernel for in-process tests of the launch record, run by Triton's CPU interpreter (`TRITON_INTERPRET=1`
must be set before this module is imported)."""

import torch
import triton
import triton.language as tl


@triton.jit
def add_kernel(a_ptr, b_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(out_ptr + offs, tl.load(a_ptr + offs, mask=mask) + tl.load(b_ptr + offs, mask=mask), mask=mask)


def add(a, b):
    out = torch.empty_like(a)
    add_kernel[(triton.cdiv(a.numel(), 32),)](a, b, out, a.numel(), BLOCK=32)
    return out
