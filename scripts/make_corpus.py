"""Generate a synthetic corpus shaped like the real dataset, for ingest and query benchmarks only.

    python scripts/make_corpus.py --rows 601000 --out .bench/corpus [--one-row-group] [--seed 0]

Writes `train.parquet` (x, y) and `test.parquet` (x, y, problem_id, holdout_group), ~90.5% / 9.5% of the rows:
programs of 5k-15k characters built from templates (a reference `Model` and a Triton candidate with 2-8
kernels), about 1 in 5000 inflated to ~300k characters, ~35% null y, a few syntax errors and missing `ModelNew`,
many problems with a skewed number of candidates each. `--one-row-group` writes each file as a single row group
(the worst case for a streaming reader; needs the whole file in memory while writing).
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

OPS = ["relu", "sigmoid", "tanh", "exp", "abs", "matmul", "softmax", "gelu", "add", "mul", "sum", "mean"]
GROUPS = ["full_holdout", "ninety_holdout", "half_holdout"]

REFERENCE = '''import torch
import torch.nn as nn


class Model(nn.Module):
    """Problem {p}: applies {op_a} then {op_b} over a tensor of shape ({d0}, {d1})."""

    def __init__(self, scale: float = {scale}):
        super().__init__()
        self.scale = scale
        self.linear = nn.Linear({d1}, {d1})

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = self.linear(x) * self.scale
        y = torch.{op_a}(y)
        return torch.{op_b}(y + {p})


batch_size = {d0}
dim = {d1}


def get_inputs():
    return [torch.randn(batch_size, dim)]


def get_init_inputs():
    return [{scale}]
'''

HEADER = '''
import torch
import torch.nn as nn
import triton
import triton.language as tl
'''

KERNEL = '''

@triton.jit
def {name}(
    x_ptr, w_ptr, out_ptr,
    n_rows, n_cols,
    stride_xm, stride_xn,
    BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr,
):
    # one program per ({bm}, {bn}) tile; masked loads on the ragged edge
    pid_m = tl.program_id(0)
    pid_n = tl.program_id(1)
    offs_m = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_n = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    mask = (offs_m[:, None] < n_rows) & (offs_n[None, :] < n_cols)
    x = tl.load(x_ptr + offs_m[:, None] * stride_xm + offs_n[None, :] * stride_xn, mask=mask, other=0.0)
    w = tl.load(w_ptr + offs_n, mask=offs_n < n_cols, other=0.0)
    acc = x * w[None, :] + {c0}
    acc = tl.where(acc > 0, acc, acc * {c1})
    acc = acc - tl.max(acc, axis=1)[:, None]
    num = tl.exp(acc)
    den = tl.sum(num, axis=1)[:, None]
    y = num / den
    tl.store(out_ptr + offs_m[:, None] * stride_xm + offs_n[None, :] * stride_xn, y, mask=mask)


def launch_{name}(x, w):
    out = torch.empty_like(x)
    grid = (triton.cdiv(x.shape[0], {bm}), triton.cdiv(x.shape[1], {bn}))
    {name}[grid](x, w, out, x.shape[0], x.shape[1], x.stride(0), x.stride(1), BLOCK_M={bm}, BLOCK_N={bn})
    return out
'''

MODEL_NEW = '''

class {cls}(nn.Module):
    def __init__(self, scale: float = 1.0):
        super().__init__()
        self.scale = scale
        self.linear = nn.Linear({d1}, {d1})

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = self.linear(x) * self.scale
{calls}        return y
'''


def _program(rng: np.random.Generator, problem: int, refs: list[str], big: bool) -> str:
    n_kernels = int(rng.integers(2, 9)) if not big else 200
    names = [f"k{problem}_{int(rng.integers(1_000_000))}_{i}" for i in range(n_kernels)]
    parts = [refs[problem], HEADER]
    for name in names:
        parts.append(KERNEL.format(name=name, bm=int(2 ** rng.integers(4, 8)), bn=int(2 ** rng.integers(4, 8)),
                                   c0=round(float(rng.random()), 4), c1=round(float(rng.random()), 4)))
    calls = "".join(f"        y = launch_{n}(y, self.linear.bias)\n" for n in names)
    flaw = rng.random()
    cls = "ModelNew" if flaw > 0.01 else "ModelFast"
    body = MODEL_NEW.format(cls=cls, d1=64 + problem % 512, calls=calls)
    if flaw > 0.97:
        body = body.replace("return y", "return y)")
    return "".join(parts) + body


def _references(n: int, rng: np.random.Generator) -> list[str]:
    return [REFERENCE.format(p=p, op_a=OPS[p % len(OPS)], op_b=OPS[(p // len(OPS)) % len(OPS)],
                             d0=16 + p % 4096, d1=64 + p % 512, scale=round(float(rng.random()) + 0.5, 3))
            for p in range(n)]


def _write(path: Path, columns: dict, programs, one_row_group: bool, chunk: int) -> None:
    """Write programs (an iterator of lists) with their other columns, chunk by chunk or as one row group."""
    schema = pa.schema([("x", pa.large_string()), ("y", pa.float64())]
                       + [(k, pa.string()) for k in columns if k not in ("y",)])
    tables = []
    with pq.ParquetWriter(path, schema, compression="zstd") as writer:
        start = 0
        for texts in programs:
            data = {"x": pa.array(texts, pa.large_string())}
            data |= {k: v[start : start + len(texts)] for k, v in columns.items()}
            table = pa.table(data, schema=schema)
            start += len(texts)
            if one_row_group:
                tables.append(table)
            else:
                writer.write_table(table, row_group_size=chunk)
        if one_row_group:
            table = pa.concat_tables(tables)
            writer.write_table(table, row_group_size=table.num_rows)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rows", type=int, default=601_000)
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--one-row-group", action="store_true")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    started = time.monotonic()
    rng = np.random.default_rng(args.seed)
    n_problems = max(4, args.rows // 240)
    refs = _references(n_problems, rng)
    weights = 1.0 / np.arange(1, n_problems + 1) ** 0.8  # skewed: a few problems hold many candidates
    test_problems = rng.choice(n_problems, size=max(1, n_problems // 4), replace=False)
    n_test = max(1, round(args.rows * 0.095))
    splits = {
        "test": (rng.choice(test_problems, size=n_test), n_test),
        "train": (rng.choice(n_problems, size=args.rows - n_test, p=weights / weights.sum()), args.rows - n_test),
    }
    args.out.mkdir(parents=True, exist_ok=True)
    chunk = 20_000
    for split, (problems, n) in splits.items():
        y = np.where(rng.random(n) < 0.35, np.nan, rng.lognormal(-2, 1.5, n))
        columns = {"y": pa.array(y, from_pandas=True)}
        if split == "test":
            columns["problem_id"] = pa.array([f"{1 + p % 3}_{p}" for p in problems])
            columns["holdout_group"] = pa.array([GROUPS[p % 3] for p in problems])
        big = rng.random(n) < 1 / 5000
        programs = ([_program(rng, int(problems[i]), refs, bool(big[i])) for i in range(s, min(s + chunk, n))]
                    for s in range(0, n, chunk))
        _write(args.out / f"{split}.parquet", columns, programs, args.one_row_group, chunk)
        print(f"{split}: {n:,} rows, {(args.out / f'{split}.parquet').stat().st_size / 1e6:,.0f} MB "
              f"({time.monotonic() - started:.0f} s)")


if __name__ == "__main__":
    main()
