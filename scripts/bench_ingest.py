"""Time ingest against the floor of one plain DuckDB pass over the same `x` column, with peak memory.

    python scripts/bench_ingest.py CORPUS_DIR [--store DIR] [--workers N] [--steps floor,read,ingest] [--keep]

Each step runs in its own subprocess; peak RSS is that of its largest process (resource.getrusage of
children, which includes ingest's parser workers). Steps: `duckdb floor` (SELECT sum(length(x))), `read only`
(ingest's streaming reader, no parsing, no writing), `ingest` (`python -m queries ingest`). Prints a Markdown
table with the machine, the date and the command.
"""

from __future__ import annotations

import argparse
import os
import platform
import resource
import shutil
import subprocess
import sys
import time
from datetime import UTC, datetime
from pathlib import Path

import pyarrow.parquet as pq

REPO = Path(__file__).resolve().parent.parent

DUCKDB_FLOOR = """
import duckdb, sys
con = duckdb.connect()
con.execute("SET threads = 2")
files = sys.argv[1:]
print(con.execute("SELECT sum(length(x)) FROM read_parquet(?)", [files]).fetchone()[0])
"""

READ_ONLY = """
import sys
from pathlib import Path
from queries.ingest_read import check_file, read_batches
from queries.sources import resolve_sources
chars = 0
for f in resolve_sources(sys.argv[1:]):
    rows, columns = check_file(f.path)
    for batch in read_batches(f, columns, 1024, 0):
        chars += sum(len(t) for t in batch.texts if t)
print(chars)
"""


def _run(label: str, argv: list[str]) -> dict:
    before = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    started = time.monotonic()
    done = subprocess.run(argv, cwd=REPO, capture_output=True, text=True, env={**os.environ, "PYTHONPATH": str(REPO)})
    wall = time.monotonic() - started
    if done.returncode != 0:
        sys.exit(f"{label} failed:\n{done.stderr[-3000:]}")
    peak = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss  # KiB, max over all children so far
    return {"step": label, "wall_s": wall, "peak_mb": peak / 1024 if peak > before else None}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("corpus", type=Path)
    parser.add_argument("--store", type=Path, default=REPO / ".bench" / "bench-store")
    parser.add_argument("--workers", type=int, default=None)
    parser.add_argument("--steps", default="floor,read,ingest", help="comma-separated subset of floor,read,ingest")
    parser.add_argument("--keep", action="store_true", help="keep the built store (for scripts/bench_queries.py)")
    args = parser.parse_args()
    files = sorted(str(p) for p in args.corpus.glob("*.parquet"))
    rows = sum(pq.read_metadata(f).num_rows for f in files)
    groups = sum(pq.read_metadata(f).num_row_groups for f in files)
    size = sum(Path(f).stat().st_size for f in files)
    py = sys.executable
    ingest = [py, "-m", "queries", "ingest", *files, "--store", str(args.store), "--quiet"]
    if args.workers:
        ingest += ["--workers", str(args.workers)]
    steps = {"floor": ("duckdb floor", [py, "-c", DUCKDB_FLOOR, *files]),
             "read": ("read only", [py, "-c", READ_ONLY, *files]),
             "ingest": ("ingest", ingest)}
    wanted = ["floor", *(s for s in args.steps.split(",") if s != "floor")]  # the floor is the yardstick
    results = [_run(*steps[name]) for name in wanted]
    if not args.keep:
        shutil.rmtree(args.store, ignore_errors=True)
    floor = results[0]["wall_s"]
    mem_gb = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / 2**30
    print(f"date {datetime.now(UTC):%Y-%m-%d %H:%M} UTC; {platform.node()}: nproc {os.cpu_count()}, "
          f"RAM {mem_gb:.0f} GiB, load average {os.getloadavg()[0]:.1f} at the end")
    print(f"corpus {args.corpus}: {len(files)} files, {rows:,} rows, {groups} row groups, {size / 1e6:,.0f} MB")
    print(f"command: {' '.join([Path(py).name, *sys.argv])}\n")
    print("| step | wall s | rows/s | × floor | peak RSS MB |\n|---|---:|---:|---:|---:|")
    for r in results:
        peak = f"{r['peak_mb']:,.0f}" if r["peak_mb"] else "≤ previous"
        print(f"| {r['step']} | {r['wall_s']:,.1f} | {rows / r['wall_s']:,.0f} | {r['wall_s'] / floor:,.1f} | {peak} |")


if __name__ == "__main__":
    main()
