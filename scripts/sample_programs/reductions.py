"""Level-1 reductions over the middle dimension of a 3-D tensor: sum, max and mean."""

from __future__ import annotations

from string import Template

from . import Problem

REFERENCE = Template('''import torch
import torch.nn as nn


class Model(nn.Module):
    """Simple model that performs $what reduction over a specified dimension.

    The reduced dimension is given to the constructor. The benchmark reduces the middle dimension of a
    (batch_size, dim1, dim2) tensor, which is the awkward case for a naive kernel: the reduced elements are
    dim2 apart in memory, so a good kernel reduces a tile of rows at a time and keeps the loads coalesced
    along the last (contiguous) dimension.

    Shapes:
        x:   (batch_size, dim1, dim2), float32
        out: $out_shape, float32
    """

    def __init__(self, dim: int):
        """
        Args:
            dim (int): Dimension to reduce over.
        """
        super(Model, self).__init__()
        self.dim = dim

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """
        Applies $what reduction over the specified dimension.

        Args:
            x (torch.Tensor): Input tensor of shape (batch_size, dim1, dim2).

        Returns:
            torch.Tensor: Output tensor after $what reduction over the specified dimension.
        """
        return $torch_expr


batch_size = 16
dim1 = 256
dim2 = 256
reduce_dim = 1


def get_inputs():
    x = torch.randn(batch_size, dim1, dim2)
    return [x]


def get_init_inputs():
    return [reduce_dim]
''')

CANDIDATE = Template('''import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def $kernel(
    x_ptr,
    out_ptr,
    R,  # length of the reduced dimension
    N,  # length of the kept, contiguous dimension
    stride_b,
    stride_r,
    BLOCK_R: tl.constexpr,
    BLOCK_N: tl.constexpr,
):
    """Reduce x[b, :, n0:n0+BLOCK_N] over the middle dimension.

    Grid: (batch, cdiv(N, BLOCK_N)). Each program walks the reduced dimension in BLOCK_R-row tiles, so the
    loads of one tile are contiguous along N and the partial result stays in registers.
    """
    pid_b = tl.program_id(0)
    pid_n = tl.program_id(1)
    offs_n = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    mask_n = offs_n < N
    acc = $acc_init
    for r0 in range(0, R, BLOCK_R):
        offs_r = r0 + tl.arange(0, BLOCK_R)
        mask = (offs_r[:, None] < R) & mask_n[None, :]
        ptrs = x_ptr + pid_b * stride_b + offs_r[:, None] * stride_r + offs_n[None, :]
        tile = tl.load(ptrs, mask=mask, other=$other)
        $acc_update
    $finish
    tl.store(out_ptr + pid_b * N + offs_n, acc, mask=mask_n)


def triton_$name(x: torch.Tensor, dim: int) -> torch.Tensor:
    """$what over dim 1 of a contiguous 3-D tensor with a Triton kernel."""
    assert x.dim() == 3 and dim == 1, "this kernel only reduces the middle dimension of a 3-D tensor"
    x = x.contiguous()
    B, R, N = x.shape
    out = torch.empty($alloc_shape, device=x.device, dtype=x.dtype)
    BLOCK_R = 32
    BLOCK_N = 64
    grid = (B, triton.cdiv(N, BLOCK_N))
    $kernel[grid](x, out, R, N, x.stride(0), x.stride(1), BLOCK_R=BLOCK_R, BLOCK_N=BLOCK_N)
    return out


class ModelNew(nn.Module):
    """$what reduction over a dimension -- Triton version.

    The reduction is done in fp32 registers with one program per (batch, column block); the reduced
    dimension is walked in tiles so that any length works. Only dim=1 of a 3-D input is supported,
    which is what the benchmark uses.
    """

    def __init__(self, dim: int):
        super(ModelNew, self).__init__()
        self.dim = dim

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return triton_$name(x, self.dim)
''')

SLOW = (("BLOCK_R = 32", "BLOCK_R = 8"), ("BLOCK_N = 64", "BLOCK_N = 16"))
WRONG = (("range(0, R, BLOCK_R)", "range(BLOCK_R, R, BLOCK_R)"),)
RUNTIME_ERROR = (("B, R, N = x.shape", "B, R, N = x.view(x.shape[0], -1).shape"),)


def _problem(number, name, what, torch_expr, out_shape, alloc_shape, acc_init, other, acc_update,
             finish, compile_error):
    fields = dict(name=name, what=what, kernel=f"{name}_dim1_kernel", torch_expr=torch_expr,
                  out_shape=out_shape, alloc_shape=alloc_shape, acc_init=acc_init, other=other,
                  acc_update=acc_update, finish=finish)
    return Problem(level=1, number=number, reference=REFERENCE.substitute(fields),
                   candidate=CANDIDATE.substitute(fields), slow=SLOW, wrong=WRONG,
                   compile_error=compile_error, runtime_error=RUNTIME_ERROR, fast_ms=0.021, slow_factor=3.0)


PROBLEMS = [
    _problem(7, "sum", "sum", "torch.sum(x, dim=self.dim, keepdim=True)", "(batch_size, 1, dim2)",
             "(B, 1, N)", "tl.zeros((BLOCK_N,), dtype=tl.float32)", "0.0",
             "acc += tl.sum(tile, axis=0)", "# keepdim: out has shape (B, 1, N), same flat layout as (B, N)",
             (("tl.sum(tile, axis=0)", "tl.sum(tile, axis=2)"),)),
    _problem(8, "max", "max", "torch.max(x, dim=self.dim)[0]", "(batch_size, dim2)", "(B, N)",
             'tl.full((BLOCK_N,), float("-inf"), dtype=tl.float32)', 'float("-inf")',
             "acc = tl.maximum(acc, tl.max(tile, axis=0))", "# masked rows load -inf, so they never win",
             (("tl.max(tile, axis=0)", "tl.reduce_max(tile, 0)"),)),
    _problem(9, "mean", "mean", "torch.mean(x, dim=self.dim)", "(batch_size, dim2)", "(B, N)",
             "tl.zeros((BLOCK_N,), dtype=tl.float32)", "0.0", "acc += tl.sum(tile, axis=0)",
             "acc = acc / R", (("acc += tl.sum(tile, axis=0)", "acc += tl.mean(tile, axis=0) * BLOCK_R"),)),
]
