"""Time ingest against the floor of one plain DuckDB pass over the same `x` column, with peak memory.

    python scripts/bench_ingest.py CORPUS_DIR [--store DIR] [--workers N] [--steps floor,copy,read,ingest] [--keep]

Each step runs in its own subprocess. Peak RSS: that of its largest process (os.wait4's rusage), and the peak of
the sum over all its processes (sampled from /proc twice a second); peak PSS: the peak of the sum of its
processes' proportional set sizes (`/proc/PID/smaps_rollup`, sampled with the RSS: pages shared between
processes, such as the forkserver workers' libraries, counted once). CPU seconds (user + system): os.wait4's,
plus those of the worker processes a forkserver started (sampled; wait4 never sees them). CPU seconds do not
grow when other work shares the cores; wall seconds do, so the load average at the start and end is printed too. Steps: `duckdb floor` (SELECT sum(length(x))),
`copy` (DuckDB reads `x` and writes it back as zstd Parquet, nothing else: the least any ingest that keeps the
programs in its own store can cost), `read` (the Python streaming reader ingest falls back to, no parsing,
no writing), `ingest` (stage 1, `python -m queries ingest --no-syntax-check`: the time to a usable store) and
`syntax` (stage 2, `python -m queries check-syntax`), `neardup` (`python -m queries near-dups`, the clusters). Prints a Markdown table with the machine, the date and the command.
"""

from __future__ import annotations

import argparse
import os
import platform
import shutil
import subprocess
import sys
import threading
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

COPY_ONLY = """
import duckdb, os, sys, tempfile
con = duckdb.connect()
con.execute("SET threads = 2")
out = os.path.join(tempfile.mkdtemp(), "code.parquet")
con.execute(f"COPY (SELECT x FROM read_parquet(?)) TO '{out}' (FORMAT parquet, COMPRESSION zstd, ROW_GROUP_SIZE 2048)",
            [sys.argv[1:]])
print(os.path.getsize(out))
os.remove(out)
"""

READ_ONLY = """
import sys
from pathlib import Path
from queries.ingest.read import check_file, read_batches
from queries.ingest.sources import resolve_sources
chars = 0
for f in resolve_sources(sys.argv[1:]):
    rows, columns = check_file(f.path)
    for batch in read_batches(f, columns, 1024, 0):
        chars += sum(len(t) for t in batch.texts if t)
print(chars)
"""


class _TreeSampler(threading.Thread):
    """Samples /proc twice a second for the processes below `root`: their summed RSS (peak kept) and the CPU time
    of those a forkserver started (worker processes that `root` never waits for, so wait4 misses them)."""

    def __init__(self, root: int):
        super().__init__(daemon=True)
        self.root, self.stop = root, threading.Event()
        self.peak_tree_mb = 0.0
        self.peak_pss_mb = 0.0  # the peak of the summed PSS (shared pages split between their processes)
        self.forked_cpu: dict[int, float] = {}  # pid -> its own user + system seconds, last seen

    def run(self) -> None:
        tick, page = os.sysconf("SC_CLK_TCK"), os.sysconf("SC_PAGE_SIZE")
        while not self.stop.wait(0.5):
            stats = {}
            for entry in Path("/proc").iterdir():
                if entry.name.isdigit():
                    try:
                        fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
                        cmdline = (entry / "cmdline").read_bytes()
                    except OSError:
                        continue
                    # after the name: state ppid ... utime(12) stime(13) ... rss(22), counted from state = 0
                    stats[int(entry.name)] = (int(fields[1]), (int(fields[11]) + int(fields[12])) / tick,
                                              int(fields[21]) * page, b"multiprocessing.forkserver" in cmdline)
            tree, frontier = set(), [self.root]
            while frontier:
                pid = frontier.pop()
                tree.add(pid)
                frontier += [p for p, s in stats.items() if s[0] == pid and p not in tree]
            self.peak_tree_mb = max(self.peak_tree_mb, sum(stats[p][2] for p in tree if p in stats) / 2**20)
            self.peak_pss_mb = max(self.peak_pss_mb, sum(_pss_kb(p) for p in tree) / 1024)
            for pid in tree:
                parent = stats.get(stats[pid][0]) if pid in stats else None
                if pid in stats and (stats[pid][3] or (parent is not None and parent[3])):
                    self.forked_cpu[pid] = stats[pid][1]


def _pss_kb(pid: int) -> int:
    """A process's proportional set size (KiB, from /proc/PID/smaps_rollup); 0 once it has gone."""
    try:
        for line in Path(f"/proc/{pid}/smaps_rollup").read_text().splitlines():
            if line.startswith("Pss:"):
                return int(line.split()[1])
    except (OSError, ValueError, IndexError):
        pass
    return 0


def _run(label: str, argv: list[str]) -> dict:
    started = time.monotonic()
    child = subprocess.Popen(argv, cwd=REPO, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
                             env={**os.environ, "PYTHONPATH": str(REPO)})
    sampler = _TreeSampler(child.pid)
    sampler.start()
    stderr = child.stderr.read()
    _, status, usage = os.wait4(child.pid, 0)
    wall = time.monotonic() - started
    sampler.stop.set()
    sampler.join()
    if os.waitstatus_to_exitcode(status) != 0:
        sys.exit(f"{label} failed:\n{stderr[-3000:]}")
    cpu = usage.ru_utime + usage.ru_stime + sum(sampler.forked_cpu.values())
    return {"step": label, "wall_s": wall, "cpu_s": cpu, "peak_mb": usage.ru_maxrss / 1024,  # ru_maxrss: KiB
            "tree_mb": sampler.peak_tree_mb, "pss_mb": sampler.peak_pss_mb}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("corpus", type=Path)
    parser.add_argument("--store", type=Path, default=REPO / ".bench" / "bench-store")
    parser.add_argument("--workers", type=int, default=None)
    parser.add_argument("--steps", default="floor,read,ingest,syntax",
                        help="comma-separated subset of floor,copy,read,ingest,syntax,neardup (syntax and neardup "
                             "need ingest or --keep)")
    parser.add_argument("--keep", action="store_true", help="keep the built store (for scripts/bench_queries.py)")
    args = parser.parse_args()
    files = sorted(str(p) for p in args.corpus.glob("*.parquet"))
    rows = sum(pq.read_metadata(f).num_rows for f in files)
    groups = sum(pq.read_metadata(f).num_row_groups for f in files)
    size = sum(Path(f).stat().st_size for f in files)
    py = sys.executable
    workers = ["--workers", str(args.workers)] if args.workers else []
    stage1 = [py, "-m", "queries", "ingest", *files, "--store", str(args.store), "--quiet", "--no-syntax-check"]
    stage2 = [py, "-m", "queries", "check-syntax", "--store", str(args.store), "--quiet"]
    steps = {"floor": [("duckdb floor", [py, "-c", DUCKDB_FLOOR, *files])],
             "copy": [("copy x to zstd Parquet (no fields)", [py, "-c", COPY_ONLY, *files])],
             "read": [("read only", [py, "-c", READ_ONLY, *files])],
             "ingest": [("ingest stage 1: usable store", stage1 + workers)],
             "syntax": [("ingest stage 2: syntax check", stage2 + workers)],
             "neardup": [("near-duplicate clusters", [py, "-m", "queries", "near-dups", "--store", str(args.store),
                                                      "--quiet", *workers])]}
    wanted = ["floor", *(s for s in args.steps.split(",") if s != "floor")]  # the floor is the yardstick
    load_before = os.getloadavg()[0]
    results = [_run(label, argv) for name in wanted for label, argv in steps[name]]
    if not args.keep:
        shutil.rmtree(args.store, ignore_errors=True)
    floor = results[0]["wall_s"]
    mem_gb = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / 2**30
    print(f"date {datetime.now(UTC):%Y-%m-%d %H:%M} UTC; {platform.node()}: nproc {os.cpu_count()}, "
          f"RAM {mem_gb:.0f} GiB, load average {load_before:.1f} at the start, {os.getloadavg()[0]:.1f} at the end")
    print(f"corpus {args.corpus}: {len(files)} files, {rows:,} rows, {groups} row groups, {size / 1e6:,.0f} MB")
    print(f"command: {' '.join([Path(py).name, *sys.argv])}\n")
    print("| step | wall s | CPU s | rows/s | × floor | peak RSS MB (largest process / all) | peak PSS MB, all |\n"
          "|---|---:|---:|---:|---:|---:|---:|")
    for r in results:
        print(f"| {r['step']} | {r['wall_s']:,.1f} | {r['cpu_s']:,.1f} | {rows / r['wall_s']:,.0f} "
              f"| {r['wall_s'] / floor:,.1f} | {r['peak_mb']:,.0f} / {r['tree_mb']:,.0f} | {r['pss_mb']:,.0f} |")


if __name__ == "__main__":
    main()
