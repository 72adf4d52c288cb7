"""Ingest and the store: layout, problem-id mapping, bad input accounting, atomic swap, one-row reads."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from common.settings import REPO_ROOT, load_settings
from queries.ingest import IngestError, ensure_sample_store, ingest
from queries.store import Store, StoreError
from tests.fixtures import PROBLEM_IDS, TEST, TRAIN, program, write_fixture_shard
from tests.queries_helpers import settings_now


def _index(store: Path) -> dict[str, dict]:
    return {r["id"]: r for r in pq.read_table(Path(store) / "index.parquet").to_pylist()}


def test_fixture_store_matches_ground_truth(fixture_store):
    index = _index(fixture_store)
    assert len(index) == len(TRAIN) + len(TEST)
    for split, rows in (("train", TRAIN), ("test", TEST)):
        for i, (problem, *_, y, error) in enumerate(r[:6] for r in rows):
            row = index[f"{split}/{i:06d}"]
            assert (row["y"], row["ok"], row["static_error"]) == (y, y is not None, error)
            pid, group = PROBLEM_IDS.get(problem, (None, None))
            assert (row["problem_id"], row["holdout_group"]) == (pid, group)  # train rows mapped from test
            assert row["level"] == (int(pid.split("_")[0]) if pid else None)
    keys = {r["problem_key"] for r in index.values()}
    assert len(keys) == 4
    dup = [index[f"train/{i:06d}"]["candidate_key"] for i in (1, 2, 3)]
    assert len(set(dup)) == 1 and index["train/000000"]["candidate_key"] not in dup


def test_program_reads_one_row(fixture_store):
    store = Store(fixture_store)
    assert store.program("train/000006") == program(*TRAIN[6][:4])
    assert store.program("test/000004") == program(*TEST[4][:4])
    assert len(store.code_paths) == 2
    code = pq.ParquetFile(store.code_paths[1])
    assert code.metadata.num_row_groups > 1 and code.metadata.row_group(0).num_rows == 4
    with pytest.raises(StoreError, match="no row 'train/000999'"):
        store.program("train/000999")
    for bad in ("nonsense", "train/²", "train/١٢٣"):  # '١٢٣' would read as row 123 through int()
        with pytest.raises(StoreError, match="bad row id"):
            store.program(bad)


def test_meta_accounts_for_every_row(fixture_store):
    meta = Store(fixture_store).meta
    assert meta.rows_read == meta.rows_indexed + meta.rows_rejected == 15
    assert [s["split"] for s in meta.rest["sources"]] == ["test", "train"]


def _broken_sources(folder: Path) -> dict[str, Path]:
    folder.mkdir()
    good = write_fixture_shard(folder / "good")
    bad_rows = folder / "train-extra.parquet"  # null x, non-UTF-8 bytes, blank text, one good row
    pq.write_table(pa.table({"x": pa.array([None, b"\xff\xfe bad", b"  ", program("relu").encode()], pa.binary()),
                             "y": [1.0, 2.0, None, 3.0]}), bad_rows)
    truncated = folder / "truncated.parquet"
    truncated.write_bytes(good[0].read_bytes()[:-100])
    empty = folder / "empty.parquet"
    empty.write_bytes(b"")
    wrong = folder / "wrong.parquet"
    pq.write_table(pa.table({"x": [1, 2], "y": [1.0, 2.0]}), wrong)
    missing = folder / "missing.parquet"
    pq.write_table(pa.table({"code": ["a"], "y": [1.0]}), missing)
    return {"good": good[0], "test": good[1], "rows": bad_rows, "truncated": truncated, "empty": empty,
            "wrong": wrong, "missing": missing}


def test_bad_files_fail_the_build_and_leave_the_store(tmp_path):
    src = _broken_sources(tmp_path / "src")
    store = tmp_path / "store"
    ingest([str(src["good"])], store, progress=False)
    before = (store / "meta.json").read_text()
    messages = {
        "truncated": "truncated.parquet: not a readable Parquet file",
        "empty": "empty.parquet: empty file",
        "wrong": "column 'x' has type int64",
        "missing": "column 'x' missing",
    }
    with pytest.raises(IngestError, match="no readable source file"):
        ingest([str(src["empty"])], store, progress=False, skip_bad_files=True)
    for name, message in messages.items():
        with pytest.raises(IngestError, match=message):
            ingest([str(src["test"]), str(src[name])], store, progress=False)
        assert (store / "meta.json").read_text() == before
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".")] == []  # no temp dirs left


def test_skip_bad_files_and_reject_rows(tmp_path):
    src = _broken_sources(tmp_path / "src")
    store = tmp_path / "store"
    summary = ingest([str(p) for p in src.values()], store, progress=False, skip_bad_files=True)
    assert summary["rows_read"] == len(TRAIN) + len(TEST) + 4
    assert summary["rows_read"] == summary["rows_indexed"] + summary["rows_rejected"]
    assert summary["reject_reasons"] == {"null_program": 1, "undecodable_text": 1, "empty_program": 1}
    assert {(Path(r["file"]).name, r["row"], r["reason"]) for r in summary["rejects"]} == {
        ("train-extra.parquet", 0, "null_program"), ("train-extra.parquet", 1, "undecodable_text"),
        ("train-extra.parquet", 2, "empty_program")}
    assert sorted(Path(b["file"]).name for b in summary["bad_files"]) == [
        "empty.parquet", "missing.parquet", "truncated.parquet", "wrong.parquet"]
    assert json.loads((store / "meta.json").read_text())["rows_rejected"] == 3
    index = _index(store)
    # train.parquet rows come first (sorted by path within the split), then train-extra's only good row
    extra = index[f"train/{len(TRAIN) + 3:06d}"]
    assert extra["source_file"] == "train-extra.parquet" and extra["y"] == 3.0
    assert f"train/{len(TRAIN):06d}" not in index  # rejected rows keep their row number, unindexed
    assert Store(store).program(extra["id"]) == program("relu")


def test_corruption_mid_file_fails_late_and_keeps_the_store(tmp_path):
    texts = [program("relu", block=i) for i in range(40)]
    src = tmp_path / "train.parquet"
    pq.write_table(pa.table({"x": texts, "y": [1.0] * 40}), src, row_group_size=10,
                   compression="zstd", use_dictionary=False)
    ingest([str(src)], tmp_path / "store", progress=False)
    before = (tmp_path / "store" / "meta.json").read_text()
    data = bytearray(src.read_bytes())
    rg = pq.read_metadata(src).row_group(2).column(0)
    end = rg.data_page_offset + rg.total_compressed_size
    data[end - 300 : end - 100] = bytes(200)  # zero part of row group 2's compressed x page
    broken = tmp_path / "broken" / "train.parquet"
    broken.parent.mkdir()
    broken.write_bytes(bytes(data))
    with pytest.raises(IngestError, match=r"train.parquet: unreadable after row 20"):
        ingest([str(broken)], tmp_path / "store", progress=False, batch_rows=10)
    assert (tmp_path / "store" / "meta.json").read_text() == before
    summary = ingest([str(broken)], tmp_path / "store", progress=False, batch_rows=10, skip_bad_files=True)
    assert summary["rows_read"] == summary["rows_indexed"] == 20
    assert summary["bad_files"][0]["rows_unread"] == 20


def test_huge_row_group_and_parallel_parse(tmp_path, monkeypatch):
    monkeypatch.setattr("queries.ingest.program_checks.PARALLEL_MIN_ROWS", 100)  # syntax-check processes on a small file
    monkeypatch.setattr("queries.ingest.program_fields.PARALLEL_MIN_ROWS", 100)  # and program-field processes
    rows = 1200
    texts = [program(("relu", "matmul")[i % 2], block=64 + i) for i in range(rows)]
    src = tmp_path / "train.parquet"
    pq.write_table(pa.table({"x": texts, "y": [float(i) for i in range(rows)]}), src, row_group_size=rows)
    summary = ingest([str(src)], tmp_path / "store", progress=False, workers=2, batch_rows=100)
    assert summary["rows_indexed"] == rows
    store = Store(tmp_path / "store")
    assert store.program("train/001199") == texts[-1] and store.program("train/000600") == texts[600]
    assert len({r["candidate_key"] for r in _index(tmp_path / "store").values()}) == rows
    serial = ingest([str(src)], tmp_path / "serial", progress=False, workers=1)  # the same fields in one process
    assert serial["rows_indexed"] == rows
    fields = ("id", "candidate_key", "program_sha256", "static_error", "problem_key")
    assert ([{k: r[k] for k in fields} for r in _index(tmp_path / "store").values()]
            == [{k: r[k] for k in fields} for r in _index(tmp_path / "serial").values()])


def test_cli_prints_summary_and_fails_clearly(tmp_path):
    src = _broken_sources(tmp_path / "src")
    env = {**os.environ, "PYTHONPATH": str(REPO_ROOT)}
    ok = subprocess.run([sys.executable, "-m", "queries", "ingest", str(src["good"]), str(src["rows"]),
                         "--store", str(tmp_path / "s")], capture_output=True, text=True, env=env)
    assert ok.returncode == 0, ok.stderr
    assert "14 rows read, 11 indexed, 3 rejected" in ok.stderr and "undecodable_text" in ok.stderr
    bad = subprocess.run([sys.executable, "-m", "queries", "ingest", str(src["empty"]), "--store",
                          str(tmp_path / "s2")], capture_output=True, text=True, env=env)
    assert bad.returncode == 1 and "empty.parquet: empty file" in bad.stderr
    assert not (tmp_path / "s2").exists()


def test_refuses_to_replace_a_folder_that_is_not_a_store(tmp_path):
    src = write_fixture_shard(tmp_path / "src")
    precious = tmp_path / "precious"
    precious.mkdir()
    (precious / "notes.txt").write_text("keep me")
    with pytest.raises(IngestError, match="is not a store"):
        ingest([str(src[0])], precious, progress=False)
    assert (precious / "notes.txt").read_text() == "keep me"


def test_store_errors(tmp_path):
    with pytest.raises(StoreError, match="meta.json missing"):
        Store(tmp_path)
    (tmp_path / "meta.json").write_text("{broken")
    with pytest.raises(StoreError, match="unreadable"):
        Store(tmp_path)


def test_ensure_sample_store_builds_and_refreshes(tmp_path, monkeypatch):
    sample = tmp_path / "sample"
    write_fixture_shard(sample)
    monkeypatch.setattr("queries.ingest.sample.SAMPLE_DIR", sample)
    settings = load_settings({"TLX_CACHE_DIR": str(tmp_path / "cache")})
    path = ensure_sample_store(settings)
    assert Store(path).meta.sample is True and Store(path).rows == len(TRAIN) + len(TEST)
    built = (path / "meta.json").stat().st_mtime_ns
    assert ensure_sample_store(settings) == path and (path / "meta.json").stat().st_mtime_ns == built
    os.utime(sample / "train.parquet", ns=(built + 10**9, built + 10**9))
    ensure_sample_store(settings)
    assert (path / "meta.json").stat().st_mtime_ns > built
    monkeypatch.setattr("queries.ingest.sample.SAMPLE_DIR", tmp_path / "nowhere")
    with pytest.raises(StoreError, match="embedded sample is missing"):
        ensure_sample_store(settings)
    explicit = load_settings({"TLX_STORE": str(tmp_path / "mine")})
    assert ensure_sample_store(explicit) == tmp_path / "mine"


def test_sources_globs_folders_and_hf(tmp_path, monkeypatch):
    import huggingface_hub

    from queries.ingest.sources import SourceError, resolve_sources

    paths = write_fixture_shard(tmp_path / "snap" / "data")
    (tmp_path / "snap" / "data" / "valid.parquet").write_bytes(paths[0].read_bytes())
    found = resolve_sources([str(tmp_path / "snap"), str(tmp_path / "snap" / "data" / "t*.parquet")])
    assert [(f.path.name, f.split) for f in found] == [
        ("test.parquet", "test"), ("train.parquet", "train"), ("valid.parquet", "valid")]
    calls = []
    monkeypatch.setattr(huggingface_hub, "snapshot_download",
                        lambda **kw: calls.append(kw) or str(tmp_path / "snap"))
    assert len(resolve_sources(["hf://datasets/makora-ai/triton-gpu-latency"])) == 3
    assert calls[0]["repo_id"] == "makora-ai/triton-gpu-latency" and calls[0]["repo_type"] == "dataset"

    def offline(**kw):
        raise OSError("no network")

    monkeypatch.setattr(huggingface_hub, "snapshot_download", offline)
    with pytest.raises(SourceError, match="download failed .*no network"):
        resolve_sources(["hf://datasets/makora-ai/triton-gpu-latency"])
    with pytest.raises(SourceError, match="matches no .parquet"):
        resolve_sources([str(tmp_path / "nothing*.parquet")])


def test_runs_published_beside_the_sources_travel_with_the_store(tmp_path):
    from queries import api
    from tests.queries_helpers import result

    src = tmp_path / "src"
    write_fixture_shard(src)
    shipped = [result("train/000000", "ok", median_ms=0.5), result("test/000001", "failed", "compile_error")]
    (src / "runs-gpu.jsonl").write_text("".join(json.dumps(r) + "\n" for r in shipped))
    (src / "notes.jsonl").write_text("{}\n")  # only runs-*.jsonl files are run results
    summary = ingest([str(src)], tmp_path / "store", progress=False)
    assert summary["shipped_runs"] == [str(src / "runs-gpu.jsonl")]
    assert sorted(p.name for p in (tmp_path / "store" / "results").iterdir()) == ["runs-gpu.jsonl"]
    runs = api.runs(tmp_path / "store", settings_now(tmp_path / "no-runner-runs"))
    assert sorted(zip(runs["row_id"].to_pylist(), runs["status"].to_pylist(), strict=True)) == [
        ("test/000001", "failed"), ("train/000000", "ok")]


def test_read_and_write_sides_import_one_way():
    """The store format imports neither side; ingest never imports the DuckDB connection module (no circle)."""
    code = ("import sys, queries.store; assert not any(m.startswith(('queries.db', 'queries.ingest')) "
            "for m in sys.modules), sorted(sys.modules); import queries.ingest; "
            "assert 'queries.db' not in sys.modules and 'queries.results' not in sys.modules")
    done = subprocess.run([sys.executable, "-c", code], cwd=REPO_ROOT, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
