"""Ingest, stage 1 for one source file: the text-rule fields of its rows, computed by DuckDB in parallel.

`scan_parquet` lets DuckDB read the file itself (multi-threaded, in bounded memory); `scan_decoded` runs the same
SQL (`queries/sql/ingest_fields.sql`) over batches the Python reader decoded, for files DuckDB cannot read
cleanly (binary or invalid UTF-8 `x`, corrupt pages). `finish_batch` turns one result batch into narrow index
columns (with `unavailable_import` marked, see `common/program/text_rules.py`) plus the id and text of each program;
`queries/ingest/program_fields.py` adds the fields computed from each text's bytes.
"""

from __future__ import annotations

import re
from collections.abc import Container, Iterator
from dataclasses import dataclass

import duckdb
import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from common.checks import STATIC_ERRORS, outranked_by
from common.program.text_rules import AVAILABLE_MODULES, PATTERNS
from common.row_id import ROW_ID_FORMAT
from queries.ingest.read import Batch
from queries.ingest.sources import SourceFile
from queries.sql_files import sql_text

OPTIONAL_COLUMNS = ("problem_id", "holdout_group")
STREAMING_BUFFER = "128MB"
REJECT_DETAIL = {"null_program": "x is null", "empty_program": "x is blank"}
# columns of a finished batch that go to the index as they are
INDEX_FIELDS = ("id", "split", "row", "source_file", "y", "problem_id", "holdout_group", "static_error",
                "kernel_names", "autotuned", "n_chars", "cut_chars", "ref_hash")


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
    values = {"split": f.split, "first_row": first_row, "source_file": f.path.name, "row_id_format": ROW_ID_FORMAT,
              "static_errors": list(STATIC_ERRORS), **PATTERNS}
    return {name: values[name] for name in set(re.findall(r"\$(\w+)", sql_text("ingest_fields")))}


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
    index: pa.Table  # INDEX_FIELDS (the caller adds `program_fields` and the code part and position)
    ids: pa.Array
    texts: pa.Array
    cut_bytes: pa.Array  # UTF-8 bytes of each text before the cut
    rejects: list[tuple[int, str, str]]  # (file row, reason, detail) of rows DuckDB rejected
    new_refs: dict[tuple[int, int], str]  # (ref_hash, cut_chars) -> the text before the cut, first seen here


def finish_batch(rb: pa.RecordBatch, known_refs: Container[tuple[int, int]]) -> Finished:
    """Split off rejected rows, mark unavailable imports, and collect texts before the cut not seen so far."""
    rejects = []
    if rb.column("reject").null_count < rb.num_rows:
        reasons = rb.column("reject").to_pylist()
        rows = rb.column("file_row").to_pylist()
        rejects = [(row, reason, REJECT_DETAIL[reason]) for row, reason in zip(rows, reasons, strict=True) if reason]
        rb = rb.filter(rb.column("reject").is_null())
    new_refs = {}
    ref_ids = zip(rb.column("ref_hash").to_pylist(), rb.column("cut_chars").to_pylist(), strict=True)
    for i, ref in enumerate(ref_ids):
        if ref not in known_refs and ref not in new_refs:
            new_refs[ref] = rb.column("x")[i].as_py()[: ref[1]]
    # copies: a column DuckDB exported keeps its whole batch (program texts included) alive
    every_row = pa.array(np.arange(rb.num_rows))
    index = pa.table([rb.column(name).take(every_row) for name in INDEX_FIELDS], names=list(INDEX_FIELDS))
    index = index.set_column(index.schema.get_field_index("static_error"), "static_error",
                             _with_unavailable_imports(rb.column("static_error"), rb.column("imported")))
    return Finished(index, rb.column("id"), rb.column("x"), rb.column("cut_bytes"), rejects, new_refs)


def _with_unavailable_imports(static_error: pa.Array, imported: pa.ListArray) -> pa.Array:
    """`static_error`, with `unavailable_import` instead of the errors it outranks (`no_triton_kernel`,
    `ok_static`: `common.checks.outranked_by`) for rows that import, at top level, a package the runner's
    environment lacks."""
    missing = pc.invert(pc.is_in(imported.flatten(), value_set=pa.array(AVAILABLE_MODULES, pa.string())))
    rows = np.unique(pc.list_parent_indices(imported).to_numpy()[missing.to_numpy(zero_copy_only=False)])
    if len(rows) == 0:
        return static_error
    mask = np.zeros(len(static_error), bool)
    mask[rows] = True
    refinable = pc.is_in(static_error, value_set=pa.array(outranked_by("unavailable_import"), pa.string()))
    return pc.if_else(pc.and_(pa.array(mask), refinable), "unavailable_import", static_error)
