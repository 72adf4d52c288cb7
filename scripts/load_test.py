"""Bounded load tests on loopback: the explorer (default), the runner service or the SQL console.

    python scripts/load_test.py --store /tmp/qbench/s600k --sessions 20 --duration 120 [--json]
    python scripts/load_test.py --target service --clients 20 --duration 120 [--json]
    python scripts/load_test.py --target console --store STORE --clients 20 --duration 60 [--json]

The service test is `scripts/load_service.py`, the console test `scripts/load_console.py` (see there). The
explorer test:
One headless Debian chromium, one browser context per session. Each session walks overview → problems → one
problem → one row of it (problems and rows drawn from the store's index with a fixed seed), again and again until
`--duration` seconds have passed, then stops. A page's time runs from navigation until its title is drawn and
Streamlit's "running" status widget and skeletons are gone. Prints p50/p95 per page kind and in all, pages done,
and errors (timeouts, pages showing a Streamlit exception). Read-only mode; nothing but loopback is contacted."""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import random
import statistics
import sys
import time
from pathlib import Path
from urllib.parse import quote

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from scripts.load_common import percentile  # noqa: E402
from tests.ui_services import CHROMIUM, streamlit_server  # noqa: E402

ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
        "--disable-background-networking", "--disable-component-update", "--disable-sync"]
SETTLED = ("() => document.querySelector(\"[data-testid='stMain'] h1\")"
           " && !document.querySelector('[data-testid=\"stStatusWidget\"]')"
           " && !document.querySelector('[data-testid=\"stSkeleton\"]')"
           " && !document.querySelector('[data-testid=\"stSpinner\"]')")


def targets(store: Path, n: int, seed: int) -> list[tuple[str, str]]:
    """(problem_key, row id) pairs: rows with a label, from problems with at least a few rows."""
    import pyarrow.compute as pc
    import pyarrow.parquet as pq

    index = pq.read_table(store / "index.parquet", columns=["id", "problem_key", "ok"])
    index = index.filter(pc.equal(index["ok"], True))
    rng = random.Random(seed)
    picks = rng.sample(range(index.num_rows), min(n, index.num_rows))
    return [(index["problem_key"][i].as_py(), index["id"][i].as_py()) for i in picks]


async def session(browser, base: str, walk: list[tuple[str, str]], until: float, timeout_ms: int,
                  times: dict[str, list[float]], errors: list[str]) -> None:
    context = await browser.new_context(viewport={"width": 1400, "height": 1000})
    tab = await context.new_page()
    step = 0
    try:
        while time.monotonic() < until:
            key, row = walk[step % len(walk)]
            for kind, path in (("overview", "/"), ("problems", "/problems"),
                               ("problem", f"/problem?problem={key}"), ("row", f"/row?row={quote(row, safe='')}")):
                if time.monotonic() >= until:
                    break
                started = time.monotonic()
                try:
                    await tab.goto(base + path, timeout=timeout_ms)
                    await tab.wait_for_function(SETTLED, timeout=timeout_ms, polling=100)
                    if await tab.locator("[data-testid='stException']").count():
                        errors.append(f"{path}: exception shown")
                    else:
                        times[kind].append(time.monotonic() - started)
                except Exception as exc:  # a timeout or a navigation error counts as an error, the walk goes on
                    errors.append(f"{path}: {type(exc).__name__}: {str(exc).splitlines()[0][:120]}")
            step += 1
    finally:
        await context.close()


async def load(base: str, store: Path, sessions: int, duration: float, timeout_ms: int, seed: int) -> dict:
    from playwright.async_api import async_playwright

    walks = targets(store, sessions * 4, seed)
    times: dict[str, list[float]] = {k: [] for k in ("overview", "problems", "problem", "row")}
    errors: list[str] = []
    async with async_playwright() as pw:
        browser = await pw.chromium.launch(executable_path=str(CHROMIUM), args=ARGS)
        until = time.monotonic() + duration
        started = time.monotonic()
        await asyncio.gather(*(session(browser, base, walks[i::sessions] or walks, until, timeout_ms, times, errors)
                               for i in range(sessions)))
        elapsed = time.monotonic() - started
        await browser.close()
    every = [t for v in times.values() for t in v]
    return {
        "sessions": sessions, "duration_s": round(elapsed, 1), "pages": len(every), "errors": len(errors),
        "error_examples": errors[:5],
        "p50_s": percentile(every, 0.5), "p95_s": percentile(every, 0.95),
        "per_page": {k: {"n": len(v), "p50_s": percentile(v, 0.5), "p95_s": percentile(v, 0.95),
                         "mean_s": round(statistics.fmean(v), 2) if v else None} for k, v in times.items()},
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--target", choices=("explorer", "service", "console"), default="explorer")
    parser.add_argument("--duration", type=float, default=120.0, help="seconds of load (at most 600)")
    parser.add_argument("--json", action="store_true")
    explorer = parser.add_argument_group("explorer")
    explorer.add_argument("--store", type=Path, default=Path("/tmp/qbench/s600k"), help="also the console's store")
    explorer.add_argument("--sessions", type=int, default=20)
    explorer.add_argument("--page-timeout", type=float, default=60.0, help="seconds before a page counts as failed")
    explorer.add_argument("--seed", type=int, default=1)
    service = parser.add_argument_group("service and console")
    service.add_argument("--clients", type=int, default=20)
    service.add_argument("--bad-every", type=int, default=5, help="one hostile request every N rounds (0: none)")
    service.add_argument("--programs", type=int, default=40, help="service: distinct tiny programs submitted")
    service.add_argument("--request-timeout", type=float, default=30.0, help="service: seconds before a request fails")
    args = parser.parse_args()
    if args.target != "explorer":
        from scripts import load_console, load_service

        target = load_service if args.target == "service" else load_console
        stats = target.run(args)
        stats.update(nproc=os.cpu_count(), ram_gib=_ram_gib())
        print(json.dumps(stats, indent=None if args.json else 2))
        return 0 if target.ok(stats) else 1
    store = args.store.resolve()
    if not (store / "meta.json").is_file():
        parser.error(f"{store} is not a store (no meta.json)")
    env = {"TLX_STORE": str(store), "TLX_READ_ONLY": "1", "TLX_RUNNER_URL": "http://127.0.0.1:9"}
    with streamlit_server(env) as base:
        stats = await_load(base, store, args)
    stats.update(store=str(store), rows=json.loads((store / "meta.json").read_text())["rows_indexed"],
                 nproc=os.cpu_count(), ram_gib=_ram_gib())
    print(json.dumps(stats, indent=None if args.json else 2))
    return 0 if stats["errors"] == 0 else 1


def _ram_gib() -> int:
    return round(os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / 2**30)


def await_load(base: str, store: Path, args: argparse.Namespace) -> dict:
    duration = min(args.duration, 600.0)
    return asyncio.run(load(base, store, args.sessions, duration, int(args.page_timeout * 1000), args.seed))


if __name__ == "__main__":
    sys.exit(main())
