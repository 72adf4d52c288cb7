"""The queries API the pages call: typed wrappers over `queries/sql/*.sql`, each returning Arrow tables.

Every function takes the store path first and the process's `Settings` (read once at its entry, passed down)
second. Program text is only returned by `row()` and `export(include_code=True)`; everything else works on the
code-free index. Names: docs/ARCHITECTURE.md.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from pathlib import Path

import pyarrow as pa

from common.settings import Settings
from queries.agreement import agreement
from queries.console.statements import ConsoleError, console
from queries.db import QueryTimeout, connect
from queries.detail import RowDetail, row
from queries.export import ExportError, export
from queries.export_train import TrainExport, TrainExportError, train_export
from queries.filters import HONEST, NO_FILTERS, Candidates, Filters
from queries.measured import runs, runs_by_problem, runs_reproducibility, runs_static_vs_measured
from queries.neardup.views import clustered, near_copies, problem_clusters
from queries.runner_match import mismatched_rows, store_build_id
from queries.search.engine import SearchError, SearchResult, search_code
from queries.search.facts import SearchHits, search_hits
from queries.store import StoreError

__all__ = [
    "agreement", "Candidates", "ConsoleError", "ExportError", "Filters", "flag_counts", "Overview", "QueryTimeout",
    "RowDetail", "SearchError", "SearchResult", "StoreError", "console", "export", "failure_examples", "failures",
    "fastest", "mismatched_rows", "overlap", "overlap_summary",
    "overview", "problem_latencies", "problem_summary", "problems", "row", "runs", "runs_by_problem",
    "runs_reproducibility", "runs_static_vs_measured", "search_code", "clustered", "near_copies", "problem_clusters",
    "TrainExport", "TrainExportError", "train_export", "search_hits", "store_build_id", "SearchHits", "selected_rows", "unmeasured_failures",
]

PROBLEM_SORTS = (
    "candidates", "distinct_candidates", "failures", "failure_rate", "y_min", "y_p10", "y_median", "y_p90",
    "y_max", "spread", "title", "level", "problem_id", "problem_key", "holdout_group", "train_rows", "test_rows",
    "ranked", "flagged_rows", "best_speedup",
)


@dataclass(frozen=True)
class Overview:
    """`totals`: one dict (rows, ok_rows, failed_rows, failure_rate, problems, distinct_candidates, train_rows,
    test_rows, autotuned_rows, static_error_rows, flagged_rows (a hack flag, static or the latest run's),
    static_unchecked_rows (static hack checks not run), mean_kernels); `groups`: per split/holdout group rows and
    failure rate; `y_quantiles`: q, y; `y_histogram`: bin_lo, bin_hi, rows (log10 bins of the label);
    `kernels`: rows and failures per number of kernels."""

    totals: dict
    groups: pa.Table
    y_quantiles: pa.Table
    y_histogram: pa.Table
    kernels: pa.Table


HISTOGRAM_BINS_PER_DECADE = 10


def overview(store: Path | str, settings: Settings, f: Filters = NO_FILTERS) -> Overview:
    db = connect(store, settings)
    params = f.params()
    return Overview(
        totals=db.execute("overview_totals", params, memo=True).to_pylist()[0],
        groups=db.execute("overview_groups", params, memo=True),
        y_quantiles=db.execute("overview_y_quantiles", params, memo=True),
        y_histogram=db.execute("overview_y_histogram", {**params, "bins_per_decade": HISTOGRAM_BINS_PER_DECADE},
                               memo=True),
        kernels=db.execute("overview_kernels", params, memo=True),
    )


def problems(store: Path | str, settings: Settings, f: Filters = NO_FILTERS, sort: str = "candidates",
             descending: bool = True, limit: int | None = None, c: Candidates = HONEST) -> pa.Table:
    """One row per problem (see `sql/setup_filtered.sql`, `problem_table`; label columns over the candidates `c`
    passes) with `best_speedup` (`sql/problem_speedups.sql`, null where no ranked row was re-run correct), sorted
    (ties by problem_key; nulls last either way)."""
    if sort not in PROBLEM_SORTS:
        raise ValueError(f"cannot sort problems by {sort!r}; choose one of {', '.join(PROBLEM_SORTS)}")
    db = connect(store, settings)
    if f.is_empty and c.is_default:
        table = db.execute("problems_unfiltered")
    else:
        table = db.execute("problems", {**f.params(), **c.params()}, memo=True)
    speedups = db.execute("problem_speedups", {**f.params(), **c.params()}, memo=True)
    table = table.join(speedups, "problem_key", join_type="left outer")
    order = "descending" if descending else "ascending"
    table = table.sort_by([(sort, order), ("problem_key", "ascending")])
    return table if limit is None else table.slice(0, max(int(limit), 0))


def problem_summary(store: Path | str, settings: Settings, problem_key: str, c: Candidates = HONEST) -> dict | None:
    """The unfiltered problems-table row of one problem (label columns over the candidates `c` passes: the page
    header's fastest), or None when the store has no such problem."""
    db = connect(store, settings)
    if c.is_default:
        rows = db.execute("problem_summary", {"problem_key": problem_key}).to_pylist()
    else:
        rows = db.execute("problems", {**_one_problem(problem_key, NO_FILTERS), **c.params()}, memo=True).to_pylist()
    return rows[0] if rows else None


def _one_problem(problem_key: str, f: Filters) -> dict:
    """Filter parameters for a per-problem question: `problem_key` replaces any problem in `f`."""
    return replace(f, problem_key=problem_key).params()


def problem_latencies(store: Path | str, settings: Settings, problem_key: str, f: Filters = NO_FILTERS) -> pa.Table:
    return connect(store, settings).execute("problem_latencies", _one_problem(problem_key, f), memo=True)


def fastest(store: Path | str, settings: Settings, problem_key: str, k: int = 20, f: Filters = NO_FILTERS,
            c: Candidates = HONEST, fold_near: bool = False) -> pa.Table:
    """The problem's leaderboard (`sql/fastest.sql`) over the candidates `c` passes (by default Triton kernels only
    and no hack flag): copies folded, the shown row's latest re-run verdict, flags, Triton share, and speedup vs
    the eager reference timed in that run (`ref_median_ms`, `run_id`). `fold_near`: near-copies (one
    near-duplicate cluster) fold too."""
    params = {**_one_problem(problem_key, f), "k": max(int(k), 0), **c.params(), "fold_near": fold_near}
    return connect(store, settings).execute("fastest", params, memo=True)


def flag_counts(store: Path | str, settings: Settings, f: Filters = NO_FILTERS) -> pa.Table:
    """Rows per flag (static and latest run's) among the filtered rows: flag, kind, label, hack, rows, share,
    meaning (`sql/flag_counts.sql`)."""
    return connect(store, settings).execute("flag_counts", f.params(), memo=True)


def failures(store: Path | str, settings: Settings, f: Filters = NO_FILTERS) -> pa.Table:
    """Failed rows by their most trusted cause, each row once: source ('measured' where re-run, else 'triaged'
    where a CPU triage passed or failed, else 'static'), basis (what the count rests on: "measured on <GPU>",
    "triaged on CPU (torch X, sm_90)", "static"), error_type, rows, problems, share of all failed rows (see
    `sql/failures.sql`, `sql/setup_causes.sql`)."""
    return connect(store, settings).execute("failures", f.params(), memo=True)


def unmeasured_failures(store: Path | str, settings: Settings, f: Filters = NO_FILTERS) -> list[str]:
    """Ids of filtered rows with an empty label and no run result (a bulk re-run would measure their cause)."""
    return connect(store, settings).execute("unmeasured_failures", f.params(), memo=True)["id"].to_pylist()


def failure_examples(store: Path | str, settings: Settings, f: Filters = NO_FILTERS, limit: int = 50) -> pa.Table:
    params = {**f.params(), "limit": max(int(limit), 0)}
    return connect(store, settings).execute("failure_examples", params, memo=True)


def overlap(store: Path | str, settings: Settings) -> pa.Table:
    return connect(store, settings).execute("overlap", memo=True)


def overlap_summary(store: Path | str, settings: Settings) -> pa.Table:
    return connect(store, settings).execute("overlap_summary", memo=True)


def selected_rows(store: Path | str, settings: Settings, f: Filters = NO_FILTERS,
                  problem: str | None = None) -> pa.Table:
    """id, code_shard, code_rg of the rows the pages' filters pick (latest verdicts from `settings.runs_dir` and
    the store's own results), optionally of one problem given by key or test id; in id order. `runner bulk` uses
    it."""
    return connect(store, settings).execute("selected_rows", {**f.params(), "problem": problem})
