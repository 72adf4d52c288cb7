"""Re-run results next to labels: per run (`runs`), per problem (`runs_by_problem`), static checks against
measured verdicts (`runs_static_vs_measured`) and the spread of repeated runs (`runs_reproducibility`).

Results come from `settings.runs_dir`'s `results/*.jsonl` (see `queries/results.py`); a missing folder gives empty
tables.
Only results that name a `row_id` of the store are joined; `ratio` = measured `timing.median_ms` / label `y`.
"""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa

from common.settings import Settings
from queries.db import connect
from queries.filters import NO_FILTERS, Filters


def runs(store: Path | str, settings: Settings, f: Filters = NO_FILTERS) -> pa.Table:
    return connect(store, settings).execute("runs_joined", f.params())


def runs_by_problem(store: Path | str, settings: Settings, f: Filters = NO_FILTERS) -> pa.Table:
    return connect(store, settings).execute("runs_by_problem", f.params())


def runs_static_vs_measured(store: Path | str, settings: Settings, f: Filters = NO_FILTERS) -> pa.Table:
    return connect(store, settings).execute("runs_static_vs_measured", f.params())


def runs_reproducibility(store: Path | str, settings: Settings, f: Filters = NO_FILTERS) -> pa.Table:
    return connect(store, settings).execute("runs_reproducibility", f.params())
