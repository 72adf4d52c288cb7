"""A tiny store for the explorer's page and browser tests, built in code through `queries.ingest`.

Three problems, train and test splits, passing and failing candidates, duplicates, and one program whose text
holds `<script>` and HTML (to check that pages show it escaped).
"""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

from tests.fixtures import render

XSS_MARKER = "<script>window.__tlx_xss=1</script><b>bold</b>"

PROBLEMS = [  # (title, reference expression, Triton expression, n: inputs are n×n)
    ("ReLU activation", "torch.relu(x)", "tl.maximum(x, 0.0)", 64),
    ("Doubling", "x * 2", "x * 2.0", 45),
    ("Negation " + XSS_MARKER, "-x", "-x", 32),
]


def program(problem: int, variant: int) -> str:
    doc, expr, triton_expr, n = PROBLEMS[problem]
    return render(doc, expr, n, triton_expr, block=64 * (1 + variant % 4), kernel=f"k{problem}_{variant % 4}")


def _rows(split: str, count: int) -> dict:
    xs, ys, pids, groups = [], [], [], []
    for i in range(count):
        problem = i % len(PROBLEMS)
        variant = i // len(PROBLEMS)
        x = program(problem, variant)
        if variant == 2:
            x = x.replace("class ModelNew", "class Broken")  # static error: no_model_new
        xs.append(x)
        ys.append(None if variant in (2, 5) else 0.01 * (problem + 1) * (1 + variant % 4))
        pids.append(f"1_{problem + 1}")
        groups.append(["full_holdout", "half_holdout", "ninety_holdout"][problem])
    columns = {"x": xs, "y": pa.array(ys, pa.float64())}
    if split == "test":
        columns |= {"problem_id": pids, "holdout_group": groups}
    return columns


def build_store(tmp: Path, *, empty: bool = False, syntax_check: bool = True) -> Path:
    """Write train/test Parquet into `tmp/src` and ingest them into `tmp/store`; returns the store path."""
    from queries.ingest import ingest

    src = tmp / "src"
    src.mkdir(parents=True, exist_ok=True)
    train = _rows("train", 0 if empty else 24)
    pq.write_table(pa.table(train, schema=pa.schema([("x", pa.string()), ("y", pa.float64())])),
                   src / "train.parquet")
    if not empty:
        pq.write_table(pa.table(_rows("test", 12)), src / "test.parquet")
    store = tmp / "store"
    ingest([str(src)], store, progress=False, workers=1, syntax_check=syntax_check, allow_shrink=empty)
    return store
