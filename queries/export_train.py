"""The training set without leaks: `python -m queries export-train --store DIR --out FILE.parquet` and the Export
page.

Train rows are left out when their problem is a test problem (by problem key, and by KernelBench name for a
reference written differently), when their near-duplicate component (queries/neardup/: near-copy links, chains
included) holds a test row, and,
when one representative per cluster is asked for, when another member of their cluster is kept (the fastest
correct). The test rows are those of the chosen holdout groups (all by default). Rules: sql/export_train.sql.
The report says how many rows each rule removed; the removed rows are listed with their reason.
"""

from __future__ import annotations

import argparse
import json
import sys
from dataclasses import dataclass
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from common.errors import TlxError
from common.settings import Settings
from queries.db import connect
from queries.neardup.views import clustered
from queries.store import LOCATION_COLUMNS, Store, StoreError, replace_file

REASONS = ("test_problem_key", "test_kernelbench_name", "near_copy_of_test", "near_copy_folded")
REMOVED_COLUMNS = ("id", "problem_key", "title", "near_dup_cluster", "near_dup_component", "removed_reason")
WRITE_ROWS = 2048  # rows whose code is read and written at a time


class TrainExportError(TlxError):
    """A training export that cannot keep its promise (no clusters in the store, an unknown holdout group)."""


@dataclass(frozen=True)
class TrainExport:
    rows: pa.Table  # the kept train rows: index columns (with code locations) and the latest run's verdict
    removed: pa.Table  # REMOVED_COLUMNS of every train row left out
    report: dict  # counts: train_rows, kept, removed by reason; the holdout groups and the members rule


def train_export(store: Path | str, settings: Settings, holdout_groups: list[str] | None = None,
                 representative: bool = True) -> TrainExport:
    """The leakage-free training rows of `store` against test's `holdout_groups` (None: all)."""
    if not clustered(store):
        raise TrainExportError(f"{store}: no near-duplicate components yet, so near-copies of test rows cannot be "
                               f"left out; run `python -m queries near-dups --store {store}` first")
    db = connect(store, settings)
    known = set(db.run("SELECT DISTINCT holdout_group FROM programs WHERE split = 'test' "
                       "AND holdout_group IS NOT NULL")["holdout_group"].to_pylist())
    unknown = sorted(set(holdout_groups or ()) - known)
    if unknown:
        raise TrainExportError(f"unknown holdout group {', '.join(unknown)}; the store's: {', '.join(sorted(known))}")
    table = db.execute("export_train", {"groups": list(holdout_groups) if holdout_groups else None,
                                        "representative": representative}, timeout_s=300)
    reason = table["removed_reason"]
    kept = table.filter(pc.is_null(reason)).drop_columns(["removed_reason"])
    removed = table.filter(pc.is_valid(reason)).select(list(REMOVED_COLUMNS))
    counts = {name: 0 for name in REASONS}
    for name in reason.drop_null().to_pylist():
        counts[name] += 1
    report = {"train_rows": table.num_rows, "kept": kept.num_rows, "removed": counts,
              "holdout_groups": sorted(holdout_groups) if holdout_groups else sorted(known),
              "members": "representative" if representative else "all",
              "near_dups": Store(store).meta.near_dups}
    return TrainExport(kept, removed, report)


def write_train_export(store: Path | str, out: Path, export: TrainExport, with_code: bool = True) -> None:
    """`out`: the kept rows (with their program text `x` unless not `with_code`), read and written a few row
    groups at a time; `<out>.removed.parquet`: the removed rows and why; `<out>.report.json`: the counts."""
    out = Path(out)
    rows = export.rows
    schema = rows.drop_columns(list(LOCATION_COLUMNS)).schema
    if with_code:
        schema = schema.append(pa.field("x", pa.string()))

    def write(path: Path) -> None:
        reader = Store(store)
        with pq.ParquetWriter(path, schema, compression="zstd") as writer:
            for start in range(0, rows.num_rows, WRITE_ROWS):
                part = rows.slice(start, WRITE_ROWS)
                if with_code:
                    locations = zip(*(part[c].to_pylist() for c in ("id", *LOCATION_COLUMNS)), strict=True)
                    texts = dict(reader.programs(locations))
                    part = part.append_column("x", pa.array([texts[i] for i in part["id"].to_pylist()], pa.string()))
                writer.write_table(part.drop_columns(list(LOCATION_COLUMNS)).cast(schema))

    replace_file(out, write)
    replace_file(_beside(out, "removed.parquet"), lambda p: pq.write_table(export.removed, p, compression="zstd"))
    replace_file(_beside(out, "report.json"), lambda p: p.write_text(json.dumps(export.report, indent=1)))


def _beside(out: Path, suffix: str) -> Path:
    return out.with_name(f"{out.stem}.{suffix}")


def format_report(report: dict) -> str:
    lines = [f"train rows: {report['train_rows']:,}; kept: {report['kept']:,} "
             f"(members: {report['members']}; against test's {', '.join(report['holdout_groups']) or 'no groups'})"]
    lines += [f"  removed, {name}: {count:,}" for name, count in report["removed"].items()]
    return "\n".join(lines)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--store", required=True, metavar="DIR", help="the store folder")
    parser.add_argument("--out", required=True, metavar="FILE.parquet",
                        help="the training rows; FILE.removed.parquet and FILE.report.json are written beside")
    parser.add_argument("--holdout-group", action="append", metavar="NAME",
                        help="test's rows of this holdout group only (repeatable; default: every group)")
    parser.add_argument("--all-members", action="store_true",
                        help="keep every member of a cluster (default: one representative, the fastest correct)")
    parser.add_argument("--no-code", action="store_true", help="index fields only, no program text")


def main(args: argparse.Namespace, settings: Settings) -> int:
    try:
        export = train_export(args.store, settings, args.holdout_group, representative=not args.all_members)
        write_train_export(args.store, Path(args.out), export, with_code=not args.no_code)
    except (TrainExportError, StoreError) as exc:
        print(f"export-train: {exc}", file=sys.stderr)
        return 1
    print(format_report(export.report), file=sys.stderr)
    return 0
