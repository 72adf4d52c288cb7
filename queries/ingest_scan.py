"""Ingest, stage 1 for one source file: the text-rule fields of its rows, computed by DuckDB in parallel.

`scan_parquet` lets DuckDB read the file itself (multi-threaded, in bounded memory); `scan_decoded` runs the same
SQL (`queries/sql/ingest_fields.sql`) over batches the Python reader decoded, for files DuckDB cannot read
cleanly (binary or invalid UTF-8 `x`, corrupt pages). `finish_batch` turns one result batch into narrow index
columns (the candidate key computed here, see `queries/text_rules.py`) plus the id and text of each program.
"""

from __future__ import annotations

from collections.abc import Container, Iterator
from dataclasses import dataclass

import duckdb
import numpy as np
import pyarrow as pa

from queries.db import sql_text
from queries.ingest_read import Batch
from queries.sources import SourceFile
from queries.text_rules import PATTERNS, candidate_fingerprint

OPTIONAL_COLUMNS = ("problem_id", "holdout_group")
STREAMING_BUFFER = "128MB"
REJECT_DETAIL = {"null_program": "x is null", "empty_program": "x is blank"}
# columns of a finished batch that go to the index as they are
INDEX_FIELDS = ("id", "split", "row", "source_file", "y", "problem_id", "holdout_group", "static_error",
                "kernel_names", "autotuned", "n_chars", "program_sha256", "cut_chars", "ref_hash")


def connect(threads: int, memory_limit: str) -> duckdb.DuckDBPyConnection:
    """A connection for stage 1. The streaming buffer holds several result batches, so DuckDB's threads keep
    computing while Python takes one (its 1 MB default stalls them: a batch of programs is ~15 MB). Without
    prefetching, DuckDB reads a column chunk page by page instead of whole: a single 750 MB row group then costs
    ~200 MB instead of ~900 MB, and local reads are no slower."""
    con = duckdb.connect(":memory:", config={
        "threads": threads, "memory_limit": memory_limit, "preserve_insertion_order": True,
        "autoinstall_known_extensions": False, "autoload_known_extensions": False,
    })
    con.execute("SET disable_parquet_prefetching = true")  # neither is a connect-time option
    con.execute("SET streaming_buffer_size = ?", [STREAMING_BUFFER])
    return con


def _params(f: SourceFile, first_row: int) -> dict:
    return {"split": f.split, "first_row": first_row, "source_file": f.path.name, **PATTERNS}


def scan_parquet(con: duckdb.DuckDBPyConnection, f: SourceFile, columns: list[str], first_row: int,
                 batch_rows: int) -> Iterator[pa.RecordBatch]:
    """Result batches for every row of `f`, read by DuckDB; raises duckdb.Error (or an Arrow error while
    streaming) when DuckDB cannot read the file cleanly."""
    wanted = ["file_row_number AS file_row", "x", "y"]
    wanted += [name if name in columns else f"NULL::VARCHAR AS {name}" for name in OPTIONAL_COLUMNS]
    con.read_parquet(str(f.path), file_row_number=True).project(", ".join(wanted)).create_view("src", replace=True)
    yield from con.sql(sql_text("ingest_fields"), params=_params(f, first_row)).to_arrow_reader(batch_rows)


def scan_decoded(con: duckdb.DuckDBPyConnection, batch: Batch, first_row: int) -> list[pa.RecordBatch]:
    """The result for rows the Python reader decoded (`first_row`: the split row of the file's row 0)."""
    src = pa.table({
        "file_row": pa.array(range(batch.first_file_row, batch.first_file_row + batch.n_rows), pa.int64()),
        "x": pa.array(batch.texts, pa.string()),
        "y": pa.array(batch.y, pa.float64()),
        "problem_id": pa.array(batch.problem_id, pa.string()),
        "holdout_group": pa.array(batch.holdout_group, pa.string()),
    })
    con.register("src", src)
    try:
        params = _params(SourceFile(batch.file, batch.split), first_row)
        return con.sql(sql_text("ingest_fields"), params=params).to_arrow_table().combine_chunks().to_batches()
    finally:
        con.unregister("src")


@dataclass
class Finished:
    index: pa.Table  # INDEX_FIELDS + candidate_key, code part and position (filled in by the caller)
    ids: pa.Array
    texts: pa.Array
    rejects: list[tuple[int, str, str]]  # (file row, reason, detail) of rows DuckDB rejected
    new_refs: dict[tuple[int, int], str]  # (ref_hash, cut_chars) -> the text before the cut, first seen here


def finish_batch(rb: pa.RecordBatch, known_refs: Container[tuple[int, int]]) -> Finished:
    """Split off rejected rows, compute candidate keys, and collect texts before the cut not seen so far."""
    rejects = []
    if rb.column("reject").null_count < rb.num_rows:
        reasons = rb.column("reject").to_pylist()
        rows = rb.column("file_row").to_pylist()
        rejects = [(row, reason, REJECT_DETAIL[reason]) for row, reason in zip(rows, reasons, strict=True) if reason]
        rb = rb.filter(rb.column("reject").is_null())
    keys = candidate_keys(rb.column("code_parts"), rb.column("code_skip"), rb.column("code_quotes"))
    new_refs = {}
    ref_ids = zip(rb.column("ref_hash").to_pylist(), rb.column("cut_chars").to_pylist(), strict=True)
    for i, ref in enumerate(ref_ids):
        if ref not in known_refs and ref not in new_refs:
            new_refs[ref] = rb.column("x")[i].as_py()[: ref[1]]
    # copies: a column DuckDB exported keeps its whole batch (program texts included) alive
    every_row = pa.array(np.arange(rb.num_rows))
    index = pa.table([rb.column(name).take(every_row) for name in INDEX_FIELDS], names=list(INDEX_FIELDS))
    index = index.append_column("candidate_key", pa.array(keys, pa.string()))
    return Finished(index, rb.column("id"), rb.column("x"), rejects, new_refs)


def candidate_keys(code_parts: pa.ListArray, skips: pa.Array, quotes: pa.Array) -> list[str]:
    """`candidate_fingerprint` of each row's comment-free text (its parts, contiguous in the list's values)
    past the comment-free text before the cut."""
    if len(code_parts) == 0:
        return []
    values = code_parts.values
    value_offsets = np.frombuffer(values.buffers()[1], np.int32)[values.offset :]
    list_offsets = code_parts.offsets.to_numpy()
    starts = (value_offsets[list_offsets[:-1]] + skips.to_numpy()).tolist()
    ends = value_offsets[list_offsets[1:]].tolist()
    data = memoryview(values.buffers()[2] or b"")
    return [candidate_fingerprint(data[a:b].tobytes(), q)
            for a, b, q in zip(starts, ends, quotes.to_pylist(), strict=True)]
