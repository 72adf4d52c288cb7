"""Candidate parts for the near-duplicate tests: a base Triton program, its near-copies (renamed, re-commented,
a constant changed), programs that do something else, and a chain (A ~ B ~ C, A and C not alike); a store built of
them (`build_neardup_store`, `build_store`)."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from queries.store import INDEX_FILE
from tests.fixtures import REFERENCE

BASE = '''
import torch
import triton
import triton.language as tl


@triton.jit
def add_relu_kernel(x_ptr, y_ptr, out_ptr, n_elements, BLOCK_SIZE: tl.constexpr):
    pid = tl.program_id(axis=0)
    block_start = pid * BLOCK_SIZE
    offsets = block_start + tl.arange(0, BLOCK_SIZE)
    mask = offsets < n_elements
    x = tl.load(x_ptr + offsets, mask=mask)
    y = tl.load(y_ptr + offsets, mask=mask)
    result = tl.maximum(x + y, 0.0)
    tl.store(out_ptr + offsets, result, mask=mask)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x, y):
        out = torch.empty_like(x)
        n_elements = out.numel()
        grid = lambda meta: (triton.cdiv(n_elements, meta["BLOCK_SIZE"]),)
        add_relu_kernel[grid](x, y, out, n_elements, BLOCK_SIZE=1024)
        return out
'''

RENAMES = {"add_relu_kernel": "fused_kernel", "x_ptr": "a_ptr", "y_ptr": "b_ptr", "out_ptr": "c_ptr",
           "n_elements": "numel", "BLOCK_SIZE": "BLOCK", "block_start": "start", "offsets": "offs",
           "result": "acc"}


def renamed() -> str:
    text = BASE
    for old, new in RENAMES.items():
        text = text.replace(old, new)
    return text


def recommented() -> str:
    return (BASE.replace("    pid = ", "    # each program handles one block of elements\n    pid = ")
            .replace("    result = ", "    # fused add and ReLU\n    result = ")
            .replace("class ModelNew(nn.Module):\n", 'class ModelNew(nn.Module):\n    """Fused add + ReLU in Triton."""\n\n')
            .replace("        return out\n", "        return out  # same shape as x\n"))


def constant_changed() -> str:
    return BASE.replace("BLOCK_SIZE=1024", "BLOCK_SIZE=256")


NEAR_COPIES = {"renamed": renamed, "recommented": recommented, "constant_changed": constant_changed}

SOFTMAX = '''
import torch
import triton
import triton.language as tl


@triton.jit
def softmax_kernel(output_ptr, input_ptr, input_row_stride, output_row_stride, n_cols, BLOCK_SIZE: tl.constexpr):
    row_idx = tl.program_id(0)
    row_start_ptr = input_ptr + row_idx * input_row_stride
    col_offsets = tl.arange(0, BLOCK_SIZE)
    input_ptrs = row_start_ptr + col_offsets
    row = tl.load(input_ptrs, mask=col_offsets < n_cols, other=-float("inf"))
    row_minus_max = row - tl.max(row, axis=0)
    numerator = tl.exp(row_minus_max)
    denominator = tl.sum(numerator, axis=0)
    softmax_output = numerator / denominator
    output_row_start_ptr = output_ptr + row_idx * output_row_stride
    tl.store(output_row_start_ptr + col_offsets, softmax_output, mask=col_offsets < n_cols)


class ModelNew(nn.Module):
    def forward(self, x):
        n_rows, n_cols = x.shape
        y = torch.empty_like(x)
        softmax_kernel[(n_rows,)](y, x, x.stride(0), y.stride(0), n_cols, BLOCK_SIZE=triton.next_power_of_2(n_cols))
        return y
'''

MATMUL = '''
import torch
import triton
import triton.language as tl


@triton.jit
def matmul_kernel(a_ptr, b_ptr, c_ptr, M, N, K, stride_am, stride_ak, stride_bk, stride_bn, stride_cm, stride_cn,
                  BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr):
    pid_m = tl.program_id(0)
    pid_n = tl.program_id(1)
    rm = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    rn = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    rk = tl.arange(0, BLOCK_K)
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for k in range(0, K, BLOCK_K):
        a = tl.load(a_ptr + rm[:, None] * stride_am + (k + rk)[None, :] * stride_ak)
        b = tl.load(b_ptr + (k + rk)[:, None] * stride_bk + rn[None, :] * stride_bn)
        acc += tl.dot(a, b)
    tl.store(c_ptr + rm[:, None] * stride_cm + rn[None, :] * stride_cn, acc)


class ModelNew(nn.Module):
    def forward(self, A, B):
        M, K = A.shape
        _, N = B.shape
        C = torch.empty((M, N), device=A.device, dtype=torch.float32)
        grid = (triton.cdiv(M, 64), triton.cdiv(N, 64))
        matmul_kernel[grid](A, B, C, M, N, K, A.stride(0), A.stride(1), B.stride(0), B.stride(1),
                            C.stride(0), C.stride(1), BLOCK_M=64, BLOCK_N=64, BLOCK_K=32)
        return C
'''

LAYERNORM = '''
import torch
import triton
import triton.language as tl


@triton.jit
def layer_norm_fwd(X, Y, W, B, stride, N, eps, BLOCK_SIZE: tl.constexpr):
    row = tl.program_id(0)
    X += row * stride
    Y += row * stride
    cols = tl.arange(0, BLOCK_SIZE)
    x = tl.load(X + cols, mask=cols < N, other=0.).to(tl.float32)
    mean = tl.sum(x, axis=0) / N
    xbar = tl.where(cols < N, x - mean, 0.)
    var = tl.sum(xbar * xbar, axis=0) / N
    rstd = 1 / tl.sqrt(var + eps)
    w = tl.load(W + cols, mask=cols < N)
    b = tl.load(B + cols, mask=cols < N)
    tl.store(Y + cols, xbar * rstd * w + b, mask=cols < N)


class ModelNew(nn.Module):
    def __init__(self, normalized_shape):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(normalized_shape))
        self.bias = nn.Parameter(torch.zeros(normalized_shape))

    def forward(self, x):
        y = torch.empty_like(x)
        x2 = x.reshape(-1, x.shape[-1])
        layer_norm_fwd[(x2.shape[0],)](x2, y, self.weight, self.bias, x2.stride(0), x2.shape[1], 1e-5,
                                      BLOCK_SIZE=triton.next_power_of_2(x2.shape[1]))
        return y
'''

DISTINCT = {"softmax": SOFTMAX, "matmul": MATMUL, "layernorm": LAYERNORM}

CUMSUM = '''
import torch
import triton
import triton.language as tl


@triton.jit
def scan_rows(src, dst, width):
    r = tl.program_id(0)
    total = 0.0
    for c in range(width):
        total += tl.load(src + r * width + c)
        tl.store(dst + r * width + c, total)


class ModelNew(nn.Module):
    def forward(self, x):
        flat = x.contiguous()
        res = torch.empty_like(flat)
        scan_rows[(flat.shape[0],)](flat, res, flat.shape[1])
        return res
'''

DISTINCT["cumsum"] = CUMSUM


_OPS = ["exp", "log", "sqrt", "abs", "sigmoid", "cos", "sin", "floor", "ceil", "erf", "rsqrt", "exp2", "log2",
        "maximum", "minimum", "where", "fma", "cdiv", "umulhi", "clamp", "div_rn", "sqrt_rn", "softmax", "cumsum",
        "cumprod", "argmax", "argmin", "flip", "ravel", "sort"]


def _chained(versions: list[int]) -> str:
    """A kernel of one line per entry of `versions`; a line's version changes its function and every number."""
    lines = [f"    v = tl.{_OPS[(k + 7 * v) % len(_OPS)]}(v * {(k + 100 * v) * 7 + 3}, {(k + 100 * v) * 13 + 5}) "
             f"+ {k + 100 * v}\n" for k, v in enumerate(versions)]
    return ("import triton\nimport triton.language as tl\n\n\n@triton.jit\ndef chained(src, dst):\n"
            "    v = tl.load(src)\n" + "".join(lines) + "    tl.store(dst, v)\n")


# A ~ B ~ C: B is A with 3 of 20 lines changed, C is B with 3 more changed (Jaccard A-B 0.79, B-C 0.78, A-C 0.61)
CHAIN = [_chained([0] * 20), _chained([1] * 3 + [0] * 17), _chained([1] * 3 + [2] * 3 + [0] * 14)]


def reference(name: str, n: int) -> str:
    return REFERENCE.format(doc=f"Problem {name}.", expr="x", n=n)


# (problem, candidate, y); test rows add (problem_id, holdout_group)
TRAIN = [
    ("add", BASE, 0.010), ("add", renamed(), 0.008), ("add", NEAR_COPIES["recommented"](), None),
    ("add", NEAR_COPIES["constant_changed"](), 0.009),
    ("soft", SOFTMAX, 0.02),  # a near-copy of test's row 1, under another problem
    ("mm", MATMUL, 0.5),  # test's problem
    ("kbtrain", LAYERNORM, 0.03),  # given test row 2's KernelBench name below
]
TEST = [
    ("mm", MATMUL, 0.4, "1_1", "half_holdout"),
    ("other", SOFTMAX.replace("softmax_kernel", "sm").replace("row_minus_max", "shifted"), 0.02, "2_5",
     "ninety_holdout"),
    ("kbtest", CUMSUM, None, "1_40", "full_holdout"),
]
SIZES = {"add": 16, "soft": 24, "mm": 32, "kbtrain": 40, "other": 48, "kbtest": 56}
KB_NAME = "L1 40_LayerNorm"


def build_store(folder: Path, train: list[tuple], test: list[tuple], sizes: dict[str, int]) -> Path:
    """`train` and `test` rows (as TRAIN and TEST) ingested into `folder/store`, clusters included."""
    from queries.ingest import ingest

    pq.write_table(pa.table({"x": [reference(p, sizes[p]) + c for p, c, _ in train],
                             "y": pa.array([y for *_, y in train], pa.float64())}), folder / "train.parquet")
    pq.write_table(pa.table({"x": [reference(p, sizes[p]) + c for p, c, *_ in test],
                             "y": pa.array([r[2] for r in test], pa.float64()),
                             "problem_id": [r[3] for r in test], "holdout_group": [r[4] for r in test]}),
                   folder / "test.parquet")
    path = folder / "store"
    ingest([str(folder / "train.parquet"), str(folder / "test.parquet")], path, progress=False, workers=1)
    return path


def build_neardup_store(folder: Path) -> Path:
    """TRAIN and TEST ingested into `folder/store` (clusters included), two references given one KernelBench name."""
    path = build_store(folder, TRAIN, TEST, SIZES)
    # two references of one KernelBench problem written differently: give both keys its name
    index = pq.read_table(path / INDEX_FILE)
    kb = pc.is_in(index["id"], pa.array(["train/000006", "test/000002"]))
    index = index.set_column(index.schema.get_field_index("title"), "title",
                             pc.if_else(kb, pa.scalar(KB_NAME), index["title"]))
    pq.write_table(index, path / INDEX_FILE)
    return path
