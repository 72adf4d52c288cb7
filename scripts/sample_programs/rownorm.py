"""Row-wise problems (one program per row, the whole row in registers): softmax, LayerNorm, RMSNorm and a
level-2 scaled softmax."""

from __future__ import annotations

from string import Template

from . import Problem

REFERENCE = Template('''import torch
import torch.nn as nn


class Model(nn.Module):
    """$title

    $ref_doc

    The operation is applied independently to every row of a (batch_size, dim) matrix, over the last
    dimension. dim is deliberately not a power of two, so block-based kernels must mask the row tail.

    Shapes:
        x:   (batch_size, dim), float32
        out: (batch_size, dim), float32
    """

    def __init__(self$init_sig):
        super(Model, self).__init__()
$init_body
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """
        Args:
            x (torch.Tensor): Input tensor of shape (batch_size, dim).

        Returns:
            torch.Tensor: Output tensor of the same shape.
        """
$forward

batch_size = 256
dim = 4000


def get_inputs():
    x = torch.randn(batch_size, dim)
    return [x]


def get_init_inputs():
    return [$init_inputs]
''')

CANDIDATE = Template('''import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def $kernel(
    x_ptr,
    out_ptr,
$kparams    n_cols,
    stride_row,
    BLOCK_SIZE: tl.constexpr,
):
    """One program per row; BLOCK_SIZE >= n_cols, so the whole row lives in registers.

    Masked lanes (cols >= n_cols) are loaded with a neutral value so that they do not change the row
    statistics, and they are never stored.
    """
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK_SIZE)
    mask = cols < n_cols
    row_ptr = x_ptr + row * stride_row
$kbody
    tl.store(out_ptr + row * stride_row + cols, out, mask=mask)


def triton_$name(x: torch.Tensor$wparams) -> torch.Tensor:
    """Row-wise $name over the last dimension of a 2-D tensor.

    BLOCK_SIZE is the next power of two above the row length (tl.arange needs a power of two), so one
    program holds a full row; with dim = 4000 that is 4096 lanes, 16 per thread at num_warps=8. Rows much
    longer than ~16k would need a looped (online) variant instead, which this problem does not require.
    """
    x = x.contiguous()
    n_rows, n_cols = x.shape
    out = torch.empty_like(x)
    # the whole row must fit in one block
    BLOCK_SIZE = triton.next_power_of_2(n_cols)
    $kernel[(n_rows,)](x, out$kargs, n_cols, x.stride(0), BLOCK_SIZE=BLOCK_SIZE, num_warps=8)
    return out


class ModelNew(nn.Module):
    """$short -- Triton version.

    One fused kernel: the row is read once, its statistics are reduced in registers and the result is
    written once (the eager version makes several passes over memory). The constructor matches the
    reference so the same parameters can be loaded.
    """

    def __init__(self$init_sig):
        super(ModelNew, self).__init__()
$init_body
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return triton_$name(x$fargs)
''')

SLOW = (("num_warps=8", "num_warps=1"), ("x = x.contiguous()", "x = x.clone()"))
RUNTIME_ERROR = (("n_rows, n_cols = x.shape", "n_rows, n_cols, _ = x.shape"),)
SOFTMAX_BODY = '''    x = tl.load(row_ptr + cols, mask=mask, other=float("-inf"))$scale_in
    # subtract the row max for numerical stability
    row_max = tl.max(x, axis=0)
    num = tl.exp(x - row_max)
    denom = tl.sum(num, axis=0)
    out = num / denom$scale_out'''


def _problem(level, number, name, title, ref_doc, forward, kbody, *, init_sig="", init_body="",
             init_inputs="", kparams="", wparams="", kargs="", fargs="", wrong, compile_error,
             fast_ms=0.019):
    body = "".join(f"        {line}\n" for line in init_body.splitlines())
    fields = dict(title=title, short=title.rstrip("."), ref_doc=ref_doc, init_sig=init_sig, init_body=body,
                  forward="".join(f"        {line}\n" for line in forward.splitlines()),
                  init_inputs=init_inputs, name=name, kernel=f"{name}_kernel", kparams=kparams,
                  wparams=wparams, kargs=kargs, fargs=fargs, kbody=kbody)
    return Problem(level=level, number=number, reference=REFERENCE.substitute(fields),
                   candidate=CANDIDATE.substitute(fields), slow=SLOW, wrong=wrong, compile_error=compile_error,
                   runtime_error=RUNTIME_ERROR, fast_ms=fast_ms, slow_factor=2.2)


PROBLEMS = [
    _problem(
        1, 10, "softmax", "Simple model that performs a Softmax activation.",
        "softmax(x)_i = exp(x_i) / sum_j exp(x_j), computed over the last dimension.",
        "return torch.softmax(x, dim=1)",
        Template(SOFTMAX_BODY).substitute(scale_in="", scale_out=""),
        wrong=(("out = num / denom", "out = (x - row_max) - tl.log(denom)"),),
        compile_error=(("tl.max(x, axis=0)", "tl.max(x, axis=1)"),),
    ),
    _problem(
        1, 11, "layer_norm", "Simple model that performs Layer Normalization.",
        "y = (x - mean) / sqrt(var + eps) * weight + bias, with biased variance, over the last dimension.",
        "return self.ln(x)",
        '''    x = tl.load(row_ptr + cols, mask=mask, other=0.0)
    mean = tl.sum(x, axis=0) / n_cols
    diff = tl.where(mask, x - mean, 0.0)
    var = tl.sum(diff * diff, axis=0) / n_cols
    rstd = 1.0 / tl.sqrt(var + eps)
    w = tl.load(w_ptr + cols, mask=mask, other=1.0)
    b = tl.load(b_ptr + cols, mask=mask, other=0.0)
    out = diff * rstd * w + b''',
        init_sig=", normalized_shape: int", init_body="self.ln = nn.LayerNorm(normalized_shape)",
        init_inputs="dim", kparams="    w_ptr,\n    b_ptr,\n    eps,\n",
        wparams=", weight: torch.Tensor, bias: torch.Tensor, eps: float", kargs=", weight, bias, eps",
        fargs=", self.ln.weight, self.ln.bias, self.ln.eps",
        wrong=(("tl.sum(diff * diff, axis=0)", "tl.sum(diff, axis=0)"),),
        compile_error=(("mean = tl.sum(x, axis=0) / n_cols", "mean = tl.mean(x, axis=0)"),),
        fast_ms=0.024,
    ),
    _problem(
        1, 12, "rms_norm", "Simple model that performs RMS Normalization.",
        "y = x / sqrt(mean(x^2) + eps), without a learned scale, over the last dimension.",
        "rms = torch.sqrt(torch.mean(x ** 2, dim=-1, keepdim=True) + self.eps)\nreturn x / rms",
        '''    x = tl.load(row_ptr + cols, mask=mask, other=0.0)
    mean_sq = tl.sum(x * x, axis=0) / n_cols
    out = x / tl.sqrt(mean_sq + eps)''',
        init_sig=", num_features: int, eps: float = 1e-5",
        init_body="self.num_features = num_features\nself.eps = eps", init_inputs="dim",
        kparams="    eps,\n", wparams=", eps: float", kargs=", eps", fargs=", self.eps",
        wrong=(("tl.sum(x * x, axis=0)", "tl.sum(x, axis=0)"),),
        compile_error=(("tl.sum(x * x, axis=0)", "tl.sum(tl.pow(x, 2.0), axis=0)"),),
    ),
    _problem(
        2, 4, "scaled_softmax", "Model that scales its input, applies Softmax and rescales the result.",
        "out = softmax(x * scale_in, dim=-1) * scale_out, e.g. a temperature followed by a gate.",
        "return torch.softmax(x * self.scale_in, dim=-1) * self.scale_out",
        Template(SOFTMAX_BODY).substitute(scale_in="\n    x = x * scale_in", scale_out=" * scale_out"),
        init_sig=", scale_in: float = 0.5, scale_out: float = 4.0",
        init_body="self.scale_in = scale_in\nself.scale_out = scale_out", init_inputs="0.5, 4.0",
        kparams="    scale_in,\n    scale_out,\n", wparams=", scale_in: float, scale_out: float",
        kargs=", scale_in, scale_out", fargs=", self.scale_in, self.scale_out",
        wrong=(("\n    x = x * scale_in", ""),),
        compile_error=(("tl.exp(x - row_max)", "tl.exp(x - row_max, fast=True)"),),
    ),
]
