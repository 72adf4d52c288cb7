"""`python -m queries score-predictions FILE --store DIR`: a latency model's metrics against the labels, by split
and holdout group, next to the baselines (`queries.scoring.metrics` says what each metric is)."""

from __future__ import annotations

import argparse
import math
import sys
from pathlib import Path

from common.settings import Settings
from common.terminal import inert
from queries.scoring.metrics import METRICS, score_predictions
from queries.scoring.predictions import PredictionsError, read_file, read_predictions
from queries.store import StoreError


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("file", type=Path, metavar="FILE", help="predictions: *.parquet, *.csv or *.jsonl with id, "
                        "score (lower = predicted faster) and optionally p_correct")
    parser.add_argument("--store", required=True, metavar="DIR", help="the store folder")
    parser.add_argument("--csv", action="store_true", help="print the metrics as CSV")


def format_table(table) -> str:
    """Fixed-width text: one line per group and method."""
    columns = ["group", "method", "rows", "problems", *METRICS]
    cells = [[str(c) for c in columns]]
    for row in table.to_dict("records"):
        cells.append([str(row[c]) if c in ("group", "method", "rows", "problems") else
                      ("—" if row[c] is None or (isinstance(row[c], float) and math.isnan(row[c])) else f"{row[c]:.3f}")
                      for c in columns])
    widths = [max(len(r[i]) for r in cells) for i in range(len(columns))]
    return "\n".join("  ".join(c.ljust(w) if i < 2 else c.rjust(w) for i, (c, w) in enumerate(zip(r, widths,
                                                                                                    strict=True)))
                     for r in cells)


def main(args: argparse.Namespace, settings: Settings) -> int:
    try:
        predictions = read_predictions(read_file(args.file), str(args.file))
    except OSError as exc:
        print(inert(f"score-predictions: cannot read {args.file}: {exc}"), file=sys.stderr)
        return 2
    except PredictionsError as exc:
        print(inert(f"score-predictions: {exc}"), file=sys.stderr)
        return 2
    try:
        table, unknown = score_predictions(args.store, settings, predictions)
    except StoreError as exc:
        print(inert(f"score-predictions: {exc}"), file=sys.stderr)
        return 1
    if unknown:
        print(inert(f"score-predictions: {len(unknown)} id(s) of {args.file} are not in the store and were left out "
                    f"(first: {', '.join(unknown[:3])})"), file=sys.stderr)
    print(inert(table.to_csv(index=False) if args.csv else format_table(table)))
    return 0
