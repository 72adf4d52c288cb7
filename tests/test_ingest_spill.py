"""Stage 1 keeps a source file's index rows in a spill file of the build folder, not in memory, until the file is
done (`queries/ingest/file_rows.py`): undoing a failed fast read holds nothing of the file."""

from __future__ import annotations

from concurrent.futures import Future, ThreadPoolExecutor

import pyarrow as pa

from queries.ingest.file_rows import FileRows


def _batch(first: int, n: int = 100) -> pa.Table:
    return pa.table({"id": [f"train/{i:06d}" for i in range(first, first + n)], "row": list(range(first, first + n))})


def _fields(table: pa.Table) -> dict[str, pa.Array]:
    return {"program_sha256": pa.array([f"sha-{r}" for r in table["row"].to_pylist()])}


def test_rows_are_spilled_as_their_fields_come_in(tmp_path):
    rows = FileRows(tmp_path / "index-parts" / "file-1.arrow", max_pending=3)
    with ThreadPoolExecutor(2) as pool:
        for b in range(50):
            table = _batch(b * 100)
            rows.add(table, pool.submit(_fields, table))
            assert len(rows.pending) <= 3  # never more than max_pending batches in memory
    assert rows.spill.is_file()
    index = rows.index()
    assert index.num_rows == 5000 and index.column_names == ["id", "row", "program_sha256"]
    assert index["row"].to_pylist() == list(range(5000))
    assert index["program_sha256"][4321].as_py() == "sha-4321"


def test_a_discarded_file_leaves_nothing(tmp_path):
    rows = FileRows(tmp_path / "file-1.arrow", max_pending=1)
    for b in range(5):
        done: Future = Future()
        table = _batch(b * 100)
        done.set_result(_fields(table))
        rows.add(table, done)
    assert rows.spill.is_file()
    rows.discard()
    assert not rows.spill.exists() and not rows.pending
    assert FileRows(tmp_path / "file-2.arrow", max_pending=1).index() is None  # a file without rows
