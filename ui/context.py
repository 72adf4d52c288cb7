"""Per-run context for pages: settings, the store in use and the runner client, with cached handles."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import streamlit as st

from common.settings import Settings, load_settings

if TYPE_CHECKING:
    from queries.store import StoreMeta


@dataclass(frozen=True)
class StoreInfo:
    """The store the explorer shows, as the sidebar describes it."""

    path: Path
    is_sample: bool
    rows: int
    built_at: str | None
    meta: StoreMeta
    version: int  # `queries.store.store_version`: the key of every cache of the store's answers


_SETTINGS_KEY = "_tlx_settings"


def settings() -> Settings:
    """The settings, read from the environment once per browser session (the explorer's entry) and kept in it;
    pages and widgets take them from here and pass them down."""
    if _SETTINGS_KEY not in st.session_state:
        st.session_state[_SETTINGS_KEY] = load_settings()
    return st.session_state[_SETTINGS_KEY]


@st.cache_resource(show_spinner="Building the sample store (first start only)…")
def _sample_store_path(store: str, cache_dir: str, _settings: Settings) -> str:
    """The sample store's path, built once per (store, cache dir); `_settings` (unhashed) says how."""
    from queries.ingest import ensure_sample_store

    return str(ensure_sample_store(_settings))


@st.cache_resource(show_spinner=False)
def _open_store(path: str, version: int):
    """A `queries.store.Store` handle, reopened when the store's version changes (a rebuild, the syntax check)."""
    from queries.store import Store

    return Store(Path(path))


def current_store(cfg: Settings | None = None) -> StoreInfo:
    """Resolve and open the store; raises `queries.store.StoreError` when it is missing or broken."""
    cfg = cfg or settings()
    path = cfg.store
    if cfg.store_is_sample:
        path = Path(_sample_store_path(str(cfg.store), str(cfg.cache_dir), cfg))
    from queries.store import StoreError, store_version

    version = store_version(path)
    store = _open_store(str(path), version)
    meta = store.meta
    rows = int(meta.rows_indexed or 0)
    if rows == 0:
        reasons = ", ".join(f"{reason}: {n}" for reason, n in (meta.reject_reasons or {}).items())
        read = meta.rows_read
        raise StoreError(f"{path}: the store holds no rows ({read} read from its sources"
                         + (f"; rejected: {reasons}" if reasons else "") + ")")
    return StoreInfo(path=path, is_sample=cfg.store_is_sample, rows=rows, built_at=meta.built_at, meta=meta,
                     version=version)


def store_path() -> Path:
    """Path of the store in use (app.py has already checked that it opens)."""
    return current_store().path


@st.cache_resource(show_spinner=False)
def runner_client(url: str, token: str | None):
    """One `runner.service.client.RunnerClient` per (url, token)."""
    from runner.service.client import RunnerClient

    return RunnerClient(url, token)
