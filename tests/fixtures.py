"""A small fixture shard built in code, with known answers, and the store ingested from it.

`FIXTURE_ROWS` is the ground truth: per split, the rows in order with their problem, y, and what the parser
should find. Problems: relu (train + test `1_19`, full_holdout), matmul (train + test `1_1`, half_holdout),
softmax (train only), gelu (test only, `2_5`, ninety_holdout). Rows include failures (y null), an exact
duplicate and a comment-only variant of one candidate, a syntax error, a missing ModelNew and a candidate
without a Triton kernel.
"""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

REFERENCE = '''import torch
import torch.nn as nn


class Model(nn.Module):
    """{doc}"""

    def __init__(self):
        super().__init__()

    def forward(self, x):
        return {expr}


N = {n}


def get_inputs():
    return [torch.randn(N, N)]


def get_init_inputs():
    return []
'''

CANDIDATE = '''
import torch
import triton
import triton.language as tl


@triton.jit
def {kernel}(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    offs = pid * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask)
    tl.store(out_ptr + offs, {body}, mask=mask)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        out = torch.empty_like(x)
        n = x.numel()
        {kernel}[(triton.cdiv(n, {block}),)](x, out, n, BLOCK={block})
        return out
'''

PROBLEMS = {
    "relu": dict(doc="Simple model that performs a ReLU activation.", expr="torch.relu(x)", n=64,
                 body="tl.maximum(x, 0.0)"),
    "matmul": dict(doc="Square matrix multiplication (C = A * A).", expr="torch.matmul(x, x)", n=32,
                   body="x * x"),
    "softmax": dict(doc="Softmax over the last dimension.", expr="torch.softmax(x, dim=-1)", n=16,
                    body="tl.exp(x)"),
    "gelu": dict(doc="GELU activation.", expr="torch.nn.functional.gelu(x)", n=48, body="x * 0.5"),
}


def render(doc: str, expr: str, n: int, body: str, block: int = 256, kernel: str = "k") -> str:
    """A whole program: reference `Model` computing `expr` on an n×n input, Triton candidate computing `body`."""
    return REFERENCE.format(doc=doc, expr=expr, n=n) + CANDIDATE.format(kernel=kernel, body=body, block=block)


def program(problem: str, block: int = 256, kernel: str = "k", variant: str = "") -> str:
    """One program of `problem`; `variant` changes the candidate: "comment", "syntax", "no_new", "no_kernel"."""
    p = PROBLEMS[problem]
    reference = REFERENCE.format(doc=p["doc"], expr=p["expr"], n=p["n"])
    candidate = CANDIDATE.format(kernel=kernel, body=p["body"], block=block)
    if variant == "comment":
        candidate = candidate.replace("    pid = ", "    # one program per block\n    pid = ")
    elif variant == "syntax":
        candidate = candidate.replace("return out", "return out)")
    elif variant == "no_new":
        candidate = candidate.replace("class ModelNew", "class ModelNewer")
    elif variant == "no_kernel":
        candidate = candidate.replace("@triton.jit\n", "")
    return reference + candidate


# (problem, block, kernel, variant, y, static_error); test rows add (problem_id, holdout_group)
TRAIN = [
    ("relu", 256, "relu_k", "", 0.010, "ok_static"),
    ("relu", 512, "relu_k", "", 0.008, "ok_static"),
    ("relu", 512, "relu_k", "", 0.009, "ok_static"),  # exact duplicate of the row above
    ("relu", 512, "relu_k", "comment", 0.0085, "ok_static"),  # same candidate key as the two above
    ("relu", 1024, "relu_k", "", None, "ok_static"),  # failed when measured
    ("matmul", 128, "mm_k", "", 0.50, "ok_static"),
    ("matmul", 256, "mm_k", "syntax", None, "syntax_error"),
    ("matmul", 512, "mm_k", "no_kernel", 0.70, "no_triton_kernel"),
    ("softmax", 256, "sm_k", "", 0.020, "ok_static"),
    ("softmax", 256, "sm_k", "no_new", None, "no_model_new"),
]
TEST = [
    ("relu", 2048, "relu_k", "", 0.007, "ok_static", "1_19", "full_holdout"),
    ("relu", 128, "relu_k", "", None, "ok_static", "1_19", "full_holdout"),
    ("matmul", 1024, "mm_k", "", 0.45, "ok_static", "1_1", "half_holdout"),
    ("gelu", 256, "gelu_k", "", 0.030, "ok_static", "2_5", "ninety_holdout"),
    ("gelu", 512, "gelu_k", "", None, "ok_static", "2_5", "ninety_holdout"),
]
PROBLEM_IDS = {"relu": ("1_19", "full_holdout"), "matmul": ("1_1", "half_holdout"), "gelu": ("2_5", "ninety_holdout")}


def write_fixture_shard(folder: Path) -> list[Path]:
    """Write `train.parquet` and `test.parquet` (the dataset's schemas) into `folder`."""
    folder.mkdir(parents=True, exist_ok=True)
    train = pa.table({
        "x": [program(p, b, k, v) for p, b, k, v, _, _ in TRAIN],
        "y": pa.array([y for *_, y, _ in TRAIN], pa.float64()),
    })
    test = pa.table({
        "x": [program(p, b, k, v) for p, b, k, v, *_ in TEST],
        "y": pa.array([r[4] for r in TEST], pa.float64()),
        "problem_id": [r[6] for r in TEST],
        "holdout_group": [r[7] for r in TEST],
    })
    paths = [folder / "train.parquet", folder / "test.parquet"]
    pq.write_table(train, paths[0])
    pq.write_table(test, paths[1])
    return paths


def build_fixture_store(tmp_dir: Path) -> Path:
    """Write the fixture shard under `tmp_dir/source` and ingest it into `tmp_dir/store`; returns the store."""
    from queries.ingest import ingest

    tmp_dir = Path(tmp_dir)
    paths = write_fixture_shard(tmp_dir / "source")
    store = tmp_dir / "store"
    ingest([str(p) for p in paths], store, progress=False, workers=1, code_rows_per_group=4)
    return store
