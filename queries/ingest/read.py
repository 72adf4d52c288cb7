"""Check source Parquet files and stream them in bounded batches, rejecting rows that hold no usable program."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from common.errors import TlxError
from queries.ingest.sources import SourceFile

READ_BUFFER_BYTES = 4 << 20  # stream column chunks through a small buffer instead of loading them whole
_TEXT = (pa.types.is_string, pa.types.is_large_string, pa.types.is_binary, pa.types.is_large_binary)
_NUMBER = (pa.types.is_floating, pa.types.is_integer, pa.types.is_decimal, pa.types.is_null)
_LABEL = (pa.types.is_string, pa.types.is_large_string, pa.types.is_null, pa.types.is_dictionary)
REQUIRED = {"x": _TEXT, "y": _NUMBER}
OPTIONAL = {"problem_id": _LABEL, "holdout_group": _LABEL}


class BadFile(TlxError, ValueError):
    """A source file that cannot be read as a whole (message names the file); `rows`: its row count when its
    footer could be read (those rows are then reported unread), else None."""

    def __init__(self, message: str, rows: int | None = None):
        super().__init__(message)
        self.rows = rows


def check_file(path: Path) -> tuple[int, list[str]]:
    """(rows, columns to read) of a readable source file in the dataset's schema; BadFile otherwise."""
    try:
        if path.stat().st_size == 0:
            raise BadFile(f"{path}: empty file (0 bytes)")
        meta = pq.read_metadata(path)
        schema = meta.schema.to_arrow_schema()
    except BadFile:
        raise
    except (OSError, ValueError, pa.ArrowException) as exc:
        raise BadFile(f"{path}: not a readable Parquet file ({type(exc).__name__}: {exc})") from exc
    columns = []
    for name, accepted in (REQUIRED | OPTIONAL).items():
        if name not in schema.names:
            if name in REQUIRED:
                raise BadFile(f"{path}: column {name!r} missing (columns: {', '.join(schema.names)})", meta.num_rows)
            continue
        typ = schema.field(name).type
        if not any(check(typ) for check in accepted):
            raise BadFile(f"{path}: column {name!r} has type {typ}, expected {_expected(name)}", meta.num_rows)
        columns.append(name)
    return meta.num_rows, columns


def _expected(name: str) -> str:
    return {"x": "string or binary (UTF-8 text)", "y": "a number or null"}.get(name, "string")


@dataclass
class Batch:
    """Rows `first_row...` of one split: texts[i] is None for a rejected row (reason in `rejects`)."""

    file: Path
    split: str
    first_row: int
    first_file_row: int
    texts: list[str | None]
    y: list[float | None]
    problem_id: list[str | None]
    holdout_group: list[str | None]
    rejects: list[tuple[int, str, str]] = field(default_factory=list)  # (file row, reason, detail)

    @property
    def n_rows(self) -> int:
        return len(self.texts)


def read_batches(f: SourceFile, columns: list[str], batch_rows: int, first_row: int) -> Iterator[Batch]:
    """Stream `f` in batches of at most `batch_rows` rows; BadFile when it breaks mid-way."""
    file_row = 0
    try:
        pf = pq.ParquetFile(f.path, buffer_size=READ_BUFFER_BYTES, pre_buffer=False)
        for rb in pf.iter_batches(batch_size=batch_rows, columns=columns, use_threads=False):
            texts, rejects = _texts(rb.column("x"), file_row)
            yield Batch(
                file=f.path,
                split=f.split,
                first_row=first_row + file_row,
                first_file_row=file_row,
                texts=texts,
                y=_labels(rb.column("y")),
                problem_id=_strings(rb, "problem_id"),
                holdout_group=_strings(rb, "holdout_group"),
                rejects=rejects,
            )
            file_row += rb.num_rows
    except (OSError, ValueError, pa.ArrowException) as exc:
        raise BadFile(f"{f.path}: unreadable after row {file_row} ({type(exc).__name__}: {exc})") from exc


def _texts(column: pa.Array, file_row: int) -> tuple[list[str | None], list[tuple[int, str, str]]]:
    if pa.types.is_string(column.type) or pa.types.is_large_string(column.type):
        try:
            column.validate(full=True)
            values = column.to_pylist()
        except (pa.ArrowInvalid, UnicodeDecodeError):
            values = column.cast(pa.large_binary()).to_pylist()
    else:
        values = column.to_pylist()
    texts: list[str | None] = []
    rejects = []
    for i, v in enumerate(values):
        if isinstance(v, bytes):
            try:
                v = v.decode("utf-8")
            except UnicodeDecodeError as exc:
                rejects.append((file_row + i, "undecodable_text", f"x is not UTF-8 (byte {exc.start})"))
                v = None
        if v is None and not (rejects and rejects[-1][0] == file_row + i):
            rejects.append((file_row + i, "null_program", "x is null"))
        elif v is not None and not v.strip():
            rejects.append((file_row + i, "empty_program", "x is blank"))
            v = None
        texts.append(v)
    return texts, rejects


def _labels(column: pa.Array) -> list[float | None]:
    values = column.cast(pa.float64())
    return pc.if_else(pc.is_nan(values), None, values).to_pylist()


def _strings(rb: pa.RecordBatch, name: str) -> list[str | None]:
    if name not in rb.schema.names:
        return [None] * rb.num_rows
    return rb.column(name).cast(pa.string()).to_pylist()


def x_is_text(path: Path) -> bool:
    """Whether `x` is stored as text (DuckDB reads it then); binary `x` goes through the Python reader."""
    typ = pq.read_schema(path).field("x").type
    return pa.types.is_string(typ) or pa.types.is_large_string(typ)
