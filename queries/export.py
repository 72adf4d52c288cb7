"""Export a filtered set of index rows (or the fastest correct row of each problem) as Parquet or JSONL bytes.

With `include_code=True` the program text is added as column `x`, read one needed row group at a time; this is
refused past `MAX_CODE_ROWS` rows (narrow the filters) so an export never holds the whole corpus in memory.
"""

from __future__ import annotations

import io
from collections import defaultdict
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from queries.db import Database, connect
from queries.filters import NO_FILTERS, Filters

FORMATS = ("parquet", "jsonl")
MAX_CODE_ROWS = 20_000
INTERNAL_COLUMNS = ("code_shard", "code_rg")


class ExportError(ValueError):
    """The export asked for is not possible (unknown format, too many rows with code)."""


def _with_code(store_path: Path, table: pa.Table) -> pa.Table:
    wanted: dict[tuple[int, int], list[str]] = defaultdict(list)
    for row_id, shard, group in zip(table["id"].to_pylist(), table["code_shard"].to_pylist(),
                                    table["code_rg"].to_pylist(), strict=True):
        wanted[(shard, group)].append(row_id)
    texts: dict[str, str] = {}
    for (shard, group), ids in sorted(wanted.items()):
        path = store_path / "code" / f"part-{shard:05d}.parquet"
        chunk = pq.ParquetFile(path).read_row_group(group, columns=["id", "x"])
        chunk = chunk.filter(pc.is_in(chunk["id"], value_set=pa.array(ids, pa.string())))
        texts.update(zip(chunk["id"].to_pylist(), chunk["x"].to_pylist(), strict=True))
    return table.append_column("x", pa.array([texts.get(i) for i in table["id"].to_pylist()], pa.string()))


def _jsonl(db: Database, table: pa.Table) -> bytes:
    lines = db.execute("export_jsonl_lines", tables={"export_arrow": table})["line"].to_pylist()
    return "".join(line + "\n" for line in lines).encode("utf-8")


def export(store: Path | str, f: Filters = NO_FILTERS, fmt: str = "parquet", fastest_correct: bool = False,
           include_code: bool = False) -> bytes:
    """The filtered index rows (by id), or the fastest correct row per problem, as `fmt` bytes."""
    if fmt not in FORMATS:
        raise ExportError(f"unknown export format {fmt!r}; choose one of {', '.join(FORMATS)}")
    db = connect(store)
    table = db.execute("export_fastest_correct" if fastest_correct else "export_rows", f.params())
    if include_code:
        if table.num_rows > MAX_CODE_ROWS:
            raise ExportError(f"{table.num_rows} rows selected: exports with code are limited to "
                              f"{MAX_CODE_ROWS} rows; narrow the filters")
        table = _with_code(db.store.path, table)
    table = table.drop_columns([c for c in INTERNAL_COLUMNS if c in table.column_names])
    if fmt == "jsonl":
        return _jsonl(db, table)
    sink = io.BytesIO()
    pq.write_table(table, sink, compression="zstd")
    return sink.getvalue()
