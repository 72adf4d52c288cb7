"""Elementwise problems: level-1 activations and one level-2 fused elementwise chain."""

from __future__ import annotations

from string import Template

from . import Problem

REFERENCE = Template('''import torch
import torch.nn as nn


class Model(nn.Module):
    """$title

    $ref_doc

    The operation is applied elementwise, so the output has the same shape and dtype as the input.
    It is memory bound: every element is read once and written once, so a good implementation runs at
    close to the device's memory bandwidth and the interesting part is launch configuration.

    Shapes:
        x:   (batch_size, dim), float32
        out: (batch_size, dim), float32
    """

    def __init__(self$init_sig):
        super(Model, self).__init__()
$init_body
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """
        Applies the operation to the input tensor.

        Args:
            x (torch.Tensor): Input tensor of any shape.

        Returns:
            torch.Tensor: Output tensor with the same shape as the input.
        """
        return $torch_expr


batch_size = 16
dim = 65536


def get_inputs():
    """Random inputs on the CPU; the harness moves them to the device under test."""
    x = torch.randn(batch_size, dim)
    return [x]


def get_init_inputs():
    return [$init_inputs]  # constructor arguments
''')

PLAIN_HEADER = '''@triton.jit'''
PLAIN_LAUNCH = '''    BLOCK_SIZE = 4096
    grid = (triton.cdiv(n_elements, BLOCK_SIZE),)
    $kernel[grid](x, out, n_elements$kargs, BLOCK_SIZE=BLOCK_SIZE)'''
AUTOTUNE_HEADER = '''@triton.autotune(
    configs=[
        triton.Config({"BLOCK_SIZE": 2048}, num_warps=4),
        triton.Config({"BLOCK_SIZE": 4096}, num_warps=8),
    ],
    key=["n_elements"],
)
@triton.jit'''
AUTOTUNE_LAUNCH = '''    # the autotuner picks BLOCK_SIZE, so the grid is a function of the chosen meta-parameters
    grid = lambda meta: (triton.cdiv(n_elements, meta["BLOCK_SIZE"]),)
    $kernel[grid](x, out, n_elements$kargs)'''

CANDIDATE = Template('''import torch
import torch.nn as nn
import triton
import triton.language as tl


$header
def $kernel(
    x_ptr,  # pointer to the flattened input
    out_ptr,  # pointer to the flattened output
    n_elements,  # total number of elements
$kparams    BLOCK_SIZE: tl.constexpr,
):
    """Each program instance processes BLOCK_SIZE contiguous elements of the flattened tensor."""
    pid = tl.program_id(axis=0)
    block_start = pid * BLOCK_SIZE
    offsets = block_start + tl.arange(0, BLOCK_SIZE)
    # Guard the tail block: n_elements need not be a multiple of BLOCK_SIZE.
    mask = offsets < n_elements
    x = tl.load(x_ptr + offsets, mask=mask, other=0.0)
$kbody
    tl.store(out_ptr + offsets, out, mask=mask)


def triton_$name(x: torch.Tensor$wparams) -> torch.Tensor:
    """Launches $kernel over the flattened tensor.

    The output is allocated on the input's device with the input's dtype; the kernel works in fp32.
    """
    assert x.is_contiguous(), "input must be contiguous"
    out = torch.empty_like(x)
    n_elements = x.numel()
$launch
    return out


class ModelNew(nn.Module):
    """$short -- Triton version.

    Same constructor as the reference; the forward pass is a single fused Triton launch over the flattened
    input, so the tensor is read once and written once.

    Launch configuration: one program per BLOCK_SIZE elements; BLOCK_SIZE is a power of two so that
    tl.arange can build the offsets, and the last block is masked. Loads use other=0.0 so masked lanes
    never read past the end of the buffer.
    """

    def __init__(self$init_sig):
        super(ModelNew, self).__init__()
$init_body
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return triton_$name(x.contiguous()$fargs)
''')

RUNTIME_ERROR = ("(x.contiguous()", "(x.view(x.shape[0], -1, 3)")


def _problem(level, number, name, title, ref_doc, torch_expr, kbody, *, init_sig="", init_body="",
             init_inputs="", kparams="", wparams="", kargs="", fargs="", wrong, compile_error,
             autotune=False, fast_ms=0.016):
    kernel = f"{name}_kernel"
    launch = Template(AUTOTUNE_LAUNCH if autotune else PLAIN_LAUNCH).substitute(kernel=kernel, kargs=kargs)
    body = "".join(f"        {line}\n" for line in init_body.splitlines())
    fields = dict(title=title, short=title.rstrip('.'), ref_doc=ref_doc, init_sig=init_sig, init_body=body, torch_expr=torch_expr,
                  init_inputs=init_inputs, name=name, kernel=kernel, kparams=kparams, wparams=wparams,
                  kbody=kbody, fargs=fargs, launch=launch, header=AUTOTUNE_HEADER if autotune else PLAIN_HEADER)
    if autotune:
        slow = ((AUTOTUNE_HEADER.split("configs=[")[1].split("],")[0],
                 '\n        triton.Config({"BLOCK_SIZE": 512}, num_warps=1),\n    '),)
    else:
        slow = (("BLOCK_SIZE = 4096", "BLOCK_SIZE = 512"),)
    return Problem(level=level, number=number, reference=REFERENCE.substitute(fields),
                   candidate=CANDIDATE.substitute(fields), slow=slow, wrong=wrong,
                   compile_error=compile_error, runtime_error=(RUNTIME_ERROR,), fast_ms=fast_ms,
                   slow_factor=1.8)


PROBLEMS = [
    _problem(
        1, 1, "relu", "Simple model that performs a ReLU activation.",
        "ReLU clamps negative values to zero: out = max(x, 0).",
        "torch.relu(x)",
        "    out = tl.maximum(x, 0.0)",
        wrong=(("tl.maximum(x, 0.0)", "tl.maximum(x, 0.1)"),),
        compile_error=(("tl.maximum(x, 0.0)", "tl.relu(x)"),),
    ),
    _problem(
        1, 2, "gelu", "Simple model that performs a GELU activation (tanh approximation).",
        "GELU(x) = 0.5 * x * (1 + tanh(sqrt(2 / pi) * (x + 0.044715 * x^3))), as in GPT-2 and BERT.",
        'torch.nn.functional.gelu(x, approximate="tanh")',
        "    # tanh(u) = 2 / (1 + exp(-2u)) - 1, written with exp because tl has no tanh\n"
        "    inner = 0.7978845608028654 * (x + 0.044715 * x * x * x)\n"
        "    tanh_inner = 2.0 / (1.0 + tl.exp(-2.0 * inner)) - 1.0\n"
        "    out = 0.5 * x * (1.0 + tanh_inner)",
        wrong=(("0.5 * x * (1.0 + tanh_inner)", "x * (1.0 + tanh_inner)"),),
        compile_error=(("2.0 / (1.0 + tl.exp(-2.0 * inner)) - 1.0", "tl.tanh(inner)"),),
        autotune=True,
    ),
    _problem(
        1, 3, "sigmoid", "Simple model that performs a Sigmoid activation.",
        "Sigmoid squashes every value into (0, 1): out = 1 / (1 + exp(-x)).",
        "torch.sigmoid(x)",
        "    out = 1.0 / (1.0 + tl.exp(-x))",
        wrong=(("1.0 / (1.0 + tl.exp(-x))", "1.0 / (1.0 + tl.exp(x))"),),
        compile_error=(("1.0 / (1.0 + tl.exp(-x))", "tl.sigmoid(x, approx=True)"),),
    ),
    _problem(
        1, 4, "swish", "Simple model that performs a Swish (SiLU) activation.",
        "Swish multiplies the input by its sigmoid: out = x * sigmoid(x).",
        "x * torch.sigmoid(x)",
        "    out = x / (1.0 + tl.exp(-x))",
        wrong=(("x / (1.0 + tl.exp(-x))", "x / (1.0 + tl.exp(-x)) + 1.0"),),
        compile_error=(("x / (1.0 + tl.exp(-x))", "tl.silu(x)"),),
        autotune=True,
    ),
    _problem(
        1, 5, "leaky_relu", "Simple model that performs a LeakyReLU activation.",
        "LeakyReLU keeps positive values and scales negative ones by a small slope.",
        "torch.nn.functional.leaky_relu(x, negative_slope=self.negative_slope)",
        "    out = tl.where(x >= 0, x, x * negative_slope)",
        init_sig=", negative_slope: float = 0.01", init_body="self.negative_slope = negative_slope",
        init_inputs="0.01", kparams="    negative_slope,  # slope for x < 0\n",
        wparams=", negative_slope: float", kargs=", negative_slope", fargs=", self.negative_slope",
        wrong=(("x * negative_slope)", "x * 0.1)"),),
        compile_error=(("tl.where(x >= 0, x, x * negative_slope)", "tl.leaky_relu(x, negative_slope)"),),
    ),
    _problem(
        1, 6, "hardtanh", "Simple model that performs a HardTanh activation.",
        "HardTanh clamps the input into [min_val, max_val].",
        "torch.nn.functional.hardtanh(x, min_val=self.min_val, max_val=self.max_val)",
        "    out = tl.minimum(tl.maximum(x, min_val), max_val)",
        init_sig=", min_val: float = -1.0, max_val: float = 1.0",
        init_body="self.min_val = min_val\nself.max_val = max_val",
        init_inputs="-1.0, 1.0", kparams="    min_val,\n    max_val,\n",
        wparams=", min_val: float, max_val: float", kargs=", min_val, max_val",
        fargs=", self.min_val, self.max_val",
        wrong=(("tl.minimum(tl.maximum(x, min_val), max_val)", "tl.maximum(x, min_val)"),),
        compile_error=(("tl.minimum(tl.maximum(x, min_val), max_val)", "tl.clamp(x, min_val)"),),
    ),
    _problem(
        1, 15, "elu", "Simple model that performs an ELU activation.",
        "ELU keeps positive values and maps negative ones to alpha * (exp(x) - 1).",
        "torch.nn.functional.elu(x, alpha=self.alpha)",
        "    out = tl.where(x > 0, x, alpha * (tl.exp(x) - 1.0))",
        init_sig=", alpha: float = 1.0", init_body="self.alpha = alpha", init_inputs="1.0",
        kparams="    alpha,  # scale of the negative branch\n", wparams=", alpha: float", kargs=", alpha",
        fargs=", self.alpha",
        wrong=(("alpha * (tl.exp(x) - 1.0)", "alpha * tl.exp(x)"),),
        compile_error=(("tl.where(x > 0, x, alpha * (tl.exp(x) - 1.0))", "tl.elu(x, alpha)"),),
        autotune=True,
    ),
    _problem(
        2, 5, "scale_swish_clamp", "Model that scales the input, adds a bias, applies Swish and clamps.",
        "out = clamp(swish(x * scale + bias), -clamp_val, clamp_val); a typical fused epilogue chain.",
        "torch.clamp((x * self.scale + self.bias) * torch.sigmoid(x * self.scale + self.bias), "
        "-self.clamp_val, self.clamp_val)",
        "    y = x * scale + bias\n"
        "    y = y / (1.0 + tl.exp(-y))\n"
        "    out = tl.minimum(tl.maximum(y, -clamp_val), clamp_val)",
        init_sig=", scale: float = 2.0, bias: float = 0.5, clamp_val: float = 1.5",
        init_body="self.scale = scale\nself.bias = bias\nself.clamp_val = clamp_val",
        init_inputs="2.0, 0.5, 1.5", kparams="    scale,\n    bias,\n    clamp_val,\n",
        wparams=", scale: float, bias: float, clamp_val: float", kargs=", scale, bias, clamp_val",
        fargs=", self.scale, self.bias, self.clamp_val",
        wrong=(("y = x * scale + bias", "y = x * scale"),),
        compile_error=(("y = y / (1.0 + tl.exp(-y))", "y = tl.swish(y)"),),
        autotune=True, fast_ms=0.018,
    ),
]
