"""Page-load times of the explorer in a real browser: a fresh `streamlit run app.py` server, the cold first load
of the overview (server start excluded), then each page's first and second load.

    python scripts/bench_pages.py [--store DIR] [--runs-dir DIR] [--preload]

`--preload` starts the server as `make run` does (scripts/serve_app.py: imports and the store opened before the
server listens); without it, plain `streamlit run app.py`.

A load is timed from `goto` until the page's title is drawn and Streamlit's run has finished (no status widget,
no skeleton). Needs Debian chromium at /usr/bin/chromium and playwright. Prints one line per load and a JSON
summary; figures go to BENCHMARKS.md.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path
from urllib.parse import quote

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from tests.ui_services import CHROMIUM, streamlit_command, streamlit_server  # noqa: E402


def serve_app_command(port: int) -> list[str]:
    """scripts/serve_app.py with the same Streamlit options as the tests' server."""
    return [sys.executable, str(REPO / "scripts" / "serve_app.py"), *streamlit_command(port)[5:]]

PAGES = ["", "problems", "failures", "runs", "search?q=tl.load", "export"]


def _settled(tab, timeout_ms: int = 60000) -> None:
    tab.wait_for_selector("[data-testid='stMain'] h1", timeout=timeout_ms)
    tab.wait_for_function(
        "() => !document.querySelector('[data-testid=\"stStatusWidget\"]')"
        " && !document.querySelector('[data-testid=\"stSkeleton\"]')", timeout=timeout_ms)


def _load(tab, url: str) -> float:
    started = time.perf_counter()
    tab.goto(url)
    _settled(tab)
    return time.perf_counter() - started


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--store", help="store to serve (default: the embedded sample store)")
    parser.add_argument("--runs-dir", help="run results folder (default: an empty temporary one)")
    parser.add_argument("--preload", action="store_true", help="start through scripts/serve_app.py")
    args = parser.parse_args(argv)
    from playwright.sync_api import sync_playwright

    env = {"TLX_READ_ONLY": "1", "TLX_RUNS_DIR": args.runs_dir or tempfile.mkdtemp(prefix="tlx-bench-runs-")}
    if args.store:
        env["TLX_STORE"] = args.store
    else:
        from common.settings import load_settings
        from runner.rows import resolve_store

        resolve_store(None, load_settings())  # the sample store, built before the clock starts, as `make run` does
    timings: dict[str, float] = {}
    command = serve_app_command if args.preload else streamlit_command
    with streamlit_server(env, command=command) as base, sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=str(CHROMIUM), args=["--headless", "--no-sandbox",
                                                                          "--disable-gpu"])
        tab = browser.new_page(viewport={"width": 1400, "height": 1000})
        timings["overview (cold: first load after server start)"] = _load(tab, base + "/")
        index_row = "row?row=" + quote("train/000000", safe="")
        for page in [*PAGES, index_row]:
            for attempt in ("first", "second"):
                timings[f"{page or 'overview'} ({attempt})"] = _load(tab, f"{base}/{page}")
        browser.close()
    for name, seconds in timings.items():
        print(f"{seconds:6.2f} s  {name}")
    print(json.dumps({k: round(v, 2) for k, v in timings.items()}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
