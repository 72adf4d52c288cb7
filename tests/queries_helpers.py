"""Helpers for the queries tests: isolation from the user's runs folder, fixture problem keys, result files."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import pyarrow.parquet as pq

from common.settings import Settings, load_settings
from tests.fixtures import TEST, TRAIN


def settings_now(runs_dir: Path | str | None = None) -> Settings:
    """The settings a process started now would read, as an entry point reads them and passes them down (the runs
    folder: `empty_runs`' or the test's own TLX_RUNS_DIR), or with `runs_dir` as its runs folder."""
    settings = load_settings()
    return settings if runs_dir is None else replace(settings, runs_dir=Path(runs_dir))


def fixture_rows() -> list[dict]:
    """The fixture's ground truth as dicts: id, split, problem (name), y, static_error, holdout_group."""
    rows = []
    for i, (problem, *_, y, static_error) in enumerate(TRAIN):
        rows.append(dict(id=f"train/{i:06d}", split="train", problem=problem, y=y, static_error=static_error))
    for i, (problem, _b, _k, _v, y, static_error, _pid, _hg) in enumerate(TEST):
        rows.append(dict(id=f"test/{i:06d}", split="test", problem=problem, y=y, static_error=static_error))
    return rows


def problem_keys(store: Path) -> dict[str, str]:
    """Fixture problem name -> problem_key, read from the index (one known row per problem)."""
    index = pq.read_table(store / "index.parquet", columns=["id", "problem_key"]).to_pylist()
    key_of = {r["id"]: r["problem_key"] for r in index}
    return {r["problem"]: key_of[r["id"]] for r in fixture_rows()}


def write_results(runs_dir: Path, results: list[dict], name: str = "worker-1.jsonl", garbage: bool = False) -> None:
    folder = runs_dir / "results"
    folder.mkdir(parents=True, exist_ok=True)
    lines = [json.dumps(r) for r in results]
    if garbage:
        lines.insert(1, '{"truncated": ')
    (folder / name).write_text("\n".join(lines) + "\n")


def result(row_id: str, status: str, error_type: str | None = None, median_ms: float | None = None,
           finished_at: str = "2025-01-01T00:00:00Z") -> dict:
    timing = None if median_ms is None else {"median_ms": median_ms, "mean_ms": median_ms, "std_ms": 0.0,
                                             "min_ms": median_ms, "max_ms": median_ms, "n": 100}
    return {"id": row_id, "row_id": row_id, "status": status, "error_type": error_type,
            "message": None if status == "ok" else f"{error_type}: boom", "exception": None, "traceback": None,
            "correct_trials": 5 if status == "ok" else 0, "trials": 5, "max_abs_diff": 0.0, "max_rel_diff": 0.0,
            "timing": timing, "ref_timing": None, "speedup": None, "flags": [], "method": {"name": "test"},
            "device": "cuda", "system": {"gpu": "H200"}, "program_sha256": None, "duration_s": 1.0,
            "finished_at": finished_at}
