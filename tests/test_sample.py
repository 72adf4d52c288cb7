"""The embedded sample dataset: committed shards match the generator, schema, splits, kinds and labels."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from collections import Counter, defaultdict
from pathlib import Path

import make_sample  # scripts/ is on pytest's pythonpath (pyproject.toml)
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from sample_programs.variants import FAILING_KINDS, KINDS, PASSING_KINDS

ROOT = Path(__file__).resolve().parent.parent
SAMPLE = ROOT / "data" / "sample"



@pytest.fixture(scope="module")
def rows():
    return make_sample.build_rows()


@pytest.fixture(scope="module")
def tables():
    return {split: pq.read_table(SAMPLE / f"{split}.parquet") for split in ("train", "test")}


def test_schema_matches_real_dataset(tables):
    assert tables["train"].schema.remove_metadata() == pa.schema([("x", pa.string()), ("y", pa.float64())])
    assert tables["test"].schema.remove_metadata() == pa.schema(
        [("x", pa.string()), ("y", pa.float64()), ("problem_id", pa.string()), ("holdout_group", pa.string())])
    for table in tables.values():
        assert table.schema.metadata[b"tlx.y_source"] in (b"provisional", b"measured")


def test_row_counts_and_null_share(tables, rows):
    total = tables["train"].num_rows + tables["test"].num_rows
    assert 150 <= total <= 300
    assert total == len(rows)
    assert tables["test"].num_rows < tables["train"].num_rows
    nulls = sum(t.column("y").null_count for t in tables.values())
    assert 0.25 <= nulls / total <= 0.45


def test_committed_programs_equal_generator_output(tables, rows):
    for split, table in tables.items():
        assert table.column("x").to_pylist() == [r.candidate.program for r in rows if r.split == split]


def test_generation_is_deterministic(tmp_path, tables):
    subprocess.run([sys.executable, str(ROOT / "scripts" / "make_sample.py"), "--out", str(tmp_path)],
                   check=True, capture_output=True)
    for split, table in tables.items():
        assert pq.read_table(tmp_path / f"{split}.parquet").column("x").equals(table.column("x"))


def test_problems_and_kinds(rows):
    kinds_by_problem = defaultdict(set)
    for r in rows:
        kinds_by_problem[r.candidate.problem.problem_id].add(r.candidate.kind)
    assert len(kinds_by_problem) >= 24
    assert {pid.split("_")[0] for pid in kinds_by_problem} == {"1", "2", "3"}
    for pid, kinds in kinds_by_problem.items():
        assert {"fast", "slow", "dup_whitespace", "dup_comments"} <= kinds, pid
        assert kinds & set(FAILING_KINDS), pid
    problems_per_kind = Counter(k for kinds in kinds_by_problem.values() for k in kinds)
    for kind in KINDS:
        assert problems_per_kind[kind] >= 3, kind


def test_failing_rows_have_null_y_and_fast_beats_slow(tables, rows):
    if tables["train"].schema.metadata[b"tlx.y_source"] != b"provisional":
        pytest.skip("measured labels: nulls come from the runs")
    ys = {f"{split}/{i:06d}": y for split, t in tables.items() for i, y in enumerate(t.column("y").to_pylist())}
    by_kind = defaultdict(dict)
    for r in rows:
        assert (ys[r.id] is None) == (r.candidate.kind in FAILING_KINDS), r.id
        by_kind[r.candidate.problem.problem_id][r.candidate.kind] = ys[r.id]
    for pid, y in by_kind.items():
        assert y["fast"] < y["slow"], pid


def test_program_text_shape(rows):
    cuda_rows = 0
    for r in rows:
        x, kind = r.candidate.program, r.candidate.kind
        assert 3000 <= len(x) <= 15000, (r.id, len(x))
        assert x.startswith("import") and "class Model(nn.Module):" in x and "def get_init_inputs():" in x
        assert x.index("def get_inputs():") < x.index("import triton")
        if kind == "syntax_error":
            with pytest.raises(SyntaxError):
                compile(x, r.id, "exec")
            continue
        compile(x, r.id, "exec")
        assert x.index("import triton") < x.index("class ModelNew"), r.id
        assert ("@triton.jit" in x) == (kind != "no_triton"), r.id
        cuda_rows += 'device="cuda"' in x
    assert 2 <= cuda_rows <= 3


def test_test_split_ids_and_holdout_groups(tables, rows):
    test = tables["test"].to_pylist()
    test_rows = [r for r in rows if r.split == "test"]
    for record, r in zip(test, test_rows, strict=True):
        assert re.fullmatch(r"[123]_\d+", record["problem_id"])
        assert record["problem_id"] == r.candidate.problem.problem_id
        assert record["holdout_group"] in {"full_holdout", "ninety_holdout", "half_holdout"}
    split_counts = defaultdict(Counter)
    for r in rows:
        split_counts[r.candidate.problem.problem_id][r.split] += 1
    groups = {rec["problem_id"]: rec["holdout_group"] for rec in test}
    assert set(groups.values()) == {"full_holdout", "ninety_holdout", "half_holdout"}
    for pid, group in groups.items():
        train, held = split_counts[pid]["train"], split_counts[pid]["test"]
        if group == "full_holdout":
            assert train == 0, pid
        elif group == "ninety_holdout":
            assert 1 <= train < held, pid
        else:
            assert abs(train - held) <= 1, pid


def _write_labels(path: Path, rows, skip: int = 0) -> None:
    with path.open("w") as fh:
        for r in rows[skip:]:
            ok = r.candidate.kind in PASSING_KINDS
            fh.write(json.dumps({"id": r.id, "status": "ok" if ok else "failed",
                                 "timing": {"median_ms": 0.5} if ok else None,
                                 "system": {"gpu": "NVIDIA H200", "torch": "2.11.0", "triton": "3.6.0"}}) + "\n")


def test_labels_file_sets_measured_y_and_metadata(tmp_path, rows):
    labels = tmp_path / "runs.jsonl"
    _write_labels(labels, rows)
    assert make_sample.main(["--out", str(tmp_path), "--labels", str(labels)]) == 0
    table = pq.read_table(tmp_path / "train.parquet")
    meta = table.schema.metadata
    assert meta[b"tlx.y_source"] == b"measured" and meta[b"tlx.gpu"] == b"NVIDIA H200"
    assert meta[b"tlx.torch"] == b"2.11.0" and meta[b"tlx.triton"] == b"3.6.0"
    train_rows = [r for r in rows if r.split == "train"]
    expected = [0.5 if r.candidate.kind in PASSING_KINDS else None for r in train_rows]
    assert table.column("y").to_pylist() == expected


def test_labels_pool_several_runs_per_row(tmp_path, rows):
    """y is the median of the passing runs when most runs of the row passed; do_bench runs do not count."""
    labels = tmp_path / "runs.jsonl"
    _write_labels(labels, rows)
    first, second = [r for r in rows if r.split == rows[0].split and r.candidate.kind in PASSING_KINDS][:2]
    extra = [(first.id, "ok", 0.7, []), (first.id, "ok", 0.1, []), (first.id, "ok", 9.0, ["timing_do_bench"]),
             (second.id, "failed", None, []), (second.id, "failed", None, [])]
    with labels.open("a") as fh:
        for row_id, status, ms, flags in extra:
            fh.write(json.dumps({"id": row_id, "status": status, "flags": flags,
                                 "timing": {"median_ms": ms} if ms else None}) + "\n")
    assert make_sample.main(["--out", str(tmp_path), "--labels", str(labels)]) == 0
    ys = pq.read_table(tmp_path / f"{first.split}.parquet").column("y").to_pylist()
    assert ys[first.row] == 0.5  # median of 0.5, 0.7 and 0.1; the do_bench run is left out
    assert ys[second.row] is None  # one passing run of three


def test_labels_file_missing_rows_is_an_error(tmp_path, rows, capsys):
    labels = tmp_path / "runs.jsonl"
    _write_labels(labels, rows, skip=1)
    assert make_sample.main(["--out", str(tmp_path), "--labels", str(labels)]) == 1
    assert rows[0].id in capsys.readouterr().err
