"""Re-run the sample rows on a GPU and measure how stable the runner's figures are.

    python scripts/gpu_validate.py --sample data/sample --out DIR [--ids FILE] [--repeats K] [--budget-s S]
    python scripts/gpu_validate.py --sample data/sample --out DIR --report RESULTS.jsonl...

`--repeats 0` runs only the do_bench cross-check. `--report` runs nothing: it summarizes results gathered
elsewhere (e.g. several `python -m runner bulk` passes plus a do_bench pass), pooling every row's runs.

Every row (ids `split/000123` from `SAMPLE/<split>.parquet`) is evaluated through `evaluate_in_sandbox`
`--repeats` times (a shared Triton cache makes re-runs warm); each correct candidate is also timed once with
`triton.testing.do_bench` in its own sandboxed process (same seed, hence the same inputs; same cache). Writes
DIR/results.jsonl (one run result per line), DIR/summary.tsv (per row: median of the runs' medians, their CUDA-event
and wall medians, CV across runs, do_bench agreement in percent, side-stream suspicion, per-run overhead beyond the
timing loops) and DIR/summary.json (with how many rows agree with do_bench within AGREE_PCT). Needs stdlib + torch + triton + pyarrow only;
stops starting work when the time budget is spent."""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import threading
import time
from collections import Counter
from dataclasses import replace
from pathlib import Path
from queue import Empty, Queue

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from common.settings import load_settings  # noqa: E402
from runner.child.timing import DO_BENCH_FLAG  # noqa: E402
from runner.options import EvalOptions, TimingOptions  # noqa: E402
from runner.result import RunResult  # noqa: E402
from runner.sandbox.run import evaluate_in_sandbox  # noqa: E402

COLUMNS = ("id", "label_y", "verdicts", "median_ms", "event_ms", "wall_ms", "side_stream", "cv_runs", "do_bench_ms",
           "do_bench_agree_pct", "overhead_s", "speedup")
AGREE_PCT = 3.0


def load_rows(sample: Path) -> list[tuple[str, str, float | None]]:
    import pyarrow.parquet as pq

    files = sorted(sample.glob("*.parquet"))
    if not files:
        raise SystemExit(f"error: no Parquet files in {sample}")
    rows = []
    for f in files:
        table = pq.read_table(f, columns=["x", "y"])
        for i, (x, y) in enumerate(zip(table["x"].to_pylist(), table["y"].to_pylist(), strict=True)):
            rows.append((f"{f.stem}/{i:06d}", x, y))
    return rows


def overhead_s(r: RunResult) -> float | None:
    if r.duration_s is None or not (r.timing and r.ref_timing):
        return None
    return r.duration_s - (r.timing.loop_s or 0.0) - (r.ref_timing.loop_s or 0.0)


def summarize_row(row_id: str, y: float | None, runs: list[RunResult], bench: RunResult | None) -> dict:
    timed = [r for r in runs if r.ok and r.timing]
    medians = [r.timing.median_ms for r in timed]
    med = statistics.median(medians) if medians else None

    def median_of(field: str) -> float | None:
        vals = [getattr(r.timing, field) for r in timed if getattr(r.timing, field) is not None]
        return statistics.median(vals) if vals else None

    cv = statistics.stdev(medians) / statistics.fmean(medians) if len(medians) > 1 else None
    bench_ms = bench.timing.median_ms if bench and bench.ok and bench.timing else None
    overheads = [o for o in map(overhead_s, runs[1:] or runs) if o is not None]  # re-runs: warm cache
    phases = {k: statistics.median(r.phases_s[k] for r in runs[1:] or runs if k in r.phases_s)
              for k in {k for r in runs[1:] or runs for k in r.phases_s}}
    speedups = [r.speedup for r in runs if r.speedup]
    return {
        "id": row_id, "label_y": y, "verdicts": ",".join(r.error_type or "ok" for r in runs),
        "median_ms": med, "event_ms": median_of("event_median_ms"), "wall_ms": median_of("wall_median_ms"),
        "side_stream": sum("side_stream_suspect" in r.flags for r in timed), "cv_runs": cv, "do_bench_ms": bench_ms,
        "do_bench_agree_pct": 100.0 * (bench_ms - med) / med if bench_ms and med else None,
        "overhead_s": statistics.median(overheads) if overheads else None,
        "speedup": statistics.median(speedups) if speedups else None, "phases_s": phases,
    }


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--sample", type=Path, default=Path("data/sample"))
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--limit", type=int, default=None, help="rows to take (in file order)")
    ap.add_argument("--parallel", type=int, default=None, help="rows at once, one GPU each (default: all GPUs)")
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--budget-s", type=float, default=450.0, help="start no work after this many seconds")
    ap.add_argument("--timeout", type=float, default=120.0, help="per evaluation")
    ap.add_argument("--time-budget-s", type=float, default=5.0, help="timing loop budget per model")
    ap.add_argument("--ids", type=Path, help="file with the row ids to run (one per line)")
    ap.add_argument("--triton-cache", type=Path, help="shared Triton cache (default OUT/triton-cache)")
    ap.add_argument("--report", type=Path, nargs="+", help="summarize these result files instead of running")
    args = ap.parse_args()
    if args.report:
        return report(args.sample, args.report, args.out)

    import torch

    gpus = torch.cuda.device_count()
    if gpus == 0:
        print("warning: no CUDA device; evaluations run on the CPU interpreter without timing", file=sys.stderr)
    parallel = max(1, min(args.parallel or gpus or 1, gpus or 1))
    rows = load_rows(args.sample)
    if args.ids:
        wanted = set(args.ids.read_text().split())
        rows = [r for r in rows if r[0] in wanted]
    rows = rows[: args.limit]
    args.out.mkdir(parents=True, exist_ok=True)
    base = EvalOptions(timeout_s=args.timeout, triton_cache_dir=str(args.triton_cache or args.out / "triton-cache"),
                       timing=TimingOptions(time_budget_s=args.time_budget_s), **load_settings().job_placement())
    deadline = time.monotonic() + args.budget_s
    queue: Queue = Queue()
    for row in rows:
        queue.put(row)
    lock = threading.Lock()
    summaries: list[dict] = []
    results_file = (args.out / "results.jsonl").open("w")

    def evaluate(program: str, opts: EvalOptions, row_id: str) -> RunResult | None:
        left = deadline - time.monotonic()
        if left < 5:
            return None
        r = evaluate_in_sandbox(program, replace(opts, timeout_s=min(opts.timeout_s, left)), result_id=row_id, row_id=row_id)
        with lock:
            results_file.write(json.dumps(r.to_dict()) + "\n")
            results_file.flush()
        return r

    def worker(slot: int) -> None:
        opts = replace(base, visible_devices=str(slot)) if gpus > 1 else base
        while True:
            try:
                row_id, program, y = queue.get_nowait()
            except Empty:
                return
            runs = [r for r in (evaluate(program, opts, row_id) for _ in range(args.repeats)) if r]
            if args.repeats and not runs:
                return
            bench = None
            if not runs or (runs[0].ok and runs[0].device == "cuda"):
                bench = evaluate(program, replace(opts, timing=replace(opts.timing, method="do_bench")), row_id)
                if bench is None and not runs:
                    return
            s = summarize_row(row_id, y, runs, bench)
            with lock:
                summaries.append(s)
                print("\t".join(_fmt(s[c]) for c in COLUMNS), flush=True)

    print("\t".join(COLUMNS), flush=True)
    threads = [threading.Thread(target=worker, args=(i,)) for i in range(parallel)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    results_file.close()
    write_summary(args.out, summaries, aggregate(summaries, len(rows), parallel, gpus))
    return 0


def write_summary(out: Path, summaries: list[dict], overall: dict) -> None:
    summaries.sort(key=lambda s: s["id"])
    with (out / "summary.tsv").open("w") as fh:
        fh.write("\t".join(COLUMNS) + "\n")
        for s in summaries:
            fh.write("\t".join(_fmt(s[c]) for c in COLUMNS) + "\n")
    (out / "summary.json").write_text(json.dumps(overall, indent=2))
    print(json.dumps(overall, indent=2))


def report(sample: Path, files: list[Path], out: Path) -> int:
    """Summarize results from earlier passes: per row, its non-do_bench runs (in time order) and last do_bench."""
    labels = {row_id: y for row_id, _, y in load_rows(sample)}
    runs: dict[str, list[RunResult]] = {}
    bench: dict[str, RunResult] = {}
    for path in files:
        for line in path.read_text().splitlines():
            if line.strip():
                r = RunResult.from_dict(json.loads(line))
                if DO_BENCH_FLAG in r.flags:
                    bench[r.id] = r
                else:
                    runs.setdefault(r.id, []).append(r)
    out.mkdir(parents=True, exist_ok=True)
    summaries = [summarize_row(row_id, labels.get(row_id), sorted(rs, key=lambda r: r.finished_at or ""),
                               bench.get(row_id)) for row_id, rs in runs.items()]
    gpus = len({r.system.get("gpu_uuid") for rs in runs.values() for r in rs} - {None})
    write_summary(out, summaries, aggregate(summaries, len(summaries), gpus, gpus))
    return 0


def aggregate(summaries: list[dict], rows: int, parallel: int, gpus: int) -> dict:
    def med(key: str, absolute: bool = False) -> float | None:
        vals = [abs(s[key]) if absolute else s[key] for s in summaries if s[key] is not None]
        return statistics.median(vals) if vals else None

    verdicts = Counter(v for s in summaries for v in s["verdicts"].split(","))
    compared = [abs(s["do_bench_agree_pct"]) for s in summaries if s["do_bench_agree_pct"] is not None]
    unstable = sum(1 for s in summaries if len(set(s["verdicts"].split(","))) > 1)
    return {
        "rows_planned": rows, "rows_done": len(summaries), "gpus": gpus, "parallel": parallel,
        "verdicts": dict(verdicts), "rows_with_differing_verdicts": unstable,
        "median_cv_runs": med("cv_runs"), "max_cv_runs": max((s["cv_runs"] for s in summaries if s["cv_runs"] is not None), default=None),
        "median_abs_do_bench_agree_pct": med("do_bench_agree_pct", absolute=True),
        "do_bench_compared_rows": len(compared),
        f"do_bench_within_{AGREE_PCT:g}pct_rows": sum(p <= AGREE_PCT for p in compared),
        "side_stream_suspect_rows": sum(1 for s in summaries if s["side_stream"]),
        "median_overhead_s": med("overhead_s"),
        "overhead_s_quartiles": _quartiles([s["overhead_s"] for s in summaries if s["overhead_s"] is not None]),
        "median_phases_s": {k: statistics.median(s["phases_s"][k] for s in summaries if k in s["phases_s"])
                            for k in sorted({k for s in summaries for k in s["phases_s"]})},
        "cv_runs_ge_50us": [s["cv_runs"] for s in summaries if s["cv_runs"] is not None
                            and (s["median_ms"] or 0) >= 0.05],
        "do_bench_agree_pct_ge_50us": [s["do_bench_agree_pct"] for s in summaries
                                       if s["do_bench_agree_pct"] is not None and (s["median_ms"] or 0) >= 0.05],
    }


def _quartiles(values: list[float]) -> list[float] | None:
    return [round(v, 3) for v in statistics.quantiles(values, n=4)] if len(values) > 1 else None


def _fmt(v: object) -> str:
    return "" if v is None else f"{v:.4g}" if isinstance(v, float) else str(v)


if __name__ == "__main__":
    sys.exit(main())
