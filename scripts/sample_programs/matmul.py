"""Problems built on one tiled ``tl.dot`` matmul kernel with a per-problem fused epilogue: level-1 matmul and
pointwise conv, level-2 GEMM/conv + epilogue chains, level-3 MLP and residual MLP block."""

from __future__ import annotations

from string import Template

from . import Problem

IMPORTS = '''import torch
import torch.nn as nn
import triton
import triton.language as tl

'''

PLAIN_HEADER = "@triton.jit"
AUTOTUNE_CONFIGS = '''        triton.Config({"BLOCK_M": 64, "BLOCK_N": 64, "BLOCK_K": 32}, num_warps=4, num_stages=3),
        triton.Config({"BLOCK_M": 128, "BLOCK_N": 64, "BLOCK_K": 32}, num_warps=8, num_stages=3),
'''
AUTOTUNE_HEADER = '''@triton.autotune(
    configs=[
''' + AUTOTUNE_CONFIGS + '''    ],
    key=["M", "N", "K"],
)
@triton.jit'''
SLOW_AUTOTUNE = ((AUTOTUNE_CONFIGS,
                  '''        triton.Config({"BLOCK_M": 32, "BLOCK_N": 32, "BLOCK_K": 32}, num_warps=1, num_stages=1),\n'''),)
SLOW_PLAIN = (("BLOCK_M, BLOCK_N, BLOCK_K = 64, 64, 32", "BLOCK_M, BLOCK_N, BLOCK_K = 32, 32, 32"),)
PLAIN_GRID = '''    BLOCK_M, BLOCK_N, BLOCK_K = 64, 64, 32
    grid = (triton.cdiv(M, BLOCK_M), triton.cdiv(N, BLOCK_N))'''
PLAIN_META = ", BLOCK_M=BLOCK_M, BLOCK_N=BLOCK_N, BLOCK_K=BLOCK_K"
AUTOTUNE_GRID = '''    grid = lambda meta: (triton.cdiv(M, meta["BLOCK_M"]), triton.cdiv(N, meta["BLOCK_N"]))'''

KERNEL = Template('''$header
def $kernel(
    a_ptr,
    b_ptr,
    c_ptr,
$kparams    M,
    N,
    K,
    stride_am,
    stride_ak,
    stride_bk,
    stride_bn,
    stride_cm,
    stride_cn,
    BLOCK_M: tl.constexpr,
    BLOCK_N: tl.constexpr,
    BLOCK_K: tl.constexpr,
):
    """C[M, N] = epilogue(A[M, K] @ B[K, N]); one program per BLOCK_M x BLOCK_N tile of C.

    B is addressed through its strides, so a torch.nn.Linear weight of shape (N, K) is used as B = W^T
    without a transposed copy. The K loop accumulates in fp32 with IEEE precision (no TF32), so the result
    matches the fp32 reference to ~1e-5. Every load is masked, so M, N and K need not be multiples of the
    block sizes.
    """
    pid_m = tl.program_id(0)
    pid_n = tl.program_id(1)
    offs_m = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_n = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    offs_k = tl.arange(0, BLOCK_K)
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for k0 in range(0, K, BLOCK_K):
        k_idx = k0 + offs_k
        a_mask = (offs_m[:, None] < M) & (k_idx[None, :] < K)
        b_mask = (k_idx[:, None] < K) & (offs_n[None, :] < N)
        a = tl.load(a_ptr + offs_m[:, None] * stride_am + k_idx[None, :] * stride_ak, mask=a_mask, other=0.0)
        b = tl.load(b_ptr + k_idx[:, None] * stride_bk + offs_n[None, :] * stride_bn, mask=b_mask, other=0.0)
        acc += tl.dot(a, b, input_precision="ieee")
    c_mask = (offs_m[:, None] < M) & (offs_n[None, :] < N)
$epilogue
    tl.store(c_ptr + offs_m[:, None] * stride_cm + offs_n[None, :] * stride_cn, acc, mask=c_mask)

''')

LINEAR_WRAPPER = Template('''
def $wrapper(x: torch.Tensor, weight: torch.Tensor$wparams) -> torch.Tensor:
    """$wdoc

    x: (M, K) activations, weight: (N, K) as stored by nn.Linear; returns (M, N) on x's device.
    """
    x = x.contiguous()
    M, K = x.shape
    N = weight.shape[0]
    out = torch.empty((M, N), device=x.device, dtype=torch.float32)
$grid
    $kernel[grid](
        x, weight, out$kargs,
        M, N, K,
        x.stride(0), x.stride(1),
        weight.stride(1), weight.stride(0),
        out.stride(0), out.stride(1)$meta,
    )
    return out

''')

BIAS = '''    bias = tl.load(bias_ptr + offs_n, mask=offs_n < N, other=0.0)
    acc = acc + bias[None, :]'''
TRANS_DOT = (('tl.dot(a, b, input_precision="ieee")', 'tl.dot(a, tl.trans(b), input_precision="ieee")'),)
NO_MATMUL = (('tl.dot(a, b, input_precision="ieee")', "tl.matmul(a, b)"),)
UNPACK = (("M, K = x.shape", "M, K = x.shape[0], x.shape[2]"),)


def _candidate(kernel, kparams, epilogue, wrapper, wdoc, wparams, kargs, model_new, autotune):
    kernel_text = KERNEL.substitute(header=AUTOTUNE_HEADER if autotune else PLAIN_HEADER, kernel=kernel,
                                    kparams=kparams, epilogue=epilogue)
    wrapper_text = LINEAR_WRAPPER.substitute(
        wrapper=wrapper, wdoc=wdoc, wparams=wparams, kernel=kernel, kargs=kargs,
        grid=AUTOTUNE_GRID if autotune else PLAIN_GRID, meta="" if autotune else PLAIN_META)
    return IMPORTS + "\n" + kernel_text + wrapper_text + "\n" + model_new


def _reference(title, doc, init, forward, sizes, inputs, init_inputs):
    return f'''import torch
import torch.nn as nn


class Model(nn.Module):
    """{title}

{doc}
    """

{init}

{forward}


{sizes}


def get_inputs():
{inputs}


def get_init_inputs():
    return {init_inputs}
'''


MATMUL = Problem(
    level=1, number=13,
    reference=_reference(
        "Simple model that performs a single square matrix multiplication (C = A * B).",
        "    Both operands are dense fp32 matrices of shape (N, N). The reference calls cuBLAS through\n"
        "    torch.matmul; a Triton kernel has to tile the product and keep the tiles in shared memory to get\n"
        "    close to it.",
        "    def __init__(self):\n        super(Model, self).__init__()",
        '''    def forward(self, A: torch.Tensor, B: torch.Tensor) -> torch.Tensor:
        """
        Performs the matrix multiplication.

        Args:
            A (torch.Tensor): Input matrix A of shape (N, N).
            B (torch.Tensor): Input matrix B of shape (N, N).

        Returns:
            torch.Tensor: Output matrix C of shape (N, N).
        """
        return torch.matmul(A, B)''',
        "N = 256",
        "    A = torch.randn(N, N)\n    B = torch.randn(N, N)\n    return [A, B]",
        "[]  # No special initialization inputs needed"),
    candidate=_candidate(
        "matmul_kernel", "", "    # plain matmul: no epilogue", "triton_matmul",
        "C = A @ B with a tiled Triton kernel (B passed as a (N, K) weight view).", "", "",
        '''class ModelNew(nn.Module):
    """C = A * B with an autotuned, tiled Triton matmul (fp32 accumulate, IEEE precision)."""

    def __init__(self):
        super(ModelNew, self).__init__()

    def forward(self, A: torch.Tensor, B: torch.Tensor) -> torch.Tensor:
        # triton_matmul expects the second operand as (N, K): pass B^T as a strided view, no copy
        return triton_matmul(A, B.t())
''', autotune=True),
    slow=SLOW_AUTOTUNE + (("device=x.device", 'device="cuda"'),),
    wrong=(("range(0, K, BLOCK_K)", "range(0, K - BLOCK_K, BLOCK_K)"),),
    compile_error=TRANS_DOT, runtime_error=UNPACK, fast_ms=0.031, slow_factor=3.5,
)

POINTWISE_CONV = Problem(
    level=1, number=14,
    reference=_reference(
        "Performs a pointwise 2D convolution operation.",
        "    A 1x1 convolution mixes channels independently at every pixel, so it is a matrix multiplication\n"
        "    of the (N*H*W, C_in) channels-last activations with the (C_in, C_out) weight.\n\n"
        "    Args:\n        in_channels (int): Number of channels in the input tensor.\n"
        "        out_channels (int): Number of channels produced by the convolution.\n"
        "        bias (bool, optional): If `True`, adds a learnable bias to the output. Defaults to `False`.",
        '''    def __init__(self, in_channels: int, out_channels: int, bias: bool = False):
        super(Model, self).__init__()
        self.conv1d = nn.Conv2d(in_channels, out_channels, kernel_size=1, stride=1, padding=0, bias=bias)''',
        '''    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """
        Performs the pointwise 2D convolution.

        Args:
            x (torch.Tensor): Input tensor of shape (batch_size, in_channels, height, width).

        Returns:
            torch.Tensor: Output tensor of shape (batch_size, out_channels, height, width).
        """
        return self.conv1d(x)''',
        "batch_size = 8\nin_channels = 64\nout_channels = 128\nheight = 16\nwidth = 16",
        "    x = torch.randn(batch_size, in_channels, height, width)\n    return [x]",
        "[in_channels, out_channels]"),
    candidate=_candidate(
        "pointwise_conv_kernel", "", "    # no bias: the benchmark builds the conv with bias=False",
        "triton_pointwise_conv", "1x1 convolution as a GEMM over channels-last pixels.", "", "",
        '''class ModelNew(nn.Module):
    """Pointwise 2D convolution as a Triton GEMM.

    The input is turned channels-last, multiplied by the (C_out, C_in) weight and turned back to NCHW.
    The conv module is kept only as the parameter holder, so the reference weights load unchanged.
    """

    def __init__(self, in_channels: int, out_channels: int, bias: bool = False):
        super(ModelNew, self).__init__()
        self.conv1d = nn.Conv2d(in_channels, out_channels, kernel_size=1, stride=1, padding=0, bias=bias)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        n, c_in, h, w = x.shape
        x2d = x.permute(0, 2, 3, 1).reshape(-1, c_in)  # (N*H*W, C_in), channels-last
        weight = self.conv1d.weight.view(self.conv1d.out_channels, c_in)
        out2d = triton_pointwise_conv(x2d, weight)
        return out2d.view(n, h, w, -1).permute(0, 3, 1, 2).contiguous()
''', autotune=False),
    slow=SLOW_PLAIN,
    wrong=(("weight.stride(1), weight.stride(0)", "weight.stride(0), weight.stride(1)"),),
    compile_error=TRANS_DOT, runtime_error=((".reshape(-1, c_in)", ".view(-1, c_in)"),),
    fast_ms=0.027, slow_factor=2.8,
)


def _linear_reference(title, doc, init, forward, init_inputs, sizes="batch_size = 256\nin_features = 256\nout_features = 256"):
    return _reference(title, doc, init, forward, sizes,
                      "    x = torch.randn(batch_size, in_features)\n    return [x]", init_inputs)


def _linear_problem(number, title, doc, init, forward, init_inputs, *, kernel, kparams, epilogue, wparams,
                    kargs, model_new, autotune, wrong, compile_error, slow_extra=(), fast_ms=0.034):
    init_sig = init.splitlines()[0].replace("    def __init__(self", "")
    model_new_text = f'''class ModelNew(nn.Module):
    """{title.rstrip(".")} -- Triton version.

    The GEMM and its epilogue run in one kernel: the (M, N) product never round-trips through global
    memory before the elementwise tail is applied. Parameters are declared exactly as in the reference,
    so its state dict loads into this module unchanged.
    """

    def __init__(self{init_sig}
{init.split(chr(10), 1)[1].replace("super(Model, self)", "super(ModelNew, self)")}

{model_new}'''
    return Problem(
        level=2, number=number,
        reference=_linear_reference(title, doc, init, forward, init_inputs),
        candidate=_candidate(kernel, kparams, epilogue, "triton_fused_linear",
                             "GEMM with a fused epilogue: x @ weight^T, then the elementwise tail.",
                             wparams, kargs, model_new_text, autotune),
        slow=(SLOW_AUTOTUNE if autotune else SLOW_PLAIN) + slow_extra, wrong=wrong,
        compile_error=compile_error, runtime_error=UNPACK, fast_ms=fast_ms, slow_factor=3.0)


GEMM_BIAS_RELU = _linear_problem(
    1, "Simple model that performs a matrix multiplication, adds a bias term, and applies ReLU.",
    "    x = relu(x @ W^T + bias), with a separate bias parameter (the GEMM itself has none).",
    '''    def __init__(self, in_features: int, out_features: int, bias_shape: tuple):
        super(Model, self).__init__()
        self.gemm = nn.Linear(in_features, out_features, bias=False)
        self.bias = nn.Parameter(torch.randn(bias_shape) * 0.1)''',
    '''    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """
        Args:
            x (torch.Tensor): Input tensor with shape (batch_size, in_features).
        Returns:
            torch.Tensor: Output tensor with shape (batch_size, out_features).
        """
        x = self.gemm(x)
        x = x + self.bias
        x = torch.relu(x)
        return x''',
    "[in_features, out_features, (out_features,)]",
    kernel="gemm_bias_relu_kernel", kparams="    bias_ptr,\n",
    epilogue=BIAS + "\n    acc = tl.maximum(acc, 0.0)",
    wparams=", bias: torch.Tensor", kargs=", bias",
    model_new='''    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return triton_fused_linear(x, self.gemm.weight, self.bias)
''', autotune=False,
    wrong=(("    acc = acc + bias[None, :]\n", ""),), compile_error=TRANS_DOT,
    slow_extra=(("device=x.device", 'device="cuda"'),),
)

GEMM_SIGMOID_SCALING_RESIDUAL = _linear_problem(
    2, "Model implementing the pattern Gemm_Sigmoid_Scaling_ResidualAdd.",
    "    x = gemm(x); x = sigmoid(x) * scaling_factor + x. The residual is the GEMM output itself.",
    '''    def __init__(self, input_size: int, hidden_size: int, scaling_factor: float):
        super(Model, self).__init__()
        self.gemm = nn.Linear(input_size, hidden_size)
        self.scaling_factor = scaling_factor''',
    '''    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """
        Args:
            x (torch.Tensor): Input tensor of shape (batch_size, input_size).
        Returns:
            torch.Tensor: Output tensor of shape (batch_size, hidden_size).
        """
        x = self.gemm(x)
        original_x = x
        x = torch.sigmoid(x)
        x = x * self.scaling_factor
        x = x + original_x
        return x''',
    "[in_features, out_features, 2.0]",
    kernel="gemm_sigmoid_residual_kernel", kparams="    bias_ptr,\n    scaling_factor,\n",
    epilogue=BIAS + "\n    # sigmoid(h) * scale + h, with h the biased GEMM output\n"
    "    acc = acc + scaling_factor / (1.0 + tl.exp(-acc))",
    wparams=", bias: torch.Tensor, scaling_factor: float", kargs=", bias, scaling_factor",
    model_new='''    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return triton_fused_linear(x, self.gemm.weight, self.gemm.bias, self.scaling_factor)
''', autotune=True,
    wrong=(("acc = acc + scaling_factor / (1.0 + tl.exp(-acc))", "acc = scaling_factor / (1.0 + tl.exp(-acc))"),),
    compile_error=NO_MATMUL,
)

GEMM_SWISH_SCALING = _linear_problem(
    6, "Simple model that performs a matrix multiplication, applies Swish activation, and scales the result.",
    "    x = linear(x); x = x * sigmoid(x) * scaling_factor.",
    '''    def __init__(self, in_features: int, out_features: int, scaling_factor: float):
        super(Model, self).__init__()
        self.matmul = nn.Linear(in_features, out_features)
        self.scaling_factor = scaling_factor''',
    '''    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = self.matmul(x)
        x = x * torch.sigmoid(x)  # Swish activation
        x = x * self.scaling_factor
        return x''',
    "[in_features, out_features, 2.0]",
    kernel="gemm_swish_kernel", kparams="    bias_ptr,\n    scaling_factor,\n",
    epilogue=BIAS + "\n    acc = acc / (1.0 + tl.exp(-acc)) * scaling_factor",
    wparams=", bias: torch.Tensor, scaling_factor: float", kargs=", bias, scaling_factor",
    model_new='''    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return triton_fused_linear(x, self.matmul.weight, self.matmul.bias, self.scaling_factor)
''', autotune=False,
    wrong=((" * scaling_factor\n", "\n"),), compile_error=NO_MATMUL,
)

CONV_SCALE_BIAS = Problem(
    level=2, number=3,
    reference=_reference(
        "Simple model that performs a 1x1 convolution, scales the output, and adds a bias term.",
        "    x = conv1x1(x) * scale + bias, with bias of shape (out_channels, 1, 1) broadcast over pixels.",
        '''    def __init__(self, in_channels: int, out_channels: int, scale: float, bias_shape: tuple):
        super(Model, self).__init__()
        self.conv = nn.Conv2d(in_channels, out_channels, kernel_size=1)
        self.scale = scale
        self.bias = nn.Parameter(torch.randn(bias_shape) * 0.02)''',
        '''    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = self.conv(x)
        x = x * self.scale
        x = x + self.bias
        return x''',
        "batch_size = 8\nin_channels = 64\nout_channels = 128\nheight = width = 16\nscale = 2.0\n"
        "bias_shape = (out_channels, 1, 1)",
        "    x = torch.randn(batch_size, in_channels, height, width)\n    return [x]",
        "[in_channels, out_channels, scale, bias_shape]"),
    candidate=_candidate(
        "conv1x1_scale_bias_kernel", "    conv_bias_ptr,\n    extra_bias_ptr,\n    scale,\n",
        '''    conv_b = tl.load(conv_bias_ptr + offs_n, mask=offs_n < N, other=0.0)
    extra_b = tl.load(extra_bias_ptr + offs_n, mask=offs_n < N, other=0.0)
    acc = (acc + conv_b[None, :]) * scale + extra_b[None, :]''',
        "triton_conv1x1_scale_bias", "1x1 conv as GEMM over channels-last pixels, bias/scale/bias fused.",
        ", conv_bias: torch.Tensor, extra_bias: torch.Tensor, scale: float",
        ", conv_bias, extra_bias, scale",
        '''class ModelNew(nn.Module):
    """Conv2d(1x1) + scale + bias add, fused into one Triton GEMM over channels-last pixels."""

    def __init__(self, in_channels: int, out_channels: int, scale: float, bias_shape: tuple):
        super(ModelNew, self).__init__()
        self.conv = nn.Conv2d(in_channels, out_channels, kernel_size=1)
        self.scale = scale
        self.bias = nn.Parameter(torch.randn(bias_shape) * 0.02)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        n, c_in, h, w = x.shape
        x2d = x.permute(0, 2, 3, 1).reshape(-1, c_in)
        weight = self.conv.weight.view(self.conv.out_channels, c_in)
        out2d = triton_conv1x1_scale_bias(x2d, weight, self.conv.bias, self.bias.view(-1), self.scale)
        return out2d.view(n, h, w, -1).permute(0, 3, 1, 2).contiguous()
''', autotune=False),
    slow=SLOW_PLAIN,
    wrong=(("(acc + conv_b[None, :]) * scale", "acc * scale"),),
    compile_error=(("tl.load(conv_bias_ptr + offs_n", "tl.load_vector(conv_bias_ptr + offs_n"),),
    runtime_error=(("n, c_in, h, w = x.shape", "n, c_in, hw = x.shape"),),
    fast_ms=0.029, slow_factor=2.6,
)

PROBLEMS = [MATMUL, POINTWISE_CONV, GEMM_BIAS_RELU, GEMM_SIGMOID_SCALING_RESIDUAL, CONV_SCALE_BIAS,
            GEMM_SWISH_SCALING]
