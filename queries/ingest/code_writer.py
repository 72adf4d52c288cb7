"""Write program texts into code shards (`code/part-NNNNN.parquet`: id, x; LZ4; small row groups; page index).

LZ4 rather than zstd: on the realistic 601k corpus, writing zstd (level 1) was the largest single share of stage
1's CPU after the per-program fields; LZ4 costs ~40% less to write and ~40% less to read (one row group, a code
search's scan), for shards ~60% larger (BENCHMARKS.md, "Ingest").

Rows arrive in id order. Every source file starts a new part, so the rows of a file whose fast read fails half
way can be dropped (`drop_from`) and read again the slow way; a part holds at most `shard_rows` rows. A
background thread compresses and writes while the caller computes the next batch (pyarrow releases the GIL).
Where each row landed comes from the row groups actually written: `locate` reads each part's footer.
"""

from __future__ import annotations

from collections import deque
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from queries.store import CODE_SCHEMA, code_path

CODE_CODEC = "lz4"

MAX_PENDING_WRITES = 4  # batches queued for the writer thread (bounds memory)


class CodeWriter:
    def __init__(self, store: Path, group_rows: int, shard_rows: int):
        if group_rows < 1 or shard_rows < group_rows:
            raise ValueError("need 1 <= group_rows <= shard_rows")
        self.store, self.group_rows = store, group_rows
        self.shard_rows = shard_rows - shard_rows % group_rows  # parts end on a row-group boundary
        self.part = -1
        self.rows_in_part = 0
        self._thread = ThreadPoolExecutor(1, thread_name_prefix="code-writer")
        self._pending: deque[Future] = deque()
        self._open: tuple[int, pq.ParquetWriter] | None = None  # touched by the writer thread only
        self._ends: dict[int, np.ndarray] = {}  # row-group ends of the closed parts `locate` read

    def start_file(self) -> int:
        """Begin a source file in a new part; returns that part's number (for `drop_from`)."""
        self._next_part()
        return self.part

    def add(self, ids: pa.Array, texts: pa.Array) -> tuple[np.ndarray, np.ndarray]:
        """Queue rows for writing; returns each row's part and its position within that part."""
        n = len(ids)
        parts = np.empty(n, np.int32)
        positions = np.empty(n, np.int64)
        done = 0
        while done < n:
            if self.rows_in_part == self.shard_rows:
                self._next_part()
            take = min(n - done, self.shard_rows - self.rows_in_part)
            parts[done : done + take] = self.part
            positions[done : done + take] = np.arange(self.rows_in_part, self.rows_in_part + take)
            table = pa.Table.from_arrays([ids.slice(done, take), texts.slice(done, take)], schema=CODE_SCHEMA)
            self._submit(self._write, self.part, table)
            self.rows_in_part += take
            done += take
        return parts, positions

    def drop_from(self, part: int) -> None:
        """Forget every row written to `part` and later parts (their files are deleted)."""
        self._drain()
        self._thread.submit(self._close_open).result()
        for p in range(part, self.part + 1):
            self._path(p).unlink(missing_ok=True)
        self.part, self.rows_in_part = part - 1, self.shard_rows

    def close(self) -> None:
        self._drain()
        self._thread.submit(self._close_open).result()
        self._thread.shutdown()

    def abort(self) -> None:
        """Stop without waiting for queued writes (the build is being thrown away)."""
        for future in self._pending:
            future.cancel()
        self._thread.shutdown(wait=True, cancel_futures=True)
        self._close_open()

    def locate(self, parts: np.ndarray, positions: np.ndarray) -> np.ndarray:
        """Row group of each (part, position) pair, from the row groups the closed parts hold (once closed, a
        part is not written again)."""
        groups = np.empty(len(parts), np.int32)
        for part in np.unique(parts).tolist():
            if part not in self._ends:  # asked a batch at a time: each footer is read once
                meta = pq.read_metadata(self._path(part))
                self._ends[part] = np.cumsum([meta.row_group(i).num_rows for i in range(meta.num_row_groups)])
            ends = self._ends[part]
            mask = parts == part
            groups[mask] = np.searchsorted(ends, positions[mask], side="right")
            if len(ends) == 0 or positions[mask].max() >= ends[-1]:
                raise RuntimeError(f"{self._path(part)} holds fewer rows than were written to it")
        return groups

    def _next_part(self) -> None:
        self.part += 1
        self.rows_in_part = 0

    def _path(self, part: int) -> Path:
        return code_path(self.store, part)

    def _submit(self, fn, *args) -> None:
        while len(self._pending) >= MAX_PENDING_WRITES:
            self._pending.popleft().result()
        self._pending.append(self._thread.submit(fn, *args))

    def _drain(self) -> None:
        while self._pending:
            self._pending.popleft().result()

    def _write(self, part: int, table: pa.Table) -> None:
        if self._open is None or self._open[0] != part:
            self._close_open()
            writer = pq.ParquetWriter(self._path(part), CODE_SCHEMA, compression=CODE_CODEC, use_dictionary=False,
                                      write_statistics=["id"], write_page_index=True)
            self._open = (part, writer)
        self._open[1].write_table(table, row_group_size=self.group_rows)

    def _close_open(self) -> None:
        if self._open is not None:
            self._open[1].close()
            self._open = None
