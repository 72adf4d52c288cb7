"""Row ids -> program texts, for the service (one row) and bulk runs (many rows, one row group read at a time).

The only place in `runner/` that touches the store; `queries.store` (pyarrow) is imported lazily so the rest of
the runner imports with stdlib + torch + triton alone.
"""

from __future__ import annotations

import threading
from collections.abc import Iterable, Iterator
from pathlib import Path

from common.errors import TlxError

_stores: dict[Path, object] = {}
_stores_lock = threading.Lock()


class RowNotFound(TlxError, LookupError):
    """The store holds no such row."""


class StoreUnavailable(TlxError, RuntimeError):
    """No store is configured, or it is missing or broken."""


def resolve_store(store: Path | None) -> Path:
    """`store` as given, else `TLX_STORE`, else the embedded sample store (built on first use)."""
    if store is not None:
        return Path(store).expanduser()
    from queries.settings import load_settings
    from queries.store import StoreError, ensure_sample_store

    try:
        return ensure_sample_store(load_settings())
    except StoreError as e:
        raise StoreUnavailable(str(e)) from None


def open_store(store: Path | None):
    """A cached `queries.store.Store` for the path (its row lookup is loaded once)."""
    from queries.store import Store, StoreError

    path = resolve_store(store)
    with _stores_lock:
        if path not in _stores:
            try:
                _stores[path] = Store(path)
            except StoreError as e:
                raise StoreUnavailable(str(e)) from None
        return _stores[path]


def load_program(store: Path | None, row_id: str) -> str:
    from queries.store import StoreError, parse_row_id

    handle = open_store(store)
    try:
        parse_row_id(row_id)
    except StoreError as e:
        raise RowNotFound(str(e)) from None
    try:
        return handle.program(row_id)
    except StoreError as e:
        if "no row" in str(e):
            raise RowNotFound(f"no row {row_id!r} in store {handle.path}") from None
        raise StoreUnavailable(str(e)) from None


def iter_programs(store: Path, locations: Iterable[tuple[str, int, int]]) -> Iterator[tuple[str, str]]:
    """(row id, program) for (row id, code_shard, code_rg) triples, reading each row group once.

    Rows come out grouped by row group; a row missing from its row group raises StoreUnavailable.
    """
    import pyarrow.parquet as pq

    by_group: dict[tuple[int, int], list[str]] = {}
    for row_id, shard, group in locations:
        by_group.setdefault((int(shard), int(group)), []).append(row_id)
    for (shard, group), ids in sorted(by_group.items()):
        path = Path(store) / "code" / f"part-{shard:05d}.parquet"
        try:
            table = pq.ParquetFile(path).read_row_group(group, columns=["id", "x"])
        except (OSError, ValueError) as e:
            raise StoreUnavailable(f"{path}: row group {group} unreadable ({e}); rebuild the store") from None
        programs = dict(zip(table["id"].to_pylist(), table["x"].to_pylist(), strict=True))
        for row_id in ids:
            if row_id not in programs:
                raise StoreUnavailable(f"{path}: row group {group} does not hold {row_id!r}; rebuild the store")
            yield row_id, programs[row_id]
