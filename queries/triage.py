"""CPU triage results (`ROOT/triage/*.jsonl`, read and flattened by `common.triage_log`) as flat Arrow tables.

The roots are the runner's `RUNS_DIR` and the store itself (triage published with a store). Lines that are not
JSON objects are skipped; a missing folder gives an empty table with the same columns. A triage run appends to
its file while the explorer is open, and a full dataset's triage is 601k lines (2.4 CPU-s per 100k to parse), so
a connection reads each file once and then only what was appended (`TriageReader`).
"""

from __future__ import annotations

import os
from pathlib import Path

import pyarrow as pa

from common.triage_log import TRIAGE_COLUMNS, flatten_triage, read_triage_tail, triage_files
from queries.results import ARROW_TYPES

TRIAGE_SCHEMA = pa.schema([(name, ARROW_TYPES[kind]) for name, kind in TRIAGE_COLUMNS])


class TriageReader:
    """Reads the triage files of some roots again and again, each line once: `read()` gives the results added
    since the last call, or every result when a file was removed, replaced or cut short (then `full` is True and
    the caller starts over). Not thread-safe: its owner (`queries.db.Database`) calls it under its lock."""

    def __init__(self, *roots: Path | None):
        self.roots = roots
        self._files: dict[str, tuple[int, int, int]] = {}  # path -> (inode, offset read to, next line number)

    def read(self) -> tuple[pa.Table, bool]:
        """(the results not read before, whether they are all the results: start over)."""
        current: dict[str, int] = {}
        for path in triage_files(*self.roots):
            try:
                current[str(path)] = os.stat(path).st_ino
            except OSError:
                continue
        full = not self._files or any(path not in current or current[path] != inode or _size(path) < offset
                                      for path, (inode, offset, _) in self._files.items())
        if full:
            self._files = {}
        rows = []
        for path, inode in current.items():
            _, offset, line = self._files.get(path, (inode, 0, 1))
            tail = read_triage_tail(Path(path), offset, line)
            rows += [flatten_triage(logged.result, logged.file, logged.line) for logged in tail.results]
            self._files[path] = (inode, tail.offset, tail.next_line)
        return pa.Table.from_pylist(rows, schema=TRIAGE_SCHEMA), full


def _size(path: str) -> int:
    try:
        return os.stat(path).st_size
    except OSError:
        return -1
