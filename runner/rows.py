"""The runner's one door to `queries`: row ids -> program texts, for the service (one row) and bulk runs (many
rows, one row group read at a time), and the rows bulk selects by the explorer's filters.

The only module of `runner/` that imports `queries` (tests/test_architecture.py keeps it so), always lazily, so
the rest of the runner imports with stdlib + torch + triton alone (no pyarrow, no duckdb).
"""

from __future__ import annotations

import sys
import threading
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path

from common.errors import TlxError
from common.settings import Settings

_stores: dict[tuple[Path, int], object] = {}  # per (path, `queries.store.store_version`)
_stores_lock = threading.Lock()


class RowNotFound(TlxError, LookupError):
    """The store holds no such row."""


class StoreUnavailable(TlxError, RuntimeError):
    """No store is configured, or it is missing or broken, or this Python lacks the packages that read it."""


@contextmanager
def _store_packages():
    """Imports of `queries` inside it that fail for a missing package (a GPU host may carry only stdlib, torch and
    triton) raise StoreUnavailable naming the package, so jobs that send program text still run and /health
    answers."""
    try:
        yield
    except ModuleNotFoundError as e:
        raise StoreUnavailable(
            f"reading the store needs the package {e.name!r}, which this Python ({sys.executable}) lacks: install "
            "requirements.txt to queue rows by id; jobs that send the program text run without it") from None


def resolve_store(store: Path | None, settings: Settings | None) -> Path:
    """`store` as given, else the `settings`' (`TLX_STORE`, else the embedded sample store, built on first use)."""
    if store is not None:
        return Path(store).expanduser()
    if settings is None:
        raise StoreUnavailable("no store named")
    with _store_packages():
        from queries.ingest import ensure_sample_store
        from queries.store import StoreError

    try:
        return ensure_sample_store(settings)
    except StoreError as e:
        raise StoreUnavailable(str(e)) from None


def open_store(store: Path | None, settings: Settings | None):
    """A cached `queries.store.Store` for the path (its row lookup is loaded once), kept per store version like
    every cache of a store: a rebuilt store is opened again, its old handle dropped."""
    with _store_packages():
        from queries.store import Store, StoreError, store_version

    path = resolve_store(store, settings)
    try:
        key = (path, store_version(path))
    except StoreError as e:
        raise StoreUnavailable(str(e)) from None
    with _stores_lock:
        if key not in _stores:
            try:
                handle = Store(path)
            except StoreError as e:
                raise StoreUnavailable(str(e)) from None
            for old in [k for k in _stores if k[0] == path]:
                del _stores[old]
            _stores[key] = handle
        return _stores[key]


def filtered_rows(store: Path, settings: Settings, *, problem: str | None = None, **filters: str | None,
                  ) -> list[tuple[str, int, int]]:
    """(row id, code shard, code row group) of the rows `queries.api.selected_rows` picks with these
    `queries.filters.Filters` fields (split, holdout_group, status, error_type, error_source, triage_status,
    triage_error), with the latest verdicts of `settings.runs_dir`, in id order."""
    with _store_packages():
        from queries import api
        from queries.filters import Filters

    try:
        table = api.selected_rows(store, settings, Filters(**filters), problem=problem)
    except (api.StoreError, api.QueryTimeout) as e:
        raise StoreUnavailable(str(e)) from None
    return list(zip(table["id"].to_pylist(), table["code_shard"].to_pylist(), table["code_rg"].to_pylist(),
                    strict=True))


def store_identity(store: Path | None, settings: Settings | None) -> dict[str, str | None]:
    """The store rows are resolved against: its path and build id (None where it cannot be opened), so that an
    explorer can tell whether it shows the same store before it queues rows."""
    try:
        handle = open_store(store, settings)
    except StoreUnavailable as e:
        return {"path": str(store) if store is not None else None, "build_id": None, "error": str(e)}
    return {"path": str(handle.path), "build_id": handle.meta.build_id}


def load_program(store: Path | None, row_id: str, settings: Settings | None) -> str:
    with _store_packages():
        from queries.store import RowNotInStore, StoreError

    handle = open_store(store, settings)
    try:
        return handle.program(row_id)
    except RowNotInStore as e:
        raise RowNotFound(str(e)) from None
    except StoreError as e:
        raise StoreUnavailable(str(e)) from None


def iter_programs(store: Path, locations: Iterable[tuple[str, int, int]]) -> Iterator[tuple[str, str]]:
    """(row id, program) for (row id, code_shard, code_rg) triples, reading each row group once.

    Rows come out grouped by row group; a row missing from its row group raises StoreUnavailable.
    """
    with _store_packages():
        from queries.store import Store, StoreError

    try:
        yield from Store(Path(store)).programs(locations)  # a fresh handle: bulk may follow a rebuild
    except StoreError as e:
        raise StoreUnavailable(str(e)) from None
