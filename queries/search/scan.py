"""Reading program texts for the code search: chosen rows of chosen row groups, matched in parallel threads.

pyarrow releases the GIL while it decompresses a row group and while RE2 matches, so two threads keep two cores
busy. Groups are taken in order and a window at a time, so the scan can stop at a deadline and report progress.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from queries.store import StoreError, code_path

THREADS = 2
WINDOW = 32  # row groups in flight

Matcher = Callable[[pa.Array], pa.Array]  # texts -> bool per text
Progress = Callable[[int, int], None]  # (rows read so far, rows to read)


@dataclass(frozen=True)
class Group:
    shard: int
    rg: int
    rows: np.ndarray | None  # positions within the row group to match; None: all of them


@dataclass
class Scanned:
    ids: list[pa.Array]  # ids of the matching rows, per group in group order
    shards: list[int]
    rgs: list[int]
    rows_read: int = 0
    complete: bool = True


class Scanner:
    """Scans row groups of one store's code shards (each shard's footer read once)."""

    def __init__(self, store: Path):
        self.store = Path(store)
        self._meta: dict[int, pq.FileMetaData] = {}
        self._lock = threading.Lock()

    def group_sizes(self, shard: int) -> list[int]:
        meta = self._footer(shard)
        return [meta.row_group(g).num_rows for g in range(meta.num_row_groups)]

    def scan(self, groups: list[Group], matcher: Matcher, deadline: float | None = None,
             progress: Progress | None = None, allowed: pa.Array | None = None) -> Scanned:
        """Match the chosen rows of `groups` (and of those, only ids in `allowed` when given); stops at
        `deadline` (time.monotonic) with `complete` False."""
        total = sum(len(g.rows) if g.rows is not None else self._size(g) for g in groups)
        out = Scanned([], [], [])
        with ThreadPoolExecutor(THREADS, thread_name_prefix="code-search") as pool:
            for start in range(0, len(groups), WINDOW):
                if deadline is not None and time.monotonic() > deadline:
                    out.complete = False
                    break
                window = groups[start : start + WINDOW]
                for group, (ids, read) in zip(window, pool.map(lambda g: self._match(g, matcher, allowed), window),
                                              strict=True):
                    out.rows_read += read
                    if len(ids):
                        out.ids.append(ids)
                        out.shards.append(group.shard)
                        out.rgs.append(group.rg)
                if progress is not None:
                    progress(out.rows_read, total)
        return out

    def _match(self, group: Group, matcher: Matcher, allowed: pa.Array | None) -> tuple[pa.Array, int]:
        path = code_path(self.store, group.shard)
        try:
            table = pq.ParquetFile(path, metadata=self._footer(group.shard)).read_row_group(group.rg,
                                                                                             columns=["id", "x"])
        except (OSError, ValueError) as exc:
            raise StoreError(f"{path}: row group {group.rg} unreadable ({exc}); rebuild the store") from exc
        if group.rows is not None:
            table = table.take(pa.array(group.rows))
        if allowed is not None:
            table = table.filter(pc.is_in(table["id"], value_set=allowed))
        hits = table.filter(matcher(table["x"].combine_chunks()))
        return hits["id"].combine_chunks(), table.num_rows

    def _size(self, group: Group) -> int:
        return self._footer(group.shard).row_group(group.rg).num_rows

    def _footer(self, shard: int) -> pq.FileMetaData:
        with self._lock:
            if shard not in self._meta:
                path = code_path(self.store, shard)
                try:
                    self._meta[shard] = pq.read_metadata(path)
                except (OSError, ValueError) as exc:
                    raise StoreError(f"{path}: unreadable ({exc}); rebuild the store") from exc
            return self._meta[shard]
