"""Command line of the data layer: `python -m queries ingest SOURCE... --store DIR`."""

from __future__ import annotations

import argparse
import sys

from queries.ingest import IngestError, ingest
from queries.sources import SourceError


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m queries", description=__doc__)
    commands = parser.add_subparsers(dest="command", required=True)
    build = commands.add_parser("ingest", help="build a store from dataset Parquet files")
    build.add_argument("sources", nargs="+", metavar="SOURCE",
                       help="a Parquet file, a folder or glob of them, or hf://datasets/makora-ai/triton-gpu-latency")
    build.add_argument("--store", required=True, metavar="DIR", help="the store folder to (re)build")
    build.add_argument("--skip-bad-files", action="store_true",
                       help="list unreadable files as rejected instead of failing the build")
    build.add_argument("--workers", type=int, default=None, help="parser processes (default: all cores)")
    build.add_argument("--quiet", action="store_true", help="no progress or summary on stderr")
    args = parser.parse_args(argv)
    try:
        ingest(args.sources, args.store, skip_bad_files=args.skip_bad_files, workers=args.workers,
               progress=not args.quiet)
    except (IngestError, SourceError) as exc:
        print(f"ingest failed: {exc}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
