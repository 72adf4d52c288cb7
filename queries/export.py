"""Export a filtered set of index rows (or the fastest correct row of each problem) as Parquet or JSONL bytes.

With `include_code=True` the program text is added as column `x`, read one needed row group at a time; this is
refused past `MAX_CODE_ROWS` rows (narrow the filters) so an export never holds the whole corpus in memory.
"""

from __future__ import annotations

import io
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

from common.errors import TlxError
from common.settings import Settings
from queries.db import Database, connect
from queries.filters import HONEST, NO_FILTERS, Candidates, Filters
from queries.store import LOCATION_COLUMNS

FORMATS = ("parquet", "jsonl")
MAX_CODE_ROWS = 20_000
INTERNAL_COLUMNS = LOCATION_COLUMNS


class ExportError(TlxError):
    """The export asked for is not possible (unknown format, too many rows with code)."""


def _with_code(db: Database, table: pa.Table) -> pa.Table:
    locations = zip(table["id"].to_pylist(), table["code_shard"].to_pylist(), table["code_rg"].to_pylist(),
                    strict=True)
    texts = dict(db.store.programs(locations))
    return table.append_column("x", pa.array([texts.get(i) for i in table["id"].to_pylist()], pa.string()))


def _jsonl(db: Database, table: pa.Table) -> bytes:
    lines = db.execute("export_jsonl_lines", tables={"export_arrow": table})["line"].to_pylist()
    return "".join(line + "\n" for line in lines).encode("utf-8")


def export(store: Path | str, settings: Settings, f: Filters = NO_FILTERS, fmt: str = "parquet",
           fastest_correct: bool = False,
           include_code: bool = False, c: Candidates = HONEST) -> bytes:
    """The filtered index rows (by id), or the fastest correct row per problem among the candidates `c` passes
    (the leaderboard's filter), as `fmt` bytes."""
    if fmt not in FORMATS:
        raise ExportError(f"unknown export format {fmt!r}; choose one of {', '.join(FORMATS)}")
    db = connect(store, settings)
    table = db.execute("export_fastest_correct" if fastest_correct else "export_rows", {**f.params(), **c.params()})
    if include_code:
        if table.num_rows > MAX_CODE_ROWS:
            raise ExportError(f"{table.num_rows} rows selected: exports with code are limited to "
                              f"{MAX_CODE_ROWS} rows; narrow the filters")
        table = _with_code(db, table)
    table = table.drop_columns([c for c in INTERNAL_COLUMNS if c in table.column_names])
    if fmt == "jsonl":
        return _jsonl(db, table)
    sink = io.BytesIO()
    pq.write_table(table, sink, compression="zstd")
    return sink.getvalue()
