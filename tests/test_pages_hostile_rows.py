"""Rows built to hurt the explorer (issue 45), each page drawn without an exception and in bounded time: a
1,200-deep attribute chain (RecursionError in the reference's AST dump), two 30k-character lines differing by one
character (difflib's quadratic intraline diff held the Kernel page for minutes), labels `y` of inf and NaN
(Overview, the landing page, raised plotly's ValueError)."""

from __future__ import annotations

import os
import random
import string
import time
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from tests.test_pages import env, no_exception, open_page, problem_key_of  # noqa: F401  (fixtures)
from tests.ui_store import program
from ui import links

CHAIN = "torch" + ".a" * 1200
LONG = "".join(random.Random(45).choices(string.ascii_letters, k=30_000))  # repeats would match quickly
PAGE_S = 5.0


def _deep() -> str:
    return program(0, 0).replace("class Model(nn.Module):", f"DEEP = lambda: {CHAIN}\n\n\nclass Model(nn.Module):", 1)


def _long_lines() -> str:
    x = program(1, 0)
    return x.replace("class Model(nn.Module):", f"S = '{LONG}'\n\n\nclass Model(nn.Module):", 1).replace(
        "class ModelNew(", f"T = '{LONG[:15_000]}0{LONG[15_001:]}'\n\n\nclass ModelNew(", 1)


@pytest.fixture(scope="module")
def hostile_store(tmp_path_factory) -> Path:
    from queries.ingest import ingest

    tmp = tmp_path_factory.mktemp("hostile-rows")
    src = tmp / "src"
    src.mkdir()
    xs = [_deep(), _long_lines(), program(2, 0), program(2, 1), program(0, 1), program(1, 1)]
    ys = [0.01, 0.02, float("inf"), float("nan"), 0.03, -float("inf")]
    pq.write_table(pa.table({"x": xs, "y": pa.array(ys, pa.float64())}), src / "train.parquet")
    ingest([str(src)], tmp / "store", progress=False, workers=1)
    return tmp / "store"


def _timed(page: str, **params: str):
    started = time.monotonic()
    at = open_page(page, **params)
    no_exception(at)
    return at, time.monotonic() - started


@pytest.mark.parametrize("row", ["train/000000", "train/000001"], ids=["deep", "long lines"])
def test_kernel_page_draws_hostile_programs_in_bounded_time(row, env, hostile_store):  # noqa: F811
    env(hostile_store)
    _, took = _timed("row", row=row)
    assert took < PAGE_S, f"{took:.1f} s"


def test_compare_page_draws_a_deep_program(env, hostile_store):  # noqa: F811
    env(hostile_store)
    _, took = _timed("compare", a="train/000000", b="train/000004")
    assert took < PAGE_S, f"{took:.1f} s"


def test_overview_counts_non_finite_labels(env, hostile_store):  # noqa: F811
    env(hostile_store)
    at, took = _timed("overview")
    text = "\n".join(e.value for kind in ("caption", "markdown", "info", "warning") for e in getattr(at, kind))
    assert "2 labels are not finite" in text, text[-2000:]  # inf and -inf (ingest stores NaN as no label)
    assert took < PAGE_S


def test_problem_page_leaves_non_finite_labels_out_of_its_chart(env, hostile_store):  # noqa: F811
    env(hostile_store)
    for view in ("histogram", "ecdf", "box"):
        at, took = _timed("problem", problem=problem_key_of(hostile_store, "Negation"), view=view)
        assert took < PAGE_S
        titles = [c.proto.spec for c in at.get("plotly_chart")]
        assert any("not finite, left out" in spec for spec in titles), view


def test_long_lines_are_coloured_whole_not_matched_by_character():
    from ui.code import INTRALINE_MAX_CHARS, side_by_side_html

    a, b = f"S = '{LONG[:8000]}'", f"S = '{LONG[:4000]}0{LONG[4001:8000]}'"  # 8k: 6.3 s on the old code
    started = time.monotonic()
    table = side_by_side_html(a, b, "l", "r")
    assert time.monotonic() - started < 1.0 and '<span class="add">' not in table
    short_a, short_b = a[: INTRALINE_MAX_CHARS - 10], b[: INTRALINE_MAX_CHARS - 10].replace("S =", "T =")
    assert '<span class="add">T</span>' in side_by_side_html(short_a, short_b, "l", "r")  # short ones still are


def test_score_page_reads_a_server_path_with_bounded_work(env, hostile_store, tmp_path):  # noqa: F811
    """`score?path=/dev/zero` read until memory ran out; a file past the size cap, or a FIFO, is refused too."""
    from queries.scoring.predictions import MAX_FILE_BYTES

    env(hostile_store)
    big = tmp_path / "big.csv"
    with open(big, "wb") as fh:
        fh.truncate(MAX_FILE_BYTES + 1)  # sparse: nothing written
    fifo = tmp_path / "pipe.csv"
    os.mkfifo(fifo)
    for path, says in (("/dev/zero", "not a regular file"), (str(fifo), "not a regular file"),
                       (str(big), "larger than 200 MiB")):
        at, took = _timed("score", path=path)
        assert any(says in e.value for e in at.error), (path, [e.value for e in at.error])
        assert took < PAGE_S


@pytest.mark.parametrize("page", list(links.PAGES))
def test_every_page_draws_on_the_hostile_store(page, env, hostile_store):  # noqa: F811
    env(hostile_store)
    _, took = _timed(page, problem=problem_key_of(hostile_store, "Doubling"), row="train/000001",
                     a="train/000001", b="train/000000", q="qq")
    assert took < PAGE_S, f"{page}: {took:.1f} s"
