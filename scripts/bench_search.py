"""Time complete code searches on a built store, warm, and the search index's size and build time.

    python scripts/bench_search.py --store DIR [--repeat 5] [--limit 100]

Each literal and regex runs `--repeat` times with the remembered answers dropped before each (computed: the
index, the verification, the snippets; the page cache and the index's mappings warm after the first), then once
more as the page would repeat it (memoized: the matching rows remembered, the snippets read again). The table
gives per pattern the total of matching rows, how it was answered (`index`, `index + verify`, `scan`), the
programs read, the median and slowest computed time and the memoized time; then p95 over all the literal runs (case kept, then ignored) and all the regex runs, computed and memoized. Also:
the search index's files against the code shards (bytes) and its build seconds (from `search/index.json`), and
the peak RSS of the process (the index keeps its decompressed lines in memory). CPU ms: the process's CPU time for
the search (both threads), which other work on the cores does not grow, where the wall time does.
Prints a Markdown table with the machine, the date, the load and the command.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import resource
import statistics
import sys
import time
from datetime import UTC, datetime
from pathlib import Path

from common.settings import Settings, load_settings
from queries.search.engine import forget_searches, search_code
from queries.store import CODE_DIR, SEARCH_DIR, SEARCH_META

LITERALS = [
    "allow_tf32", "tl.dot", "tl.load", "@triton.autotune", "tl.atomic_add", "torch.randn", "num_warps=8",
    "class ModelNew", "get_init_inputs", "tl.where", "BLOCK_SIZE_K", "tl.exp", "tl.sum(", "eviction_policy",
    "tl.cumsum", "libdevice", "no such text anywhere", "F.conv2d", "tl.make_block_ptr", "tl.program_id(1)",
]
IGNORING_CASE = ["ALLOW_TF32", "TL.LOAD", "Tl.Dot", "f.conv2D", "TL.PROGRAM_ID(1)"]  # literals, case ignored
REGEXES = [
    r"tl\.dot\(.*allow_tf32", r"num_warps\s*=\s*\d+", r"BLOCK_SIZE_[MNK]\s*:\s*tl\.constexpr", r"tl\.store\(.*mask=",
    r"eviction_policy\s*=\s*.evict_", r"tl\.atomic_add\(\w+",
]


def _bytes(folder: Path) -> int:
    return sum(p.stat().st_size for p in folder.rglob("*") if p.is_file())


def _timed(store: Path, settings: Settings, pattern: str, kind: str, limit: int):
    started, cpu = time.perf_counter(), time.process_time()
    result = search_code(store, settings, pattern, regex=kind == "regex", ignore_case=kind == "literal, any case", limit=limit)
    return result, time.perf_counter() - started, time.process_time() - cpu


def _run(store: Path, settings: Settings, pattern: str, kind: str, repeat: int, limit: int) -> dict:
    times, cpus = [], []
    for _ in range(repeat):
        forget_searches()
        result, took, cpu = _timed(store, settings, pattern, kind, limit)
        times.append(took)
        cpus.append(cpu)
    again, memo_time, _ = _timed(store, settings, pattern, kind, limit)
    assert again.memoized and again.total == result.total
    return {"pattern": pattern, "kind": kind, "total": result.total, "method": result.method,
            "read": result.rows_scanned, "times": times, "cpus": cpus, "memo": memo_time}


def _p95(values: list[float]) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(0.95 * (len(ordered) - 1)))]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--store", type=Path, required=True)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--limit", type=int, default=100)
    args = parser.parse_args()
    meta_path = args.store / SEARCH_DIR / SEARCH_META
    if not meta_path.is_file():
        sys.exit(f"{args.store} has no search index ({meta_path} missing)")
    meta = json.loads(meta_path.read_text())
    load = os.getloadavg()[0]
    settings = load_settings()  # once, at the script's entry
    search_code(args.store, settings, "warm up: open the index", limit=1)
    rows = [_run(args.store, settings, p, "literal", args.repeat, args.limit) for p in LITERALS]
    rows += [_run(args.store, settings, p, "literal, any case", args.repeat, args.limit) for p in IGNORING_CASE]
    rows += [_run(args.store, settings, p, "regex", args.repeat, args.limit) for p in REGEXES]
    code, index = _bytes(args.store / CODE_DIR), _bytes(args.store / SEARCH_DIR)
    print(f"date {datetime.now(UTC):%Y-%m-%d %H:%M} UTC; {platform.node()}: nproc {os.cpu_count()}, "
          f"load average {load:.1f} at the start, {os.getloadavg()[0]:.1f} at the end")
    print(f"store {args.store}: {meta['docs']:,} rows, {meta['refs']:,} distinct references; index "
          f"{index / 1e6:,.0f} MB = {index / code:.0%} of the code shards' {code / 1e6:,.0f} MB; built in "
          f"{meta['seconds']:.1f} s")
    print(f"peak RSS of this process {resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024:,.0f} MB (the index's "
          f"decompressed lines kept: queries/search/index.py, cache_bytes_of, TLX_SEARCH_CACHE_MB)")
    print(f"command: python scripts/bench_search.py --store {args.store} --repeat {args.repeat} --limit {args.limit}")
    print()
    print("| pattern | kind | matching rows | answered by | programs read | computed median ms | max ms | CPU ms "
          "median | memoized ms |")
    print("|---|---|---:|---|---:|---:|---:|---:|---:|")
    for r in rows:
        print(f"| `{r['pattern']}` | {r['kind']} | {r['total']:,} | {r['method']} | "
              f"{r['read']:,} | {statistics.median(r['times']) * 1e3:,.0f} | {max(r['times']) * 1e3:,.0f} | "
              f"{statistics.median(r['cpus']) * 1e3:,.0f} | {r['memo'] * 1e3:,.0f} |")
    for kind in ("literal", "literal, any case", "regex"):
        times = [t for r in rows if r["kind"] == kind for t in r["times"]]
        cpus = [t for r in rows if r["kind"] == kind for t in r["cpus"]]
        memo = [r["memo"] for r in rows if r["kind"] == kind]
        print(f"\np95 over all {kind} runs: computed {_p95(times) * 1e3:,.0f} ms ({len(times)} runs; CPU "
              f"{_p95(cpus) * 1e3:,.0f} ms), memoized {_p95(memo) * 1e3:,.0f} ms ({len(memo)} runs)")


if __name__ == "__main__":
    main()
