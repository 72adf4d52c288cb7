"""passed (honest): inputs and buffers named on `cuda` in every way programs do, a non-contiguous reference output
and an integer one, an autotuned kernel with a heuristic."""

import torch
import torch.nn as nn
import triton
import triton.language as tl


class Model(nn.Module):
    def forward(self, a, b):
        s = (a + b).view(8, 8)
        return s.t(), s.argmax(dim=1)


def get_inputs():
    return [torch.randn(64, device="cuda"), torch.randn(64).cuda()]


def get_init_inputs():
    return []


@triton.autotune(configs=[triton.Config({"BLOCK": 32}), triton.Config({"BLOCK": 64}, num_warps=2)], key=["n"])
@triton.heuristics({"EVEN": lambda args: args["n"] % args["BLOCK"] == 0})
@triton.jit
def tuned_add_kernel(a_ptr, b_ptr, out_ptr, n, BLOCK: tl.constexpr, EVEN: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    if EVEN:
        tl.store(out_ptr + offs, tl.load(a_ptr + offs) + tl.load(b_ptr + offs))
    else:
        mask = offs < n
        tl.store(out_ptr + offs, tl.load(a_ptr + offs, mask=mask) + tl.load(b_ptr + offs, mask=mask), mask=mask)


class ModelNew(nn.Module):
    def forward(self, a, b):
        assert a.is_cuda and torch.cuda.is_available()
        out = torch.empty(a.shape, device=torch.device("cuda"), dtype=a.dtype)
        grid = lambda meta: (triton.cdiv(a.numel(), meta["BLOCK"]),)  # noqa: E731
        tuned_add_kernel[grid](a, b, out, a.numel())
        s = out.view(8, 8)
        return s.t(), s.argmax(dim=1)
