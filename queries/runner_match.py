"""Does a runner service resolve row ids from this store? Its `/health` names the build of the store it reads
(`store_build_id` is this one's), and its jobs name a row and the hash of the program it ran: a row whose hash
differs from this store's was read from another store (or an older build of this one)."""

from __future__ import annotations

from pathlib import Path

from common.settings import Settings
from queries.db import connect
from queries.store import Store, StoreError


def store_build_id(store: Path | str) -> str | None:
    try:
        return Store(store).meta.build_id
    except StoreError:
        return None


def mismatched_rows(store: Path | str, settings: Settings, jobs: list[dict]) -> list[str]:
    """Row ids of `jobs` (the runner's `GET /jobs` summaries; a pair job's `members` each name a row and hash
    too) that this store holds with another program."""
    programs = [m for j in jobs for m in (j.get("members") or [j])]
    ran = {p["row_id"]: p.get("program_sha256") for p in programs if p.get("row_id") and p.get("program_sha256")}
    if not ran:
        return []
    held = connect(store, settings).execute("row_hashes", {"ids": sorted(ran)}).to_pylist()
    return [r["id"] for r in held if r["program_sha256"] and r["program_sha256"] != ran[r["id"]]]
