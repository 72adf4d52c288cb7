"""The warm-up program of a triage worker (issue 41): trusted, in the dataset's form, triaged once by each worker
before its first fork (`runner.triage.program.warm_up`), never imported as a module.

Whatever torch and Triton do once per process on first use is then done in the worker, and every forked child
inherits it: the meta kernels and decompositions (and the `torch._dynamo` import torch's reference wrappers
start), `nn.init` on meta, Triton's hash of its own sources (part of every kernel's cache key), the backend's
passes and ptxas' version. Done per child instead, that was about 1.7 CPU-s of every row. Its reference uses the
layers and ops real rows use most; its candidate launches a plain and an autotuned Triton kernel.
"""

import torch
import torch.nn as nn
import torch.nn.functional as F
import triton
import triton.language as tl


class Model(nn.Module):
    def __init__(self, features):
        super().__init__()
        self.linear = nn.Linear(features, features)
        self.conv = nn.Conv2d(3, 8, 3, padding=1)
        self.norm = nn.BatchNorm2d(8)
        self.layer_norm = nn.LayerNorm(features)

    def forward(self, x, image):
        y = F.max_pool2d(F.gelu(self.norm(self.conv(image))), 2)
        h = self.layer_norm(F.relu(self.linear(x)) + torch.matmul(x, x.t()) @ x)
        return torch.softmax(h, dim=-1) * torch.sigmoid(x.sum(dim=0)), y.mean(dim=(2, 3)), torch.tanh(y).flatten(1)


@triton.jit
def _add_one_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=mask) + 1.0, mask=mask)


@triton.autotune(configs=[triton.Config({"BLOCK": 64}, num_warps=2), triton.Config({"BLOCK": 128}, num_warps=4)],
                 key=["n"])
@triton.jit
def _row_sum_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    offs = tl.arange(0, BLOCK)
    values = tl.load(x_ptr + row * n + offs, mask=offs < n, other=0.0)
    tl.store(out_ptr + row, tl.sum(values, axis=0))


class ModelNew(Model):
    def forward(self, x, image):
        shifted = torch.empty_like(x)
        _add_one_kernel[(triton.cdiv(x.numel(), 64),)](x, shifted, x.numel(), BLOCK=64)
        sums = torch.empty(x.shape[0], device=x.device)
        _row_sum_kernel[(x.shape[0],)](shifted, sums, x.shape[1])
        return super().forward(shifted - 1.0, image)


def get_inputs():
    return [torch.randn(16, 64), torch.randn(2, 3, 16, 16)]


def get_init_inputs():
    return [64]
