"""The embedded sample store: built from `data/sample/*.parquet` on first use, rebuilt when stale."""

from __future__ import annotations

import fcntl
from pathlib import Path

from common.settings import SAMPLE_DIR, Settings
from queries.ingest.pipeline import ingest
from queries.store import META_FILE, SCHEMA_VERSION, StoreError, read_meta


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
            ingest([str(f) for f in files], store, sample=True, progress=False,
                   index_build_mb=settings.index_build_mb)
    return store


def _is_stale(store: Path, files: list[Path]) -> bool:
    try:
        if read_meta(store).schema_version != SCHEMA_VERSION:
            return True
    except StoreError:
        return True
    return (store / META_FILE).stat().st_mtime < max(f.stat().st_mtime for f in files)
