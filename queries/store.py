"""The store format's one owner: its file layout, its index schema, and reading a built store.

A store is a folder: `meta.json`, `index.parquet` (one row per program, `INDEX_SCHEMA`, no code) and code shards
`code/part-NNNNN.parquet` (`CODE_SCHEMA`). Ingest writes it (`queries/ingest/`), everything else reads it; both
take the paths and schemas from here. Layout and columns: docs/ARCHITECTURE.md, section Store.
`Store.program(row_id)` reads one row group of one code shard, located through a small per-split lookup (row
numbers -> shard, row group) loaded once per `Store`; `Store.programs(locations)` reads many, a row group at a time.
"""

from __future__ import annotations

import json
import os
import threading
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field, fields, replace
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from common.errors import TlxError
from common.row_id import BadRowId, format_row_id, parse_row_id

SCHEMA_VERSION = 2  # 2: index column program_sha256
META_FILE = "meta.json"
INDEX_FILE = "index.parquet"
CODE_DIR = "code"
SEARCH_DIR = "search"  # the code search index (queries/ingest/search_build.py writes it, queries/search/index.py reads)
SEARCH_META = "index.json"
SEARCH_INDEX_VERSION = 4  # of the files under SEARCH_DIR (3: lines or trigrams per shard; 4: skeleton lines)
SEARCH_INDEX_READ = (2, 4)  # the versions read (2: lines in every shard, the same files); another is not read
LOCATION_COLUMNS = ("code_shard", "code_rg")  # where a row's text is: code part, row group within it
# columns a store of this schema version may lack (built before them): readers treat them as "not checked"
OPTIONAL_COLUMNS = ("static_flags", "near_dup_cluster", "near_dup_component")
READ_THREADS = 2  # row groups read at once by `Store.programs`
READ_AHEAD = 8  # row groups read ahead of the caller by `Store.programs` (bounds memory)

INDEX_SCHEMA = pa.schema([
    ("id", pa.string()), ("split", pa.string()), ("row", pa.int64()), ("source_file", pa.string()),
    ("problem_key", pa.string()), ("problem_id", pa.string()), ("holdout_group", pa.string()),
    ("title", pa.string()), ("level", pa.int32()), ("y", pa.float64()), ("ok", pa.bool_()),
    ("static_error", pa.string()), ("parse_mode", pa.string()), ("static_flags", pa.list_(pa.string())),
    ("n_kernels", pa.int32()),
    ("kernel_names", pa.list_(pa.string())), ("autotuned", pa.bool_()), ("candidate_key", pa.string()),
    ("n_chars", pa.int64()), ("ref_chars", pa.int64()), ("cand_chars", pa.int64()),
    ("program_sha256", pa.string()), ("code_shard", pa.int32()), ("code_rg", pa.int32()),
    ("near_dup_cluster", pa.string()),  # queries/neardup/command.py; null until it runs, or no near-copy
    ("near_dup_component", pa.string()),  # the same; near-copy links chained (what the training export keeps whole)
])
CODE_SCHEMA = pa.schema([("id", pa.string()), ("x", pa.string())])


def code_path(store: Path, shard: int) -> Path:
    """The code shard `shard` of the store (or build folder) `store`."""
    return Path(store) / CODE_DIR / f"part-{shard:05d}.parquet"


def search_path(store: Path, name: str) -> Path:
    """A file of the code search index of the store (or build folder) `store`."""
    return Path(store) / SEARCH_DIR / name


LINES_FILE, OFFSETS_FILE, POSTINGS_FILE = "lines.arrow", "offsets.npy", "postings.npy"  # one of each per code shard
PIECE_FILES = ("pieces.arrow", "piece_offsets.npy", "piece_postings.npy")  # the same, of a trigram shard's skeletons
WORD_FILES = ("words.arrow", "word_offsets.npy", "word_postings.npy")  # and of the words its pieces were cut at
SKELETON_MARKERS = (1, 2)  # the bytes that stand for a cut word in a skeleton line: an ASCII one, another


def search_shard_path(store: Path, shard: int, name: str) -> Path:
    """The search index's file `name` (LINES_FILE, OFFSETS_FILE, POSTINGS_FILE) for code shard `shard`."""
    return search_path(store, f"part-{shard:05d}.{name}")


class StoreError(TlxError, RuntimeError):
    """A store that is missing, empty or broken, or a row id it does not hold."""


@dataclass(frozen=True)
class StoreMeta:
    """`meta.json`, typed: the fields the code reads, and `rest`, everything else it holds as written (sources,
    rejects, bad files, build figures: docs/ARCHITECTURE.md, section Store). Ingest writes it (`pipeline.py`, from
    stage 1's summary; `program_checks.py`, `with_syntax_check`), `read_meta`/`Store.meta` read it."""

    schema_version: int | None = None
    build_id: str | None = None
    built_at: str | None = None
    rows_read: int = 0
    rows_indexed: int = 0
    rows_rejected: int = 0
    reject_reasons: dict[str, int] = field(default_factory=dict)
    sample: bool = False
    syntax_check: dict | None = None  # {"done": bool, ...}; None in stores whose ingest parsed every program at once
    near_dups: dict | None = None  # {"done": bool, "clusters", ...} (queries/neardup/); None: never computed
    rest: dict = field(default_factory=dict)

    @classmethod
    def from_dict(cls, meta: dict) -> StoreMeta:
        if not isinstance(meta, dict):
            raise ValueError(f"meta.json must hold an object, not {type(meta).__name__}")
        names = {f.name for f in fields(cls)} - {"rest"}
        return cls(**{k: v for k, v in meta.items() if k in names},
                   rest={k: v for k, v in meta.items() if k not in names})

    def to_dict(self) -> dict:
        typed = {f.name: getattr(self, f.name) for f in fields(self) if f.name != "rest"}
        return {**self.rest, **{k: v for k, v in typed.items() if v is not None}}

    def with_syntax_check(self, result: dict) -> StoreMeta:
        return replace(self, syntax_check=result)


def read_meta(store: Path | str) -> StoreMeta:
    """The store's meta.json; StoreError naming the file when it is missing or unreadable."""
    meta_path = Path(store) / META_FILE
    if not meta_path.is_file():
        raise StoreError(f"{Path(store)}: no store here (meta.json missing); build one with "
                         f"`python -m queries ingest SOURCE... --store {Path(store)}`")
    try:
        return StoreMeta.from_dict(json.loads(meta_path.read_text()))
    except (OSError, ValueError, TypeError) as exc:
        raise StoreError(f"{meta_path}: unreadable ({exc}); rebuild the store") from exc


def store_version(store: Path | str) -> int:
    """The one version of what a store holds, for every cache of it (a connection, the explorer's answers,
    searches): meta.json's modification time in ns, which each write of it moves (a rebuild, the syntax check's
    rewrite of the index). StoreError when there is no meta.json."""
    try:
        return (Path(store) / META_FILE).stat().st_mtime_ns
    except OSError as exc:
        raise StoreError(f"{store}: no store here (meta.json missing: {exc.strerror})") from exc


class RowNotInStore(StoreError, LookupError):
    """A well-formed row id that the store does not hold (or a malformed one)."""


class Store:
    def __init__(self, path: str | Path):
        self.path = Path(path)
        self.meta = read_meta(self.path)
        if self.meta.schema_version != SCHEMA_VERSION:
            raise StoreError(f"{self.path / META_FILE}: schema_version {self.meta.schema_version!r}, "
                             f"this code reads {SCHEMA_VERSION}; rebuild the store")
        self.index_path = self.path / INDEX_FILE
        if not self.index_path.is_file():
            raise StoreError(f"{self.index_path}: missing; rebuild the store")
        self.code_paths = sorted((self.path / CODE_DIR).glob("part-*.parquet"))
        self._locations: dict[str, tuple[np.ndarray, np.ndarray, np.ndarray]] | None = None
        self._code_meta: dict[int, pq.FileMetaData] = {}
        self._lock = threading.Lock()

    @property
    def rows(self) -> int:
        return int(self.meta.rows_indexed)

    def program(self, row_id: str) -> str:
        """The program text of one row; StoreError when the row is not in the store."""
        try:
            split, row = parse_row_id(row_id)
        except BadRowId as e:
            raise RowNotInStore(str(e)) from None
        rows, shards, groups = self._lookup().get(split, (np.empty(0, np.int64),) * 3)
        at = int(np.searchsorted(rows, row))
        if at >= len(rows) or rows[at] != row:
            raise RowNotInStore(f"{self.path}: no row {row_id!r}")
        shard, group = int(shards[at]), int(groups[at])
        table = self._row_group(shard, group)
        match = table.filter(pc.equal(table["id"], format_row_id(split, row)))
        if match.num_rows != 1:
            raise StoreError(f"{self.code_path(shard)}: row group {group} does not hold {row_id!r}; rebuild the store")
        return match["x"][0].as_py()

    def code_path(self, shard: int) -> Path:
        return code_path(self.path, shard)

    def read_index(self, columns: Iterable[str]) -> pa.Table:
        """Columns of index.parquet (names from `INDEX_SCHEMA`; an `OPTIONAL_COLUMNS` one the store lacks comes
        back all null)."""
        columns = list(columns)
        unknown = [c for c in columns if c not in INDEX_SCHEMA.names]
        if unknown:
            raise ValueError(f"not index columns: {', '.join(unknown)}")
        try:
            present = set(pq.read_schema(self.index_path).names)
            table = pq.read_table(self.index_path, columns=[c for c in columns if c in present])
            for name in (c for c in columns if c not in present and c in OPTIONAL_COLUMNS):
                kind = INDEX_SCHEMA.field(name).type
                table = table.add_column(columns.index(name), name, pa.nulls(table.num_rows, kind))
            return table
        except (OSError, ValueError, KeyError) as exc:
            raise StoreError(f"{self.index_path}: unreadable ({exc}); rebuild the store") from exc

    def programs(self, locations: Iterable[tuple[str, int, int]]) -> Iterator[tuple[str, str]]:
        """(row id, program) for (row id, code_shard, code_rg) triples, reading each row group once; rows come
        out grouped by row group. StoreError when a row group is unreadable or lacks one of its rows."""
        by_group: dict[tuple[int, int], list[str]] = {}
        for row_id, shard, group in locations:
            by_group.setdefault((int(shard), int(group)), []).append(row_id)
        groups = sorted(by_group)
        with ThreadPoolExecutor(READ_THREADS, thread_name_prefix="program-read") as pool:  # pyarrow frees the GIL
            for start in range(0, len(groups), READ_AHEAD):
                window = groups[start : start + READ_AHEAD]
                for (shard, group), table in zip(window, pool.map(lambda g: self._row_group(*g), window),
                                                 strict=True):
                    where = {row_id: i for i, row_id in enumerate(table["id"].to_pylist())}
                    for row_id in by_group[shard, group]:
                        if row_id not in where:
                            raise StoreError(f"{self.code_path(shard)}: row group {group} does not hold "
                                             f"{row_id!r}; rebuild the store")
                        yield row_id, table["x"][where[row_id]].as_py()  # only the programs asked for

    def _row_group(self, shard: int, group: int) -> pa.Table:
        """Row group `group` (id, x) of code part `shard`; its footer is read once per `Store`."""
        path = self.code_path(shard)
        try:
            with self._lock:
                if shard not in self._code_meta:
                    self._code_meta[shard] = pq.read_metadata(path)
                meta = self._code_meta[shard]
            return pq.ParquetFile(path, metadata=meta).read_row_group(group, columns=["id", "x"])
        except (OSError, ValueError) as exc:
            raise StoreError(f"{path}: row group {group} unreadable ({exc}); rebuild the store") from exc

    def _lookup(self) -> dict[str, tuple[np.ndarray, np.ndarray, np.ndarray]]:
        with self._lock:
            if self._locations is None:
                t = self.read_index(["split", "row", *LOCATION_COLUMNS])
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


def write_meta(store: Path, meta: StoreMeta) -> None:
    """Write the store's meta.json atomically."""
    replace_file(Path(store) / META_FILE, lambda path: path.write_text(json.dumps(meta.to_dict(), indent=1)))
