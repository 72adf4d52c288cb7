"""Per-run context for pages: settings, the store in use and the runner client, with cached handles."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import streamlit as st

from common.settings import Settings, load_settings


@dataclass(frozen=True)
class StoreInfo:
    """The store the explorer shows, as the sidebar describes it."""

    path: Path
    is_sample: bool
    rows: int
    built_at: str | None
    meta: dict


def settings() -> Settings:
    """Settings from the environment (cheap; read on every run so tests and restarts see changes)."""
    return load_settings()


@st.cache_resource(show_spinner="Building the sample store (first start only)…")
def _sample_store_path(store: str, cache_dir: str) -> str:
    from queries.ingest import ensure_sample_store

    return str(ensure_sample_store(load_settings()))


@st.cache_resource(show_spinner=False)
def _open_store(path: str, meta_mtime: float):
    """A `queries.store.Store` handle, reopened when the store's meta.json changes (a rebuild)."""
    from queries.store import Store

    return Store(Path(path))


def _meta_mtime(path: Path) -> float:
    try:
        return (path / "meta.json").stat().st_mtime
    except OSError:
        return -1.0


def current_store(cfg: Settings | None = None) -> StoreInfo:
    """Resolve and open the store; raises `queries.store.StoreError` when it is missing or broken."""
    cfg = cfg or settings()
    path = cfg.store
    if cfg.store_is_sample:
        path = Path(_sample_store_path(str(cfg.store), str(cfg.cache_dir)))
    store = _open_store(str(path), _meta_mtime(path))
    meta = dict(store.meta or {})
    rows = int(meta.get("rows_indexed") or 0)
    if rows == 0:
        from queries.store import StoreError

        reasons = ", ".join(f"{reason}: {n}" for reason, n in (meta.get("reject_reasons") or {}).items())
        read = meta.get("rows_read", 0)
        raise StoreError(f"{path}: the store holds no rows ({read} read from its sources"
                         + (f"; rejected: {reasons}" if reasons else "") + ")")
    return StoreInfo(path=path, is_sample=cfg.store_is_sample, rows=rows, built_at=meta.get("built_at"), meta=meta)


def store_path() -> Path:
    """Path of the store in use (app.py has already checked that it opens)."""
    return current_store().path


@st.cache_resource(show_spinner=False)
def runner_client(url: str, token: str | None):
    """One `runner.service.client.RunnerClient` per (url, token)."""
    from runner.service.client import RunnerClient

    return RunnerClient(url, token)
