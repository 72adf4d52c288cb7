"""Hostile data through ingest, beyond tests/test_ingest.py (which covers truncated, corrupt, empty, wrong-type and
missing-column files, null/empty/undecodable programs and the atomic swap): duplicated source files, programs of
300k+ characters, a wrong `y` type, and the CLI's messages for them."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from queries.ingest import IngestError, ingest
from queries.store import Store
from tests.fixtures import program

REPO = Path(__file__).resolve().parent.parent


def shard(path: Path, n: int = 5, **columns) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    table = {"x": [program("relu", block=16 * (i + 1)) for i in range(n)], "y": [1.0 + i for i in range(n)]}
    pq.write_table(pa.table({**table, **columns}), path)
    return path


def test_same_path_twice_is_read_once(tmp_path):
    src = shard(tmp_path / "a" / "train.parquet")
    summary = ingest([str(src), str(src), str(src.parent)], tmp_path / "store", progress=False)
    assert [s["path"] for s in summary["sources"]] == [str(src)]
    assert summary["rows_read"] == summary["rows_indexed"] == 5 and summary["duplicate_files"] == []


def test_copies_are_indexed_again_with_a_warning(tmp_path):
    first = shard(tmp_path / "a" / "train.parquet")
    copy = tmp_path / "b" / "train.parquet"
    copy.parent.mkdir()
    shutil.copy(first, copy)
    store = tmp_path / "store"
    done = subprocess.run([sys.executable, "-m", "queries", "ingest", str(first), str(copy), "--store", str(store)],
                          cwd=REPO, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert f"warning: {copy} has the same content as {first}" in done.stderr
    assert "duplicate file" in done.stderr
    meta = json.loads((store / "meta.json").read_text())
    assert meta["duplicate_files"] == [{"file": str(copy), "same_as": str(first)}]
    assert meta["rows_read"] == meta["rows_indexed"] + meta["rows_rejected"] == 10  # every row accounted for
    index = pq.read_table(store / "index.parquet", columns=["id", "candidate_key"]).to_pylist()
    assert len(index) == 10 and len({r["candidate_key"] for r in index}) == 5  # the copies fold as duplicates


def test_programs_of_300k_characters_round_trip(tmp_path):
    filler = "# " + "x" * 99 + "\n"
    huge = program("relu", block=64) + filler * 3100  # ~313k characters
    src = tmp_path / "train.parquet"
    pq.write_table(pa.table({"x": [program("relu"), huge], "y": [1.0, None]}), src)
    summary = ingest([str(src)], tmp_path / "store", progress=False)
    assert summary["rows_indexed"] == 2
    store = Store(tmp_path / "store")
    assert store.program("train/000001") == huge
    row = next(r for r in pq.read_table(store.index_path).to_pylist() if r["id"] == "train/000001")
    assert row["n_chars"] == len(huge) > 300_000 and row["n_kernels"] == 1


def test_wrong_y_type_names_the_file_and_column(tmp_path):
    good = shard(tmp_path / "good" / "train.parquet")
    ingest([str(good)], tmp_path / "store", progress=False)
    before = (tmp_path / "store" / "meta.json").read_text()
    bad = shard(tmp_path / "bad" / "train.parquet", y=["fast"] * 5)
    with pytest.raises(IngestError, match=r"train.parquet.*'y'"):
        ingest([str(bad)], tmp_path / "store", progress=False)
    assert (tmp_path / "store" / "meta.json").read_text() == before
