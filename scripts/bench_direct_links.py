"""A direct link against an in-app switch (issue 46, item 9): what the first view of a page costs, and where.

    python scripts/bench_direct_links.py --store DIR [--loads 6] [--before REPO]

Serves the explorer as `make run` does (scripts/serve_app.py, read-only) and opens Problem pages of the store in
Debian chromium headless, two ways, one after the other: a direct link in a fresh browser context (a newcomer
opening a shared link: nothing cached) and an in-app switch (the Kernel page's "Problem" link, in a tab that is
already open). For each load: the wall time from the click or `goto` until the page has settled; the server's
script run (the websocket's `rerun_script` to its `script_finished`); the browser's main-thread and script time
(Chrome's `TaskDuration` and `ScriptDuration`) and the JavaScript fetched. With `--before REPO` (another checkout,
e.g. `git worktree add` of an older commit) a second server runs that code and the loads alternate between the
two, so both see the same machine load. Prints one line per load and medians; figures go to BENCHMARKS.md.
"""

from __future__ import annotations

import argparse
import contextlib
import statistics
import sys
import time
from pathlib import Path
from urllib.parse import quote

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from tests.ui_services import CHROMIUM, streamlit_command, streamlit_server  # noqa: E402

ARGS = ["--headless", "--no-sandbox", "--disable-gpu"]
SETTLED = ("() => document.querySelector(\"[data-testid='stMain'] h1\") && "
           "!document.querySelector('[data-testid=\"stStatusWidget\"]') && "
           "!document.querySelector('[data-testid=\"stSkeleton\"]')")
JS_BYTES = ("() => performance.getEntriesByType('resource').filter(r => r.name.endsWith('.js'))"
            ".reduce((n, r) => n + r.decodedBodySize, 0)")


def _command(repo: Path):
    return lambda port: [sys.executable, str(repo / "scripts" / "serve_app.py"), *streamlit_command(port)[5:]]


class Watch:
    """The server's script runs seen on a tab's websocket: each `rerun_script` sent and `script_finished` got."""

    def __init__(self, tab) -> None:
        from streamlit.proto.BackMsg_pb2 import BackMsg
        from streamlit.proto.ForwardMsg_pb2 import ForwardMsg

        self.sent: list[float] = []
        self.finished: list[float] = []

        def on_socket(ws) -> None:
            def got(payload) -> None:
                if ForwardMsg.FromString(payload).WhichOneof("type") == "script_finished":
                    self.finished.append(time.perf_counter())

            def sent(payload) -> None:
                if BackMsg.FromString(payload).WhichOneof("type") == "rerun_script":
                    self.sent.append(time.perf_counter())

            ws.on("framereceived", got)
            ws.on("framesent", sent)

        tab.on("websocket", on_socket)

    def wait_run(self, tab, since: float, timeout_s: float = 120.0) -> None:
        """Until a script run asked for after `since` has finished (events arrive while Playwright waits)."""
        deadline = time.perf_counter() + timeout_s
        while not any(t >= since for t in self.finished) or not any(t >= since for t in self.sent):
            if time.perf_counter() > deadline:
                raise TimeoutError("no script run finished")
            tab.wait_for_timeout(20)

    def server_s(self, since: float) -> float:
        start = next(t for t in self.sent if t >= since)
        return next(t for t in self.finished if t >= start) - start


def _metrics(cdp) -> dict[str, float]:
    return {m["name"]: m["value"] for m in cdp.send("Performance.getMetrics")["metrics"]}


def _load(tab, cdp, watch: Watch, go) -> dict[str, float]:
    before = _metrics(cdp)
    js_before = tab.evaluate(JS_BYTES) if tab.url.startswith("http") else 0
    started = time.perf_counter()
    go()
    watch.wait_run(tab, started)
    tab.wait_for_function(SETTLED, timeout=120000)
    wall = time.perf_counter() - started
    after = _metrics(cdp)
    fresh = after["TaskDuration"] < before.get("TaskDuration", 0)  # a new document resets the counters
    base = {} if fresh else before
    return {"wall_s": wall, "server_s": watch.server_s(started),
            "task_s": after["TaskDuration"] - base.get("TaskDuration", 0),
            "script_s": after["ScriptDuration"] - base.get("ScriptDuration", 0),
            "js_mb": (tab.evaluate(JS_BYTES) - (0 if fresh else js_before)) / 1e6}


def _direct(browser, base: str, key: str) -> dict[str, float]:
    context = browser.new_context(viewport={"width": 1400, "height": 900})
    tab = context.new_page()
    watch = Watch(tab)
    cdp = context.new_cdp_session(tab)
    cdp.send("Performance.enable")
    try:
        return _load(tab, cdp, watch, lambda: tab.goto(f"{base}/problem?problem={key}"))
    finally:
        context.close()


def _switch(tab, cdp, watch: Watch, base: str, row_id: str) -> dict[str, float]:
    tab.goto(f"{base}/row?row={quote(row_id, safe='')}")
    tab.wait_for_function(SETTLED, timeout=120000)
    tab.wait_for_timeout(500)
    link = tab.locator("[data-testid='stMain'] [data-testid='stPageLink']").filter(has_text="Problem").first
    return _load(tab, cdp, watch, lambda: (link.click(), tab.wait_for_url(lambda url: "/problem?" in url)))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--store", required=True)
    parser.add_argument("--loads", type=int, default=6, help="loads of each kind per server")
    parser.add_argument("--before", type=Path, help="another checkout to serve beside this one, loads alternating")
    args = parser.parse_args(argv)
    import pyarrow.parquet as pq
    from playwright.sync_api import sync_playwright

    index = pq.read_table(Path(args.store) / "index.parquet", columns=["id", "problem_key", "y"]).to_pylist()
    labelled = [r for r in index if r["y"] is not None]
    rows = list({r["problem_key"]: r["id"] for r in labelled}.items())[: args.loads]
    repos = {"after": REPO} | ({"before": args.before.resolve()} if args.before else {})
    env = {"TLX_READ_ONLY": "1", "TLX_STORE": str(Path(args.store).resolve())}
    figures: dict[tuple[str, str], list[dict]] = {}
    with contextlib.ExitStack() as stack, sync_playwright() as pw:
        bases = {name: stack.enter_context(streamlit_server(env | {"PYTHONPATH": str(repo)}, command=_command(repo)))
                 for name, repo in repos.items()}
        browser = pw.chromium.launch(executable_path=str(CHROMIUM), args=ARGS)
        tabs = {}
        for name, base in bases.items():  # warm each server (imports, the store) with one view, not counted
            _direct(browser, base, rows[0][0])
            tab = browser.new_page(viewport={"width": 1400, "height": 900})
            cdp = tab.context.new_cdp_session(tab)
            cdp.send("Performance.enable")
            tabs[name] = (tab, cdp, Watch(tab))
        for i, (key, row_id) in enumerate(rows):
            for name in (list(bases) if i % 2 == 0 else list(reversed(bases))):
                for kind in ("direct link", "in-app switch"):
                    got = (_direct(browser, bases[name], key) if kind == "direct link" else
                           _switch(*tabs[name], bases[name], row_id))
                    figures.setdefault((name, kind), []).append(got)
                    print(f"{name:6} {kind:13} " + " ".join(f"{k} {v:6.2f}" for k, v in got.items()), flush=True)
        browser.close()
    print("medians:")
    for (name, kind), loads in figures.items():
        print(f"{name:6} {kind:13} " + " ".join(f"{k} {statistics.median(x[k] for x in loads):6.2f}"
                                                for k in loads[0]))
    return 0


if __name__ == "__main__":
    sys.exit(main())
