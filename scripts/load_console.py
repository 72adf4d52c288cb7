"""Bounded load test of the SQL console: N threads of one process (as N explorer sessions of one Streamlit server)
run statements through `queries.api.console` for `--duration` seconds (`scripts/load_test.py --target console`).

Each thread loops over `GOOD` (ordinary statements, which must return a table) and, every `--bad-every` rounds,
one statement of `HOSTILE` (the generators of issue 14, which must be refused with the memory or time message).
A statement refused because every worker stayed busy for `console_pool.QUEUE_WAIT_S` is counted as `busy` (the
console shedding load, by design); an error is any other outcome: an exception of another type, a good statement
refused, a hostile one answered. Samples the calling process's RSS and the console workers' count and summed
RSS."""

from __future__ import annotations

import os
import re
import statistics
import sys
import threading
import time
from collections import defaultdict
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from common.settings import Settings, load_settings  # noqa: E402
from queries import api  # noqa: E402
from queries.console import pool as console_pool  # noqa: E402
from scripts.load_common import percentile, run_clients  # noqa: E402

GOOD = [
    ("group by", "SELECT split, count(*) AS n, avg(ok::int) AS ok_rate FROM programs GROUP BY split ORDER BY split"),
    ("top problems", "SELECT problem_key, count(*) AS n FROM programs GROUP BY ALL ORDER BY n DESC LIMIT 20"),
    ("describe", "DESCRIBE programs"),
    ("window", "SELECT id, y, rank() OVER (PARTITION BY problem_key ORDER BY y) AS r FROM programs LIMIT 500"),
]
HOSTILE = [
    ("range 300M", "SELECT len(range(0, 300000000))"),
    ("repeat 2 GB", "SELECT length(repeat('ab', 1000000000))"),
    ("range 2G", "SELECT range(0, 2000000000)"),
    ("string_agg", "SELECT length(string_agg('abcdefgh', ',')) FROM range(300000000)"),
]
REFUSED = re.compile(r"more memory than the console allows|time limit")
BUSY = "the console is busy"


def rss_kib(pid: int) -> int:
    try:
        with open(f"/proc/{pid}/status") as fh:
            return next(int(line.split()[1]) for line in fh if line.startswith("VmRSS:"))
    except (OSError, StopIteration):
        return 0


def worker_pids() -> list[int]:
    """This process's console workers (children running `queries.console.child`)."""
    found = []
    for name in filter(str.isdigit, os.listdir("/proc")):
        try:
            with open(f"/proc/{name}/stat") as fh:
                ppid = int(fh.read().rsplit(")", 1)[1].split()[1])
            with open(f"/proc/{name}/cmdline", "rb") as fh:
                command = fh.read()
        except OSError:
            continue
        if ppid == os.getpid() and b"queries.console.child" in command:
            found.append(int(name))
    return found


def sample(peaks: dict[str, int], stop: threading.Event) -> None:
    while not stop.wait(0.2):
        workers = worker_pids()
        peaks["parent_rss_kib"] = max(peaks["parent_rss_kib"], rss_kib(os.getpid()))
        peaks["workers"] = max(peaks["workers"], len(workers))
        peaks["workers_rss_kib"] = max(peaks["workers_rss_kib"], sum(rss_kib(p) for p in workers))


def session(store: Path, settings: Settings, index: int, until: float, bad_every: int, times: dict, errors: list, busy: list) -> None:
    round_ = 0
    while time.monotonic() < until:
        hostile = bad_every and round_ % bad_every == bad_every - 1
        kind, sql = (HOSTILE if hostile else GOOD)[(index + round_) % len(HOSTILE if hostile else GOOD)]
        started = time.monotonic()
        try:
            table = api.console(store, settings, sql, max_rows=1000, timeout_s=5.0)
            if hostile:
                errors.append(f"{kind}: answered with {table.num_rows} rows")
        except api.ConsoleError as e:
            if str(e).startswith(BUSY):
                busy.append(kind)
                continue
            if not (hostile and REFUSED.search(str(e))):
                errors.append(f"{kind}: {e}"[:200])
        except Exception as e:  # anything else is an error of the console
            errors.append(f"{kind}: {type(e).__name__}: {e}"[:200])
        finally:
            round_ += 1
        times[("hostile: " if hostile else "") + kind].append(time.monotonic() - started)


def run(args) -> dict:
    store = args.store.resolve()
    settings = load_settings()  # once, at the script's entry
    api.console(store, settings, "SELECT 1")  # one warm worker, as a running explorer has
    times: dict[str, list[float]] = defaultdict(list)
    errors: list[str] = []
    busy: list[str] = []
    peaks = {"parent_rss_kib": rss_kib(os.getpid()), "workers": 0, "workers_rss_kib": 0}
    rss_before = peaks["parent_rss_kib"]
    until = time.monotonic() + min(args.duration, 600.0)
    threads = [threading.Thread(target=session, args=(store, settings, i, until, args.bad_every, times, errors, busy))
               for i in range(args.clients)]
    elapsed = run_clients(threads, sample, peaks)
    good = [t for k, v in times.items() if not k.startswith("hostile") for t in v]
    return {
        "clients": args.clients, "duration_s": round(elapsed, 1), "store": str(store),
        "statements": sum(len(v) for v in times.values()) + len(busy), "errors": len(errors),
        "error_examples": errors[:5], "busy_refusals": len(busy), "queue_wait_s": console_pool.QUEUE_WAIT_S,
        "good_p50_s": percentile(good, 0.5), "good_p95_s": percentile(good, 0.95),
        "per_kind": {k: {"n": len(v), "p50_s": percentile(v, 0.5), "p95_s": percentile(v, 0.95),
                         "max_s": round(max(v), 2), "mean_s": round(statistics.fmean(v), 2)}
                     for k, v in sorted(times.items())},
        "parent_rss_mib_before": round(rss_before / 1024), "parent_rss_mib_peak": round(peaks["parent_rss_kib"] / 1024),
        "workers_peak": peaks["workers"], "workers_rss_mib_peak": round(peaks["workers_rss_kib"] / 1024),
    }


def ok(stats: dict) -> bool:
    return stats["errors"] == 0
