"""Rankings follow the latest verdict (issue 42): a row whose latest GPU run failed, or whose CPU interpreter run
failed for a reason no device changes, leaves every ranking of correct rows (the Problem page's header and
leaderboard, the Problems table, the fastest-correct export) and counts as a failure there; a CPU failure the
interpreter can cause does not; and a CPU interpreter run never replaces the latest GPU timing (leaderboard
speedup, Compare)."""

from __future__ import annotations

import hashlib
import io
import os

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from common.hardware import CPU_LABEL
from queries import api
from queries.db import clear_cache
from queries.export import export
from queries.filters import Candidates
from queries.ingest import ingest
from tests.fixtures import program
from tests.queries_helpers import result, settings_now, write_results
from tests.test_pages import env, no_exception, open_page  # noqa: F401

# row: label; every row an honest ReLU, its Triton block size making each a distinct candidate
LABELS = [0.005, 0.008, 0.010, 0.012, 0.020]
PROGRAMS = [program("relu", block=64 << i) for i in range(len(LABELS))]
GPU_FAILED, CPU_FAILED_ANYWHERE, CPU_CHECKED, CPU_FAILED_INTERPRETER, NEVER_RUN = range(5)


def row_id(row: int) -> str:
    return f"train/{row:06d}"


def _run(row: int, status: str, at: str, error: str | None = None, cpu: bool = False, **timing) -> dict:
    run = result(row_id(row), status, error, finished_at=at, median_ms=timing.get("median_ms"))
    run["program_sha256"] = hashlib.sha256(PROGRAMS[row].encode()).hexdigest()
    if cpu:
        run |= {"device": CPU_LABEL, "system": {}, "timing": None, "flags": ["interpreted_no_timing"]}
    elif status == "ok":
        run |= {"speedup": timing["speedup"], "ref_timing": {"median_ms": timing["median_ms"] * timing["speedup"]}}
    return run


@pytest.fixture(scope="module")
def store(tmp_path_factory):
    folder = tmp_path_factory.mktemp("latest")
    pq.write_table(pa.table({"x": PROGRAMS, "y": pa.array(LABELS)}), folder / "train.parquet")
    path = folder / "store"
    ingest([str(folder / "train.parquet")], path, progress=False, workers=1)
    runs = folder / "runs"
    write_results(runs, [
        _run(GPU_FAILED, "ok", "2025-01-01T00:00:00Z", median_ms=0.05, speedup=4.0),
        _run(GPU_FAILED, "failed", "2025-01-02T00:00:00Z", "output_mismatch"),  # the latest: failed on a GPU
        _run(CPU_FAILED_ANYWHERE, "ok", "2025-01-01T00:00:00Z", median_ms=0.08, speedup=3.0),
        _run(CPU_FAILED_ANYWHERE, "failed", "2025-01-02T00:00:00Z", "import_error", cpu=True),
        _run(CPU_CHECKED, "ok", "2025-01-01T00:00:00Z", median_ms=0.2, speedup=1.5),
        _run(CPU_CHECKED, "ok", "2025-01-02T00:00:00Z", cpu=True),  # a correctness check: the timing stays
        _run(CPU_FAILED_INTERPRETER, "ok", "2025-01-01T00:00:00Z", median_ms=0.3, speedup=1.2),
        _run(CPU_FAILED_INTERPRETER, "failed", "2025-01-02T00:00:00Z", "runtime_error", cpu=True),
    ])
    clear_cache()
    old = os.environ.get("TLX_RUNS_DIR")
    os.environ["TLX_RUNS_DIR"] = str(runs)
    yield path
    clear_cache()
    if old is None:
        del os.environ["TLX_RUNS_DIR"]
    else:
        os.environ["TLX_RUNS_DIR"] = old


RANKED = [row_id(CPU_CHECKED), row_id(CPU_FAILED_INTERPRETER), row_id(NEVER_RUN)]


def test_the_leaderboard_leaves_out_rows_the_latest_verdict_refutes(store):
    key = api.problems(store, settings_now())["problem_key"][0].as_py()
    board = api.fastest(store, settings_now(), key, k=10, c=Candidates()).to_pylist()
    assert [r["id"] for r in board] == RANKED
    checked = board[0]
    assert checked["verified"] == "correct (CPU interpreter check)"
    assert (checked["speedup_vs_reference"], checked["measured_ms"]) == (1.5, 0.2)  # the GPU run's, kept
    assert board[1]["verified"] == "failed: runtime_error (CPU interpreter check)"


def test_the_problems_table_and_the_export_agree(store):
    row = api.problems(store, settings_now()).to_pylist()[0]
    assert row["best_id"] == row_id(CPU_CHECKED) and row["y_min"] == LABELS[CPU_CHECKED]
    assert row["ranked"] == 3 and row["failures"] == 2
    exported = pq.read_table(io.BytesIO(export(store, settings_now(), fastest_correct=True, c=Candidates())))
    assert exported["id"].to_pylist() == [row_id(CPU_CHECKED)]


def test_problem_page_header_and_leaderboard(env, store):  # noqa: F811
    env(store, TLX_RUNS_DIR=os.environ["TLX_RUNS_DIR"])
    key = api.problems(store, settings_now())["problem_key"][0].as_py()
    at = open_page("problem", problem=key)
    no_exception(at)
    fastest = next(m for m in at.metric if m.label.startswith("fastest"))
    assert fastest.value == f"{LABELS[CPU_CHECKED]:.4g}"
    ranked = next(d for d in at.dataframe if "verified" in d.value.columns).value
    assert list(ranked["id"]) == RANKED
    assert ranked["speedup_vs_reference"].iloc[0] == 1.5


def test_compare_shows_the_gpu_timing_beside_a_cpu_check(env, store):  # noqa: F811
    env(store, TLX_RUNS_DIR=os.environ["TLX_RUNS_DIR"])
    at = open_page("compare", a=row_id(CPU_CHECKED), b=row_id(GPU_FAILED))
    no_exception(at)
    facts = next(d for d in at.dataframe if "A" in d.value.columns).value.set_index("")
    assert facts.loc["latest verdict", "A"] == "correct (CPU interpreter check)"
    assert facts.loc["ModelNew median", "A"] == "0.2 ms" and facts.loc["speedup vs reference", "A"] == "1.5×"
    assert facts.loc["latest verdict", "B"].startswith("failed")
