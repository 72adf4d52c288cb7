"""Command line of the data layer: `python -m queries ingest SOURCE... --store DIR`,
`python -m queries check-syntax --store DIR`, `python -m queries agreement --store DIR [--profile NAME]` and
`python -m queries score-predictions FILE --store DIR`, `python -m queries near-dups --store DIR` and
`python -m queries export-train --store DIR --out FILE.parquet`."""

from __future__ import annotations

import argparse
import sys
from dataclasses import replace
from pathlib import Path

from common.settings import Settings, load_settings
from common.terminal import inert
from queries.ingest import IngestError, ingest
from queries.ingest.malloc import keep_freed_memory
from queries.ingest.program_checks import SyntaxCheckError, check_syntax
from queries.ingest.sources import SourceError
from queries.neardup.clusters import THRESHOLD
from queries.neardup.command import NearDupError, near_dups
from queries.store import StoreError


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m queries", description=__doc__)
    commands = parser.add_subparsers(dest="command", required=True)
    build = commands.add_parser("ingest", help="build a store from dataset Parquet files")
    build.add_argument("sources", nargs="+", metavar="SOURCE",
                       help="a Parquet file, a folder or glob of them, or hf://datasets/makora-ai/triton-gpu-latency")
    build.add_argument("--store", required=True, metavar="DIR", help="the store folder to (re)build")
    build.add_argument("--skip-bad-files", action="store_true",
                       help="list unreadable files as rejected instead of failing the build")
    build.add_argument("--no-syntax-check", action="store_true",
                       help="stop once the store is usable; mark syntax errors later with check-syntax, "
                            "near-copies with near-dups")
    build.add_argument("--allow-shrink", action="store_true",
                       help="replace the store even when the build indexes no row or under half its rows")
    check = commands.add_parser("check-syntax", help="mark the programs of a built store that do not compile")
    check.add_argument("--store", required=True, metavar="DIR", help="the store folder")
    agree = commands.add_parser("agreement", help="re-run verdicts against the labels, per evaluation profile")
    agree.add_argument("--store", required=True, metavar="DIR", help="the store folder")
    agree.add_argument("--profile", help="one profile only (kernelbench, kernelbench-strict, custom)")
    agree.add_argument("--runs-dir", metavar="DIR", help="run results folder (default TLX_RUNS_DIR)")
    near = commands.add_parser("near-dups", help="cluster the near-duplicate candidates of a built store")
    near.add_argument("--store", required=True, metavar="DIR", help="the store folder")
    near.add_argument("--threshold", type=float, default=THRESHOLD,
                      help=f"estimated Jaccard similarity of token 5-grams that joins two candidates (default {THRESHOLD})")
    export_train = commands.add_parser("export-train", help="the training set without leaks into test")
    from queries.export_train import add_arguments as add_export_train_arguments

    add_export_train_arguments(export_train)
    score = commands.add_parser("score-predictions", help="a latency model's predictions against the labels")
    from queries.scoring import cli as score_cli

    score_cli.add_arguments(score)
    for command in (build, check, near):
        command.add_argument("--workers", type=int, default=None,
                             help="DuckDB threads and syntax-check processes (default: all cores)")
        command.add_argument("--quiet", action="store_true", help="no progress or summary on stderr")
    args = parser.parse_args(argv)
    settings = load_settings()  # once, at the process's entry
    if args.command == "agreement":
        return _agreement(args, settings)
    if args.command == "score-predictions":
        return score_cli.main(args, settings)
    if args.command == "near-dups":
        return _near_dups(args)
    if args.command == "export-train":
        from queries.export_train import main as export_train_main

        return export_train_main(args, settings)
    try:
        if args.command == "ingest":
            keep_freed_memory()  # this process is the ingest's (the explorer's keeps glibc's defaults)
            ingest(args.sources, args.store, skip_bad_files=args.skip_bad_files, workers=args.workers,
                   progress=not args.quiet, syntax_check=not args.no_syntax_check,
                   allow_shrink=args.allow_shrink, index_build_mb=settings.index_build_mb)
        else:
            check_syntax(args.store, workers=args.workers, progress=not args.quiet)
    except (IngestError, SourceError) as exc:
        print(inert(f"ingest failed: {exc}"), file=sys.stderr)
        return 1
    except NearDupError as exc:
        print(f"near-duplicate search failed: {exc} (the store stays usable, without clusters)", file=sys.stderr)
        return 1
    except (SyntaxCheckError, StoreError) as exc:
        print(inert(f"syntax check failed: {exc} (the store stays usable, without syntax errors marked)"),
              file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return 130
    return 0


def _near_dups(args: argparse.Namespace) -> int:
    if not 0 < args.threshold <= 1:
        print(f"near-dups: --threshold {args.threshold} is not in (0, 1]", file=sys.stderr)
        return 2
    try:
        near_dups(args.store, workers=args.workers, progress=not args.quiet, threshold=args.threshold)
    except (NearDupError, StoreError) as exc:
        print(f"near-duplicate search failed: {exc}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return 130
    return 0


def _agreement(args: argparse.Namespace, settings: Settings) -> int:
    from queries.agreement import agreement, format_table

    try:
        runs = replace(settings, runs_dir=Path(args.runs_dir)) if args.runs_dir else settings
        table = agreement(args.store, runs, profile=args.profile)
    except StoreError as exc:
        print(inert(f"agreement: {exc}"), file=sys.stderr)
        return 1
    print(inert(format_table(table)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
