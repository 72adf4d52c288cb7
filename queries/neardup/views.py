"""The pages' questions about near-duplicate clusters (typed wrappers over sql/problem_clusters.sql and
sql/row_near_copies.sql; gathered by queries/api.py)."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa

from common.settings import Settings
from queries.db import connect
from queries.store import Store

MAX_LISTED = 200


def clustered(store: Path | str) -> bool:
    """Whether the store's clusters and components were computed (meta.json `near_dups.done`, with `components`:
    a run before components read every row's component as null): without, every row reads null."""
    summary = Store(store).meta.near_dups or {}
    return bool(summary.get("done")) and "components" in summary


def problem_clusters(store: Path | str, settings: Settings, problem_key: str, limit: int = MAX_LISTED) -> pa.Table:
    """The clusters with rows of `problem_key`: cluster, rows, rows_in_store, fastest_id, fastest_y, median_y,
    slowest_y, spread (slowest ÷ fastest correct), failed, train_rows, test_rows; largest first."""
    params = {"problem": problem_key, "limit": int(limit)}
    return connect(store, settings).execute("problem_clusters", params, memo=True)


def near_copies(store: Path | str, settings: Settings, row_id: str, limit: int = MAX_LISTED) -> pa.Table:
    """The other rows of `row_id`'s cluster: id, split, y, ok, measured_status, title, problem_key, same_problem."""
    params = {"row_id": row_id, "limit": int(limit)}
    return connect(store, settings).execute("row_near_copies", params, memo=True)
