"""The explorer's load figure: N concurrent sessions from one process over Streamlit's own websocket protocol.

    python scripts/bench_load.py [--store DIR] [--sessions 1 20] [--views 10] [--think 1.0] [--json]
    python scripts/bench_load.py --url http://127.0.0.1:8501 --store DIR      # a running explorer on DIR

Without `--url` it starts `streamlit run app.py` read-only (no runner) on `--store`, by default the embedded
sample store (built on first use), and stops it at the end. Each session is one websocket on
`ws://HOST:PORT/_stcore/stream` (subprotocol `streamlit`), as one browser tab: it asks for a page with a
`rerun_script` BackMsg (`page_name` = the page's URL path, `query_string` = its deep link) and times it until the
ForwardMsg `script_finished` of that run (a run that Streamlit restarts, `FINISHED_EARLY_FOR_RERUN`, goes on
counting). A view is an error when the run drew an exception element, finished with a compile error, named a page
the app does not have (`page_not_found`) or took longer than `--page-timeout` (that session then ends, as a
visitor would leave); a session that cannot connect or loses its connection is one error under "session". Every
session walks the same mix of pages (overview, problems, a problem, a row's diff, failures, a search, a row's
kernels, runs, compare, SQL), each with its own problem and rows drawn from the store's index with a fixed seed,
pausing `--think` seconds (±50%) between views. Before the timed runs one session walks every page once
(`--warmup 0`: a cold server).
Each entry of `--sessions` is one timed run, in order, on the same server. Prints, per run, count, p50, p95 and
max per page and overall, the errors, the load average before and after, and the CPU seconds this generator
spent (its share of the machine)."""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import random
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import urlencode, urlparse

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

import websockets  # noqa: E402
from streamlit.proto.BackMsg_pb2 import BackMsg  # noqa: E402  (imported here, not inside a timed view)
from streamlit.proto.ForwardMsg_pb2 import ForwardMsg  # noqa: E402

from scripts.load_common import percentile  # noqa: E402

SEARCHES = ("tl.dot", "tl.load", "@triton.autotune", "tl.sum", "BLOCK_SIZE")


@dataclass(frozen=True)
class View:
    """One page view: the label it is reported under, the page's URL path ("" = the default page), its query."""

    label: str
    page: str
    query: str = ""


@dataclass
class RunWatch:
    """Reads the ForwardMsgs of one script run: done at its `script_finished`, with what went wrong on the way."""

    finished: bool = False
    problems: list[str] = field(default_factory=list)

    def feed(self, raw: bytes) -> None:
        msg = ForwardMsg()
        msg.ParseFromString(raw)
        kind = msg.WhichOneof("type")
        if kind == "delta" and msg.delta.WhichOneof("type") == "new_element":
            if msg.delta.new_element.WhichOneof("type") == "exception":
                shown = msg.delta.new_element.exception
                self.problems.append(f"exception {shown.type}: {shown.message[:120]}")
        elif kind == "page_not_found":
            self.problems.append("page not found")  # the app then runs its default page
        elif kind == "script_finished":
            if msg.script_finished == ForwardMsg.FINISHED_WITH_COMPILE_ERROR:
                self.problems.append("compile error")
            self.finished = msg.script_finished != ForwardMsg.FINISHED_EARLY_FOR_RERUN


def rerun_request(view: View) -> bytes:
    back = BackMsg()
    back.rerun_script.page_name = view.page
    back.rerun_script.query_string = view.query
    return back.SerializeToString()


def walks(store: Path, sessions: int, seed: int) -> list[list[View]]:
    """One walk per session over the page mix, each with its own problem, two of its rows (the compared pair),
    a failure type of the failed rows and a search."""
    import pyarrow.compute as pc
    import pyarrow.parquet as pq

    index = pq.read_table(store / "index.parquet", columns=["id", "problem_key", "ok", "static_error"])
    labelled = index.filter(pc.equal(index["ok"], True))
    failed = index.filter(pc.invert(index["ok"]))["static_error"].to_pylist()
    errors = sorted({e for e in failed if e and e != "ok_static"}) or [None]
    rng = random.Random(seed)
    result = []
    for _ in range(sessions):
        first = labelled.slice(rng.randrange(labelled.num_rows), 1).to_pylist()[0]
        key, row_a = first["problem_key"], first["id"]
        row_b = rng.choice(labelled.filter(pc.equal(labelled["problem_key"], key))["id"].to_pylist())
        error = rng.choice(errors)
        result.append([
            View("overview", ""),
            View("problems", "problems"),
            View("problem", "problem", urlencode({"problem": key})),
            View("row diff", "row", urlencode({"row": row_a})),
            View("failures", "failures", urlencode({"error": error} if error else {})),
            View("search", "search", urlencode({"q": rng.choice(SEARCHES)})),
            View("row kernels", "row", urlencode({"row": row_b, "tab": "kernels"})),
            View("runs", "runs"),
            View("compare", "compare", urlencode({"a": row_a, "b": row_b})),
            View("sql", "sql"),
        ])
    return result


@dataclass
class Outcome:
    label: str
    seconds: float
    problems: list[str]


async def session(ws_url: str, walk: list[View], views: int, think: float, timeout: float, rng: random.Random,
                  outcomes: list[Outcome]) -> None:
    """One tab: `views` page views along `walk` (round and round), each timed to its run's end."""
    async with websockets.connect(ws_url, subprotocols=["streamlit"], max_size=None, open_timeout=timeout) as ws:
        for step in range(views):
            view = walk[step % len(walk)]
            watch, request = RunWatch(), rerun_request(view)
            started = time.monotonic()
            await ws.send(request)
            try:
                async with asyncio.timeout(timeout):
                    while not watch.finished:
                        watch.feed(await ws.recv())
            except TimeoutError:
                outcomes.append(Outcome(view.label, time.monotonic() - started, [f"no end of run in {timeout:g} s"]))
                return  # the run may still be going: this tab is given up, as a visitor would
            outcomes.append(Outcome(view.label, time.monotonic() - started, watch.problems))
            if think > 0 and step + 1 < views:
                await asyncio.sleep(think * rng.uniform(0.5, 1.5))


async def drive(ws_url: str, plans: list[list[View]], views: int, think: float, timeout: float,
                seed: int) -> tuple[list[Outcome], float]:
    """Every session at once; returns the outcomes of all views and the seconds it took."""
    outcomes: list[Outcome] = []
    started = time.monotonic()
    results = await asyncio.gather(*(session(ws_url, walk, views, think, timeout, random.Random(seed + i), outcomes)
                                     for i, walk in enumerate(plans)), return_exceptions=True)
    for failed in (r for r in results if isinstance(r, BaseException)):  # could not connect, or lost its connection
        outcomes.append(Outcome("session", time.monotonic() - started, [f"{type(failed).__name__}: {failed}"]))
    return outcomes, time.monotonic() - started


def summary(outcomes: list[Outcome]) -> dict:
    """Per page label and over all views: count, p50/p95/max seconds of the views without a problem, errors."""
    def stats(group: list[Outcome]) -> dict:
        good = [o.seconds for o in group if not o.problems]
        return {"count": len(group), "p50_s": percentile(good, 0.5), "p95_s": percentile(good, 0.95),
                "max_s": round(max(good), 2) if good else None, "errors": len(group) - len(good)}

    labels = list(dict.fromkeys(o.label for o in outcomes))
    return {"overall": stats(outcomes), "per_page": {label: stats([o for o in outcomes if o.label == label])
                                                     for label in labels},
            "error_examples": [f"{o.label}: {p}" for o in outcomes for p in o.problems][:5]}


def timed_run(ws_url: str, plans: list[list[View]], args: argparse.Namespace) -> dict:
    load_before = os.getloadavg()
    cpu_before = time.process_time()
    outcomes, seconds = asyncio.run(drive(ws_url, plans, args.views, args.think, args.page_timeout, args.seed))
    report = {"sessions": len(plans), "views_per_session": args.views, "think_s": args.think,
              "seconds": round(seconds, 1), "generator_cpu_s": round(time.process_time() - cpu_before, 2),
              "load_before": [round(x, 2) for x in load_before],
              "load_after": [round(x, 2) for x in os.getloadavg()]}
    return report | summary(outcomes)


def measure(base_url: str, store: Path, args: argparse.Namespace) -> list[dict]:
    parsed = urlparse(base_url)
    ws_url = f"ws://{parsed.netloc}{parsed.path.rstrip('/')}/_stcore/stream"
    everyone = walks(store, max(args.sessions), args.seed)
    if args.warmup:
        asyncio.run(drive(ws_url, everyone[:1], len(everyone[0]) * args.warmup, 0.0, args.page_timeout, args.seed))
    return [timed_run(ws_url, everyone[:n], args) for n in args.sessions]


def table(run: dict) -> str:
    """A run as a Markdown table: one line per page, then all of them."""
    lines = [f"{run['sessions']} session(s) x {run['views_per_session']} views, think {run['think_s']:g} s, "
             f"{run['seconds']} s, load average {run['load_before'][0]} -> {run['load_after'][0]}, "
             f"generator CPU {run['generator_cpu_s']} s",
             "| page | views | p50 s | p95 s | max s | errors |", "|---|---|---|---|---|---|"]
    rows = [*run["per_page"].items(), ("**all**", run["overall"])]
    lines += [f"| {name} | {s['count']} | {s['p50_s']} | {s['p95_s']} | {s['max_s']} | {s['errors']} |"
              for name, s in rows]
    return "\n".join(lines + [f"error: {e}" for e in run["error_examples"]])


def sample_store() -> Path:
    from common.settings import load_settings
    from queries.ingest import ensure_sample_store

    return Path(ensure_sample_store(load_settings(dict(os.environ))))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--url", help="a running explorer (default: start one on --store)")
    parser.add_argument("--store", type=Path, help="the store it shows (default: the embedded sample store)")
    parser.add_argument("--sessions", type=int, nargs="+", default=[1, 20], help="one timed run per entry")
    parser.add_argument("--views", type=int, default=10, help="page views per session")
    parser.add_argument("--think", type=float, default=1.0, help="seconds between a session's views (±50%%)")
    parser.add_argument("--page-timeout", type=float, default=60.0, help="seconds before a view is an error")
    parser.add_argument("--warmup", type=int, default=1, help="walks of one session before timing (0: cold)")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--json", action="store_true", help="one JSON line instead of Markdown tables")
    args = parser.parse_args()
    started_utc = time.strftime("%Y-%m-%d %H:%M", time.gmtime())
    store = (args.store or sample_store()).resolve()
    if not (store / "meta.json").is_file():
        parser.error(f"{store} is not a store (no meta.json)")
    if args.url:
        runs = measure(args.url, store, args)
    else:
        from tests.ui_services import streamlit_server

        env = {"TLX_STORE": str(store), "TLX_READ_ONLY": "1", "TLX_RUNNER_URL": "http://127.0.0.1:9"}
        with streamlit_server(env) as base_url:
            runs = measure(base_url, store, args)
    report = {"store": str(store), "rows": json.loads((store / "meta.json").read_text())["rows_indexed"],
              "nproc": os.cpu_count(), "started_utc": started_utc, "runs": runs}
    if args.json:
        print(json.dumps(report))
    else:
        print(f"store {report['store']} ({report['rows']:,} rows), {report['nproc']} cores, {started_utc} UTC")
        print("\n\n".join(table(run) for run in runs))
    return 0 if all(run["overall"]["errors"] == 0 for run in runs) else 1


if __name__ == "__main__":
    sys.exit(main())
