"""Ingest, stage 1: read each source file once, write the code shards, then the index, into a build folder.

DuckDB reads each file and computes every row's fields by text rules (`queries/ingest/fields_scan.py`), in parallel and
within a memory limit whatever the file's row groups; the code writer compresses on another thread meanwhile.
When DuckDB cannot read a file cleanly (binary or invalid UTF-8 `x`, a corrupt page), what was written for that
file is dropped (its code parts, and its index rows spilled to the build folder: `file_rows.py`) and the file is
read again by the Python streaming reader (`queries/ingest/read.py`), whose per-row rejects and error messages
are the reference behaviour. Problem keys and titles are computed in Python
once per distinct text before the cut; `queries/sql/ingest_index.sql` joins them back, maps test problem ids
onto train rows and writes the index sorted by id.
"""

from __future__ import annotations

import shutil
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import duckdb
import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from common.checks import outranked_by
from common.errors import TlxError
from queries.ingest.code_writer import CodeWriter
from queries.ingest.fields_scan import connect, finish_batch, scan_decoded, scan_parquet
from queries.ingest.file_rows import FileRows
from queries.ingest.index_segments import SEGMENT_DIR, remove_segments, segment_path
from queries.ingest.program_fields import FieldWorkers
from queries.ingest.progress import Progress, say
from queries.ingest.read import BadFile, read_batches, x_is_text
from queries.ingest.refs import References
from queries.sql_files import sql_text
from queries.store import INDEX_FILE, INDEX_SCHEMA, code_path

MAX_REJECTS_KEPT = 1000
DUCKDB_MEMORY_LIMIT = "1GB"
DUCKDB_BATCH_ROWS = 2048
INDEX_BATCH_ROWS = 65536  # rows of index.parquet written at a time (a row group each)
INDEX_MEMORY_LIMIT = "512MB"  # DuckDB's, writing index.parquet (beyond it, it spills to the build folder)
SPILL_DIR = "index-parts"  # in the build folder: each file's index rows until the index is written

class IngestError(TlxError, RuntimeError):
    """The build could not complete; the previous store (if any) is untouched."""


@dataclass(frozen=True)
class Options:
    workers: int
    batch_rows: int  # rows per batch of the Python reader
    group_rows: int
    shard_rows: int
    skip_bad_files: bool
    progress: bool


class Rejects:
    """Counts rejected rows by reason, keeps the first MAX_REJECTS_KEPT, and tells about the first few."""

    def __init__(self):
        self.reasons: Counter[str] = Counter()
        self.kept: list[dict] = []

    def add(self, file: Path, row: int, reason: str, detail: str) -> None:
        self.reasons[reason] += 1
        if len(self.kept) < MAX_REJECTS_KEPT:
            self.kept.append({"file": str(file), "row": row, "reason": reason, "detail": detail})
        if self.reasons.total() <= 20:
            say(f"rejected {file} row {row}: {reason} ({detail})")


def build(checked: list, bad: list[dict], tmp: Path, opts: Options) -> dict:
    """Write code shards and index.parquet into `tmp`; returns the summary's accounting fields."""
    code_path(tmp, 0).parent.mkdir(parents=True)
    (tmp / SEGMENT_DIR).mkdir()
    reader = _Reader(tmp, opts, bad, total_rows=sum(rows for _, (rows, _) in checked))
    rejects, files, sources = Rejects(), [], []
    next_row: Counter[str] = Counter()
    try:
        for f, (rows, columns) in checked:
            got = reader.read_file(f, columns, next_row[f.split], rows)
            for row, reason, detail in got.rejects:
                rejects.add(f.path, row, reason, detail)
            files.append(got)  # its per-program fields are collected after the last file: no wait between files
            next_row[f.split] += got.rows_read
            sources.append({"path": str(f.path), "split": f.split, "rows": got.rows_read,
                            "bytes": f.path.stat().st_size})
        reader.writer.close()
        reader.meter.done()
        spilled = [got for got in files if got.finish()]
        rows_indexed = _write_index(tmp, spilled, reader.refs, reader.writer, opts.workers)
        shutil.rmtree(tmp / SPILL_DIR, ignore_errors=True)
    except BaseException:
        reader.writer.abort()
        raise
    finally:
        reader.con.close()
        reader.refs.close()
        reader.fields.close()
    return {
        "sources": sources,
        "rows_read": sum(s["rows"] for s in sources),
        "rows_indexed": rows_indexed,
        "rows_rejected": rejects.reasons.total(),
        "reject_reasons": dict(rejects.reasons),
        "rejects": rejects.kept,
        "bad_files": bad,
        # rows of bad files whose footer could be read but which were not read (all of them, or after a break)
        "rows_unread": sum(b["rows_unread"] or 0 for b in bad),
    }


class _Reader:
    """Reads source files into the code writer; `refs` collects each distinct text before the cut."""

    def __init__(self, tmp: Path, opts: Options, bad: list[dict], total_rows: int):
        self.opts, self.bad, self.tmp, self.files = opts, bad, tmp, 0
        self.con = connect(opts.workers, DUCKDB_MEMORY_LIMIT)
        self.writer = CodeWriter(tmp, opts.group_rows, opts.shard_rows)
        self.meter = Progress(total_rows, opts.progress)
        self.refs = References(opts.workers)
        self.fields = FieldWorkers(opts.workers, total_rows, tmp / "handover")

    def _file_rows(self) -> FileRows:
        self.files += 1
        return FileRows(self.tmp / SPILL_DIR / f"file-{self.files}.arrow", max_pending=4 * self.opts.workers)

    def read_file(self, f, columns: list[str], first_row: int, rows: int) -> FileRows:
        """The rows of one file: DuckDB's fast read, or, when that fails, the Python reader's."""
        first_part = self.writer.start_file()
        if x_is_text(f.path):
            got = self._file_rows()
            batch_rows = max(1, DUCKDB_BATCH_ROWS // self.opts.group_rows) * self.opts.group_rows
            try:
                for rb in _reading(scan_parquet(self.con, f, columns, first_row, batch_rows)):
                    self._add(got, rb, keep_rejects=True)
                    self.meter.advance(rb.num_rows, f.path.name)
                return got
            except _FastReadFailed as failed:
                say(f"{f.path}: reading it again row by row ({str(failed.__cause__).splitlines()[0][:300]})")
                self.meter.advance(-got.rows_read, f.path.name)
                got.discard()
                self.writer.drop_from(first_part)
                self.fields.settle()  # no worker still writes a segment of the parts dropped
                remove_segments(self.tmp, first_part)
                self.writer.start_file()
        return self._read_decoded(f, columns, first_row, rows)

    def _read_decoded(self, f, columns: list[str], first_row: int, rows: int) -> FileRows:
        got = self._file_rows()
        try:
            for batch in read_batches(f, columns, self.opts.batch_rows, first_row):
                got.rejects += batch.rejects
                for rb in scan_decoded(self.con, batch, first_row):
                    self._add(got, rb, keep_rejects=False)  # the reader has rejected them already
                got.rows_read += batch.n_rows
                self.meter.advance(batch.n_rows, f.path.name)
        except BadFile as exc:
            if not self.opts.skip_bad_files:
                raise IngestError(f"{exc} (the store was not changed)") from exc
            self.bad.append({"file": str(f.path), "reason": str(exc), "rows_unread": rows - got.rows_read})
            say(f"stopped reading {exc}; kept its first {got.rows_read} rows")
        return got

    def _add(self, got: FileRows, rb: pa.RecordBatch, keep_rejects: bool) -> None:
        finished = finish_batch(rb, self.refs)
        if keep_rejects:
            got.rejects += finished.rejects
            got.rows_read += rb.num_rows
        for key, text in finished.new_refs.items():
            self.refs.add(key, text)
        parts, positions = self.writer.add(finished.ids, finished.texts)
        fields = self.fields.submit(finished.texts, finished.cut_bytes, self._segments(parts, positions))
        got.add(finished.index.append_column("code_shard", pa.array(parts))
                .append_column("code_position", pa.array(positions)), fields)

    def _segments(self, parts: np.ndarray, positions: np.ndarray) -> list[tuple[int, int, str]]:
        """(first row in the batch, rows, path) of each code part's rows in a batch (`index_segments.py`)."""
        if len(parts) == 0:  # every row of the batch rejected
            return []
        starts = np.flatnonzero(np.diff(parts, prepend=-1)).tolist()
        return [(start, end - start, str(segment_path(self.tmp, int(parts[start]), int(positions[start]))))
                for start, end in zip(starts, starts[1:] + [len(parts)], strict=True)]


class _FastReadFailed(Exception):
    """DuckDB could not read a source file cleanly (the cause says why)."""


def _reading(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
    """`batches`, with a failure to produce the next one raised as _FastReadFailed (and nothing else)."""
    while True:
        try:
            rb = next(batches)
        except StopIteration:
            return
        except (duckdb.Error, pa.ArrowException, OSError) as exc:
            raise _FastReadFailed() from exc
        yield rb


def _write_index(tmp: Path, spilled: list[FileRows], refs: References, writer: CodeWriter, workers: int) -> int:
    """Write index.parquet from the spilled index rows; returns its rows. DuckDB reads the rows as a stream (one
    pass: the query materializes them) and its sorted answer is written as it streams out: the rows mapped, or
    the answer held whole, cost the process memory linear in the rows (its peak: +640 MB from 601k to 1.2M
    rows). DuckDB's own memory is bounded by its limit; it spills to the build folder beyond it."""
    if not spilled:
        pq.write_table(INDEX_SCHEMA.empty_table(), tmp / INDEX_FILE, compression="zstd")
        return 0
    con = duckdb.connect(":memory:", config={"threads": workers, "memory_limit": INDEX_MEMORY_LIMIT,
                                             "temp_directory": str(tmp / SPILL_DIR / "duckdb")})
    written = 0
    try:
        con.register("rows", _located_rows(spilled, writer))
        con.register("refs", refs.table())
        answer = con.sql(sql_text("ingest_index"), params={"outranked_by_arity": list(outranked_by("forward_arity_mismatch"))})
        answer = answer.to_arrow_reader(INDEX_BATCH_ROWS)
        with pq.ParquetWriter(tmp / INDEX_FILE, INDEX_SCHEMA, compression="zstd") as out:
            for batch in answer:
                out.write_table(pa.Table.from_batches([batch]).cast(INDEX_SCHEMA))
                written += batch.num_rows
    finally:
        con.close()
    return written


def _located_rows(spilled: list[FileRows], writer: CodeWriter) -> pa.RecordBatchReader:
    """The spilled index rows, each with its code row group (`code_rg`), a batch at a time."""
    schema = spilled[0].schema.append(pa.field("code_rg", pa.int32()))

    def located():
        for got in spilled:
            for batch in got.batches():
                groups = writer.locate(batch["code_shard"].to_numpy(), batch["code_position"].to_numpy())
                yield pa.RecordBatch.from_arrays([*batch.columns, pa.array(groups, pa.int32())], schema=schema)

    return pa.RecordBatchReader.from_batches(schema, located())
