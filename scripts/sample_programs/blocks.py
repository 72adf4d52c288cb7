"""Level-3 problems: small network blocks (MLP, single-head attention, residual MLP block)."""

from __future__ import annotations

from . import Problem
from .matmul import BIAS, NO_MATMUL, SLOW_PLAIN, TRANS_DOT, UNPACK, _candidate, _reference

MLP_EPILOGUE = BIAS + "\n    if APPLY_RELU:\n        acc = tl.maximum(acc, 0.0)"

MLP = Problem(
    level=3, number=1,
    reference=_reference(
        "Multi-layer perceptron: Linear + ReLU hidden layers followed by a Linear output layer.",
        "    Args:\n        input_size: The number of input features\n"
        "        layer_sizes: A list of ints containing the sizes of each hidden layer\n"
        "        output_size: The number of output features",
        '''    def __init__(self, input_size: int, layer_sizes: list, output_size: int):
        super(Model, self).__init__()
        layers = []
        current_input_size = input_size
        for layer_size in layer_sizes:
            layers.append(nn.Linear(current_input_size, layer_size))
            layers.append(nn.ReLU())
            current_input_size = layer_size
        layers.append(nn.Linear(current_input_size, output_size))
        self.network = nn.Sequential(*layers)''',
        '''    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """
        :param x: The input tensor, shape (batch_size, input_size)
        :return: The output tensor, shape (batch_size, output_size)
        """
        return self.network(x)''',
        "batch_size = 256\ninput_size = 256\nlayer_sizes = [256, 256]\noutput_size = 128",
        "    return [torch.randn(batch_size, input_size)]",
        "[input_size, layer_sizes, output_size]"),
    candidate=_candidate(
        "linear_relu_kernel", "    bias_ptr,\n    APPLY_RELU: tl.constexpr,\n", MLP_EPILOGUE, "triton_linear",
        "y = x @ weight^T + bias, optionally followed by ReLU, in one kernel.",
        ", bias: torch.Tensor, apply_relu: bool", ", bias, apply_relu",
        '''class ModelNew(nn.Module):
    """MLP where every Linear (+ ReLU) is one fused Triton GEMM launch.

    The nn.Sequential is kept as the parameter container (same state-dict keys as the reference); the
    forward pass walks its Linear layers and fuses each following ReLU into the GEMM epilogue.
    """

    def __init__(self, input_size: int, layer_sizes: list, output_size: int):
        super(ModelNew, self).__init__()
        layers = []
        current_input_size = input_size
        for layer_size in layer_sizes:
            layers.append(nn.Linear(current_input_size, layer_size))
            layers.append(nn.ReLU())
            current_input_size = layer_size
        layers.append(nn.Linear(current_input_size, output_size))
        self.network = nn.Sequential(*layers)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        linears = [m for m in self.network if isinstance(m, nn.Linear)]
        for i, layer in enumerate(linears):
            apply_relu = i < len(linears) - 1
            x = triton_linear(x, layer.weight, layer.bias, apply_relu)
        return x
''', autotune=False),
    slow=SLOW_PLAIN + (("device=x.device", 'device="cuda"'),),
    wrong=(("apply_relu = i < len(linears) - 1", "apply_relu = True"),),
    compile_error=NO_MATMUL, runtime_error=UNPACK, fast_ms=0.052, slow_factor=2.7,
)

RESIDUAL = Problem(
    level=3, number=3,
    reference=_reference(
        "Residual MLP block: y = x + fc2(relu(fc1(x))).",
        "    The feed-forward half of a pre-norm transformer layer without the norm: two Linear layers with\n"
        "    a ReLU in between and an identity shortcut around them.",
        '''    def __init__(self, dim: int, hidden_dim: int):
        super(Model, self).__init__()
        self.fc1 = nn.Linear(dim, hidden_dim)
        self.fc2 = nn.Linear(hidden_dim, dim)''',
        '''    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """
        :param x: Input tensor, shape (batch_size, dim)
        :return: Output tensor, shape (batch_size, dim)
        """
        return x + self.fc2(torch.relu(self.fc1(x)))''',
        "batch_size = 256\ndim = 256\nhidden_dim = 256",
        "    return [torch.randn(batch_size, dim)]",
        "[dim, hidden_dim]"),
    candidate=_candidate(
        "fused_linear_kernel", "    bias_ptr,\n    res_ptr,\n    APPLY_RELU: tl.constexpr,\n    ADD_RESIDUAL: tl.constexpr,\n",
        BIAS + '''
    if APPLY_RELU:
        acc = tl.maximum(acc, 0.0)
    if ADD_RESIDUAL:
        # the shortcut has the same (M, N) layout as the output
        res = tl.load(res_ptr + offs_m[:, None] * stride_cm + offs_n[None, :] * stride_cn, mask=c_mask, other=0.0)
        acc = acc + res''',
        "triton_linear", "y = x @ weight^T + bias, optional ReLU, optional residual add, in one kernel.",
        ", bias: torch.Tensor, residual: torch.Tensor, apply_relu: bool, add_residual: bool",
        ", bias, residual, apply_relu, add_residual",
        '''class ModelNew(nn.Module):
    """Residual MLP block with two fused Triton GEMM launches.

    Launch 1: h = relu(x @ W1^T + b1). Launch 2: y = h @ W2^T + b2 + x, with the shortcut added in the
    epilogue, so neither the pre-activation nor the fc2 output is written to memory separately.
    """

    def __init__(self, dim: int, hidden_dim: int):
        super(ModelNew, self).__init__()
        self.fc1 = nn.Linear(dim, hidden_dim)
        self.fc2 = nn.Linear(hidden_dim, dim)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x.contiguous()
        h = triton_linear(x, self.fc1.weight, self.fc1.bias, x, True, False)
        return triton_linear(h, self.fc2.weight, self.fc2.bias, x, False, True)
''', autotune=False),
    slow=SLOW_PLAIN,
    wrong=(("self.fc2.bias, x, False, True)", "self.fc2.bias, x, False, False)"),),
    compile_error=TRANS_DOT, runtime_error=UNPACK, fast_ms=0.041, slow_factor=2.9,
)

ATTENTION_REFERENCE = '''import math

import torch
import torch.nn as nn


class Model(nn.Module):
    """Single-head scaled dot-product self-attention.

    out = softmax(Q K^T / sqrt(d)) V with Q, K, V = x W_q, x W_k, x W_v (no masking, no dropout), followed
    by an output projection. Sequence length and head size are small enough that a whole row of scores
    fits in registers, so a fused kernel never writes the (seq_len, seq_len) score matrix to memory.

    Shapes:
        x:   (batch_size, seq_len, embed_dim)
        out: (batch_size, seq_len, embed_dim)
    """

    def __init__(self, embed_dim: int):
        super(Model, self).__init__()
        self.q_proj = nn.Linear(embed_dim, embed_dim)
        self.k_proj = nn.Linear(embed_dim, embed_dim)
        self.v_proj = nn.Linear(embed_dim, embed_dim)
        self.out_proj = nn.Linear(embed_dim, embed_dim)
        self.scale = 1.0 / math.sqrt(embed_dim)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        q = self.q_proj(x)
        k = self.k_proj(x)
        v = self.v_proj(x)
        scores = torch.matmul(q, k.transpose(-2, -1)) * self.scale
        attn = torch.softmax(scores, dim=-1)
        return self.out_proj(torch.matmul(attn, v))


batch_size = 4
seq_len = 256
embed_dim = 64


def get_inputs():
    return [torch.randn(batch_size, seq_len, embed_dim)]


def get_init_inputs():
    return [embed_dim]
'''

ATTENTION_CANDIDATE = '''import math

import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def attention_kernel(
    q_ptr,
    k_ptr,
    v_ptr,
    o_ptr,
    seq_len,
    scale,
    stride_b,
    stride_s,
    BLOCK_M: tl.constexpr,
    BLOCK_N: tl.constexpr,
    HEAD_DIM: tl.constexpr,
):
    """One program per (batch, BLOCK_M query rows); all keys (BLOCK_N >= seq_len) are handled at once.

    S = Q K^T * scale is formed with tl.dot, masked key columns are set to -inf before the row softmax,
    and P V is accumulated with a second tl.dot. The score matrix lives only in registers.
    """
    pid_b = tl.program_id(0)
    pid_m = tl.program_id(1)
    offs_m = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_n = tl.arange(0, BLOCK_N)
    offs_d = tl.arange(0, HEAD_DIM)
    base = pid_b * stride_b
    q_mask = offs_m[:, None] < seq_len
    kv_mask = offs_n[:, None] < seq_len
    q = tl.load(q_ptr + base + offs_m[:, None] * stride_s + offs_d[None, :], mask=q_mask, other=0.0)
    k = tl.load(k_ptr + base + offs_n[:, None] * stride_s + offs_d[None, :], mask=kv_mask, other=0.0)
    v = tl.load(v_ptr + base + offs_n[:, None] * stride_s + offs_d[None, :], mask=kv_mask, other=0.0)
    s = tl.dot(q, tl.trans(k), input_precision="ieee") * scale
    s = tl.where(offs_n[None, :] < seq_len, s, float("-inf"))
    s_max = tl.max(s, axis=1)
    p = tl.exp(s - s_max[:, None])
    p = p / tl.sum(p, axis=1)[:, None]
    out = tl.dot(p, v, input_precision="ieee")
    tl.store(o_ptr + base + offs_m[:, None] * stride_s + offs_d[None, :], out, mask=q_mask)


def triton_attention(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, scale: float) -> torch.Tensor:
    """softmax(q k^T * scale) v for (batch, seq_len, head_dim) tensors of the same layout."""
    q, k, v = q.contiguous(), k.contiguous(), v.contiguous()
    batch, seq_len, head_dim = q.shape
    out = torch.empty_like(q)
    BLOCK_M = 64
    BLOCK_N = triton.next_power_of_2(seq_len)
    grid = (batch, triton.cdiv(seq_len, BLOCK_M))
    attention_kernel[grid](
        q, k, v, out, seq_len, scale, q.stride(0), q.stride(1),
        BLOCK_M=BLOCK_M, BLOCK_N=BLOCK_N, HEAD_DIM=head_dim, num_warps=4,
    )
    return out


class ModelNew(nn.Module):
    """Single-head attention with the score/softmax/PV part fused into one Triton kernel.

    The projections stay on cuBLAS (they are plain GEMMs); the fused kernel removes the two
    (seq_len, seq_len) round trips through global memory that the eager version makes.
    """

    def __init__(self, embed_dim: int):
        super(ModelNew, self).__init__()
        self.q_proj = nn.Linear(embed_dim, embed_dim)
        self.k_proj = nn.Linear(embed_dim, embed_dim)
        self.v_proj = nn.Linear(embed_dim, embed_dim)
        self.out_proj = nn.Linear(embed_dim, embed_dim)
        self.scale = 1.0 / math.sqrt(embed_dim)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        q = self.q_proj(x)
        k = self.k_proj(x)
        v = self.v_proj(x)
        return self.out_proj(triton_attention(q, k, v, self.scale))
'''

ATTENTION = Problem(
    level=3, number=2, reference=ATTENTION_REFERENCE, candidate=ATTENTION_CANDIDATE,
    slow=(("BLOCK_M = 64", "BLOCK_M = 16"), ("num_warps=4", "num_warps=1")),
    wrong=(("s = tl.dot(q, tl.trans(k), input_precision=\"ieee\") * scale",
            "s = tl.dot(q, tl.trans(k), input_precision=\"ieee\")"),),
    compile_error=(("tl.dot(p, v, input_precision=\"ieee\")", "tl.dot(p, tl.trans(v), input_precision=\"ieee\")"),),
    runtime_error=(("batch, seq_len, head_dim = q.shape", "batch, seq_len, head_dim = q.view(-1, q.shape[-1]).shape"),),
    fast_ms=0.058, slow_factor=2.4,
)

PROBLEMS = [MLP, ATTENTION, RESIDUAL]
