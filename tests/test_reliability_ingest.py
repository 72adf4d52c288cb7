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


def _meta(store: Path) -> str:
    return (store / "meta.json").read_text()


@pytest.mark.parametrize("kind", ["undecodable", "empty_table", "blank_programs"])
def test_an_ingest_that_indexes_nothing_keeps_the_store(tmp_path, kind):
    store = tmp_path / "store"
    ingest([str(shard(tmp_path / "good" / "train.parquet"))], store, progress=False)
    before = _meta(store)
    bad = tmp_path / "bad" / "train.parquet"
    bad.parent.mkdir()
    x = {"undecodable": pa.array([b"\xff\xfe\x00" + bytes([i]) for i in range(128, 140)], pa.binary()),
         "empty_table": pa.array([], pa.string()),
         "blank_programs": pa.array(["   ", "\n\t"], pa.string())}[kind]
    pq.write_table(pa.table({"x": x, "y": pa.array([1.0] * len(x), pa.float64())}), bad)
    with pytest.raises(IngestError, match="indexes no row.*was not changed.*--allow-shrink"):
        ingest([str(bad)], store, progress=False)
    assert _meta(store) == before and Store(store).rows == 5
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".")] == []  # no build folder left
    summary = ingest([str(bad)], store, progress=False, allow_shrink=True)  # said explicitly: replaced
    assert summary["rows_indexed"] == 0 and json.loads(_meta(store))["rows_indexed"] == 0


def test_an_ingest_far_smaller_than_the_store_it_replaces_is_refused(tmp_path):
    store = tmp_path / "store"
    ingest([str(shard(tmp_path / "big" / "train.parquet", n=10))], store, progress=False)
    before = _meta(store)
    small = shard(tmp_path / "small" / "train.parquet", n=4)
    done = subprocess.run([sys.executable, "-m", "queries", "ingest", str(small), "--store", str(store)],
                          cwd=REPO, capture_output=True, text=True, timeout=120)
    assert done.returncode == 1 and "indexes 4 rows, far fewer than the 10" in done.stderr, done.stderr
    assert "--allow-shrink" in done.stderr and _meta(store) == before
    half = shard(tmp_path / "half" / "train.parquet", n=5)  # half the rows is not "far fewer"
    assert ingest([str(half)], store, progress=False)["rows_indexed"] == 5
    done = subprocess.run([sys.executable, "-m", "queries", "ingest", str(small), "--store", str(store),
                           "--allow-shrink", "--no-syntax-check"], cwd=REPO, capture_output=True, text=True,
                          timeout=120)
    assert done.returncode == 0, done.stderr
    assert Store(store).rows == 4


def test_rows_of_files_refused_for_their_schema_are_counted(tmp_path):
    good = shard(tmp_path / "src" / "train.parquet", n=5)
    wrong_type = shard(tmp_path / "src" / "train-b.parquet", n=100, y=["fast"] * 100)
    pq.write_table(pa.table({"code": ["a"] * 50, "y": [1.0] * 50}), tmp_path / "src" / "train-c.parquet")
    (tmp_path / "src" / "train-d.parquet").write_bytes(b"PAR1 not a footer")  # unreadable footer: rows unknown
    summary = ingest([str(good.parent)], tmp_path / "store", progress=False, skip_bad_files=True)
    unread = {Path(b["file"]).name: b["rows_unread"] for b in summary["bad_files"]}
    assert unread == {"train-b.parquet": 100, "train-c.parquet": 50, "train-d.parquet": None}
    assert summary["rows_unread"] == 150 and summary["rows_indexed"] == 5
    in_footers = sum(pq.read_metadata(p).num_rows for p in (good, wrong_type, tmp_path / "src" / "train-c.parquet"))
    assert summary["rows_read"] + summary["rows_unread"] == in_footers  # every row of a readable footer
    assert json.loads(_meta(tmp_path / "store"))["rows_unread"] == 150
