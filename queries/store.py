"""Read an ingested store (index.parquet + code shards + meta.json) and build the embedded sample store.

Layout and columns: docs/ARCHITECTURE.md, section Store. `Store.program(row_id)` reads one row group of one code
shard, located through a small per-split lookup (row numbers -> shard, row group) loaded once per `Store`.
"""

from __future__ import annotations

import fcntl
import json
import os
import threading
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pyarrow.compute as pc
import pyarrow.parquet as pq

from queries.settings import SAMPLE_DIR, Settings

SCHEMA_VERSION = 1


class StoreError(RuntimeError):
    """A store that is missing, empty or broken, or a row id it does not hold."""


def parse_row_id(row_id: str) -> tuple[str, int]:
    split, sep, row = str(row_id).rpartition("/")
    if not sep or not split or not row.isdigit():
        raise StoreError(f"bad row id {row_id!r}: expected '<split>/<row>', e.g. 'train/000123'")
    return split, int(row)


class Store:
    def __init__(self, path: str | Path):
        self.path = Path(path)
        meta_path = self.path / "meta.json"
        if not meta_path.is_file():
            raise StoreError(f"{self.path}: no store here (meta.json missing); build one with "
                             f"`python -m queries ingest SOURCE... --store {self.path}`")
        try:
            self.meta = json.loads(meta_path.read_text())
        except (OSError, ValueError) as exc:
            raise StoreError(f"{meta_path}: unreadable ({exc}); rebuild the store") from exc
        if self.meta.get("schema_version") != SCHEMA_VERSION:
            raise StoreError(f"{meta_path}: schema_version {self.meta.get('schema_version')!r}, "
                             f"this code reads {SCHEMA_VERSION}; rebuild the store")
        self.index_path = self.path / "index.parquet"
        if not self.index_path.is_file():
            raise StoreError(f"{self.index_path}: missing; rebuild the store")
        self.code_paths = sorted((self.path / "code").glob("part-*.parquet"))
        self._locations: dict[str, tuple[np.ndarray, np.ndarray, np.ndarray]] | None = None
        self._code_meta: dict[int, pq.FileMetaData] = {}
        self._lock = threading.Lock()

    @property
    def rows(self) -> int:
        return int(self.meta.get("rows_indexed", 0))

    def program(self, row_id: str) -> str:
        """The program text of one row; StoreError when the row is not in the store."""
        split, row = parse_row_id(row_id)
        rows, shards, groups = self._lookup().get(split, (np.empty(0, np.int64),) * 3)
        at = int(np.searchsorted(rows, row))
        if at >= len(rows) or rows[at] != row:
            raise StoreError(f"{self.path}: no row {row_id!r}")
        shard, group = int(shards[at]), int(groups[at])
        path = self.path / "code" / f"part-{shard:05d}.parquet"
        try:
            table = pq.ParquetFile(path, metadata=self._meta_of(shard, path)).read_row_group(group, columns=["id", "x"])
        except (OSError, ValueError) as exc:
            raise StoreError(f"{path}: row group {group} unreadable ({exc}); rebuild the store") from exc
        match = table.filter(pc.equal(table["id"], f"{split}/{row:06d}"))
        if match.num_rows != 1:
            raise StoreError(f"{path}: row group {group} does not hold {row_id!r}; rebuild the store")
        return match["x"][0].as_py()

    def _meta_of(self, shard: int, path: Path) -> pq.FileMetaData:
        with self._lock:
            if shard not in self._code_meta:
                self._code_meta[shard] = pq.read_metadata(path)
            return self._code_meta[shard]

    def _lookup(self) -> dict[str, tuple[np.ndarray, np.ndarray, np.ndarray]]:
        with self._lock:
            if self._locations is None:
                try:
                    t = pq.read_table(self.index_path, columns=["split", "row", "code_shard", "code_rg"])
                except (OSError, ValueError) as exc:
                    raise StoreError(f"{self.index_path}: unreadable ({exc}); rebuild the store") from exc
                locations = {}
                splits = t["split"].to_numpy(zero_copy_only=False)
                for split in np.unique(splits):
                    mask = splits == split
                    rows = t["row"].to_numpy()[mask]
                    order = np.argsort(rows, kind="stable")
                    locations[str(split)] = (
                        rows[order],
                        t["code_shard"].to_numpy()[mask][order],
                        t["code_rg"].to_numpy()[mask][order],
                    )
                self._locations = locations
            return self._locations


def replace_file(target: Path, write: Callable[[Path], None]) -> None:
    """Write `target` through `write(temporary path beside it)` and an atomic rename: a reader sees the old file
    or the new one, never part of one."""
    tmp = target.with_name(f".{target.name}.{os.getpid()}.tmp")
    try:
        write(tmp)
        os.replace(tmp, target)
    finally:
        tmp.unlink(missing_ok=True)


def write_meta(store: Path, meta: dict) -> None:
    """Write the store's meta.json atomically."""
    replace_file(store / "meta.json", lambda path: path.write_text(json.dumps(meta, indent=1)))


def sample_files() -> list[Path]:
    return sorted(SAMPLE_DIR.glob("*.parquet"))


def ensure_sample_store(settings: Settings) -> Path:
    """The store to show: `settings.store` as is, or the sample store, (re)built when missing or stale."""
    if not settings.store_is_sample:
        return settings.store
    files = sample_files()
    if not files:
        raise StoreError(f"the embedded sample is missing: no {SAMPLE_DIR}/*.parquet; "
                         "generate it with scripts/make_sample.py or point TLX_STORE at a built store")
    store = settings.store
    store.parent.mkdir(parents=True, exist_ok=True)
    with open(store.parent / f".{store.name}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # one builder at a time; the others wait and then find it fresh
        if _is_stale(store, files):
            from queries.ingest import ingest

            ingest([str(f) for f in files], store, sample=True, progress=False)
    return store


def _is_stale(store: Path, files: list[Path]) -> bool:
    meta = store / "meta.json"
    if not meta.is_file():
        return True
    try:
        if json.loads(meta.read_text()).get("schema_version") != SCHEMA_VERSION:
            return True
    except (OSError, ValueError):
        return True
    return meta.stat().st_mtime < max(f.stat().st_mtime for f in files)
