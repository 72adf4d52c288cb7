"""Runner throughput on real programs: runs/min, GPU busy fraction and verdict counts over a corpus selection.

    # here (needs pyarrow): pick rows of the dev corpus and write them as JSON lines (GPU images may lack pyarrow)
    python scripts/bench_runner.py export --corpus ../shared/data/realworld --rows 300 --seed 1 --out sel.jsonl
    # (--label present|null: only rows whose label y is present / null; --exclude R: not the rows of results R)
    # on the GPU machine: run them like `runner bulk` does (same LocalBackend, lanes sharing each GPU)
    python scripts/bench_runner.py run --programs sel.jsonl --jobs-per-gpu 4 --out DIR [--budget-s 480] [--shuffle 1]
    # compare two runs of the same rows: verdicts identical? timing differences for rows >= 50 us
    python scripts/bench_runner.py compare DIR1/results.jsonl DIR2/results.jsonl
    # rows of a finished run to run again: its correct rows >= 50 us (--correct), or any N rows
    python scripts/bench_runner.py pick --programs sel.jsonl --results DIR/results.jsonl [--correct] --rows 40 --out O
    # a warm service's re-run latency beyond the timing loops, on K correct rows of a finished run
    python scripts/bench_runner.py latency --programs sel.jsonl --results DIR/results.jsonl --rows 5
    # ... while a bulk pass over other programs shares the GPU (the service's jobs go first)
    python scripts/bench_runner.py latency --programs sel.jsonl --results R --rows 3 --beside sel.jsonl --out DIR

`run` prints and writes (DIR/summary.json) runs/min, verdict counts, the GPU gate's figures per GPU (busy: some
job's GPU step or timing held it; timing: a timing stage held it alone), the GPU's own busy fraction (mean of
nvidia-smi `utilization.gpu`, sampled every 0.5 s) and the per-row time beyond the timing loops, and the host's CPU seconds per run (every process; cores x 60 / that is
the machine's ceiling in runs/min) and the gates' ceiling (runs/min were their holds packed back to back). It stops
starting rows once `--budget-s` is spent. Every figure in BENCHMARKS.md's runner section comes from here."""

from __future__ import annotations

import argparse
import json
import os
import random
import statistics
import subprocess
import sys
import threading
import time
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from common.program_hash import program_sha256  # noqa: E402
from common.settings import load_settings  # noqa: E402
from runner.bulk.backends import LocalBackend, Task  # noqa: E402
from runner.gpu.gate import gates_report  # noqa: E402
from runner.gpu.slots import make_slots  # noqa: E402
from runner.result import RunResult  # noqa: E402
from runner.sandbox.run import close_spares  # noqa: E402
from runner.spec import RunSpec  # noqa: E402

BIG_MS = 0.05  # rows at or above this median are held to the run-to-run targets


def export(args: argparse.Namespace) -> int:
    import pyarrow.parquet as pq

    rows = []
    for split in ("train", "test"):
        path = Path(args.corpus) / f"{split}.parquet"
        if path.is_file():
            table = pq.read_table(path)
            ys = table["y"].to_pylist() if "y" in table.column_names else [None] * table.num_rows
            rows += [(f"{split}/{i:06d}", x, y) for i, (x, y) in enumerate(zip(table["x"].to_pylist(), ys, strict=True))]
    chosen = sorted(random.Random(args.seed).sample(rows, min(args.rows, len(rows))))
    leave_out = _done_ids(args.exclude)
    chosen = [(i, x, y) for i, x, y in chosen if i not in leave_out and _label_kept(y, args.label)]
    _write_programs(args.out, [(i, x) for i, x, _ in chosen])
    print(f"wrote {len(chosen)} of {len(rows)} rows to {args.out}")
    return 0


def _done_ids(results: Path | None) -> set[str]:
    """Row ids of a results file (`--exclude`); none when it is not given or does not exist yet."""
    return set(_by_id(results)) if results is not None and results.is_file() else set()


def _label_kept(y: float | None, label: str) -> bool:
    return label == "any" or (y is not None) == (label == "present")


def _write_programs(path: Path, rows: list[tuple[str, str]]) -> None:
    with open(path, "w", encoding="utf-8") as fh:
        for row_id, x in rows:
            fh.write(json.dumps({"id": row_id, "x": x}) + "\n")


def pick(args: argparse.Namespace) -> int:
    """The first N rows of --programs that have a result in --results: with --correct, only correct rows timed at
    or above BIG_MS (for run-to-run timing); otherwise any verdict (for one-at-a-time verdict checks)."""
    done = _by_id(args.results)

    def wanted(row_id: str) -> bool:
        first = done[row_id][0]
        median = (first.get("timing") or {}).get("median_ms")
        return not args.correct or (first["status"] == "ok" and median is not None and median >= BIG_MS)

    rows = [(i, x) for i, x in load_programs(args.programs) if i in done and wanted(i)][:args.rows]
    _write_programs(args.out, rows)
    print(f"picked {len(rows)} rows into {args.out}")
    return 0


def load_programs(path: Path) -> list[tuple[str, str]]:
    with open(path, encoding="utf-8") as fh:
        return [(d["id"], d["x"]) for d in map(json.loads, fh) if d]


class SmiSampler(threading.Thread):
    """`nvidia-smi --query-gpu=utilization.gpu` every 0.5 s: the fraction of time a kernel ran, per sample."""

    def __init__(self) -> None:
        super().__init__(daemon=True)
        self.samples: list[float] = []
        self.proc: subprocess.Popen | None = None

    def run(self) -> None:
        try:
            self.proc = subprocess.Popen(["nvidia-smi", "--query-gpu=utilization.gpu", "--format=csv,noheader,nounits",
                                          "-lms", "500"], stdout=subprocess.PIPE, text=True)
        except OSError:
            return
        for line in self.proc.stdout:
            values = [float(v) for v in line.split(",") if v.strip().replace(".", "").isdigit()]
            if values:
                self.samples.append(statistics.fmean(values) / 100.0)

    def stop(self) -> float | None:
        if self.proc is not None:
            self.proc.terminate()
        return round(statistics.fmean(self.samples), 4) if self.samples else None


class CpuMeter:
    """The host's CPU seconds over a pass (every process: the runner, its jobs and spares, Triton's compilers),
    from /proc/stat's busy jiffies; per run they give the machine's ceiling: cores x 60 / CPU-s per run."""

    def __init__(self) -> None:
        self.cores = os.cpu_count() or 1
        self.start = self._busy_s()

    @staticmethod
    def _busy_s() -> float | None:
        try:
            with open("/proc/stat", encoding="ascii") as fh:
                fields = [int(v) for v in fh.readline().split()[1:]]
        except (OSError, ValueError):
            return None
        idle = fields[3] + (fields[4] if len(fields) > 4 else 0)  # idle + iowait
        return (sum(fields[:8]) - idle) / os.sysconf("SC_CLK_TCK")

    def report(self, runs: int, wall_s: float) -> dict | None:
        end = self._busy_s()
        if self.start is None or end is None:
            return None
        cpu_s = end - self.start
        per_run = cpu_s / runs if runs else None
        return {"cores": self.cores, "cpu_s": round(cpu_s, 1), "cpu_s_per_run": round(per_run, 2) if per_run else None,
                "busy_fraction": round(cpu_s / (self.cores * wall_s), 4) if wall_s > 0 else None,
                "ceiling_runs_per_min": round(self.cores * 60 / per_run, 1) if per_run else None}


def beyond_loops(r: dict) -> float | None:
    """Wall seconds of a correct run beyond its two timing loops."""
    if r.get("status") != "ok" or not r.get("timing") or not r.get("ref_timing"):
        return None
    return r["duration_s"] - (r["timing"].get("loop_s") or 0.0) - (r["ref_timing"].get("loop_s") or 0.0)


def run(args: argparse.Namespace) -> int:
    programs = load_programs(args.programs)
    if args.shuffle:
        random.Random(args.shuffle).shuffle(programs)
    leave_out = _done_ids(args.exclude)
    programs = [(i, x) for i, x in programs[args.skip:args.skip + args.rows if args.rows else None]
                if i not in leave_out]
    spec = RunSpec.build(args.device, timeout_s=args.timeout, trials=args.trials, profile=args.profile)
    settings = load_settings()
    lanes = args.jobs_per_gpu or settings.runner.jobs_per_gpu
    slots = make_slots(args.device, lanes or 2, triton_cache_dir=str(args.out / "triton-cache"), jobs_per_gpu=lanes,
                       placement=settings.job_placement())
    args.out.mkdir(parents=True, exist_ok=True)
    log = open(args.out / "results.jsonl", "a", encoding="utf-8")
    results: list[dict] = []
    started = time.monotonic()
    deadline = started + args.budget_s

    def tasks():
        for repeat in range(args.repeats):
            for row_id, x in programs:
                if time.monotonic() > deadline:
                    return
                yield Task(row_id, x, program_sha256(x), repeat)

    def on_result(task: Task, result: RunResult) -> None:
        d = result.stamped(spec).to_dict()
        results.append(d)
        log.write(json.dumps(d, default=str) + "\n")
        log.flush()
        if len(results) % 10 == 0:
            rate = len(results) / (time.monotonic() - started) * 60
            print(f"[bench] {len(results)} done, {rate:.1f}/min", file=sys.stderr, flush=True)

    smi = SmiSampler()
    smi.start()
    cpu = CpuMeter()
    interrupted = False
    try:
        LocalBackend(slots).run(tasks(), spec, on_result)
    except KeyboardInterrupt:  # `timeout -s INT`: the rows finished so far still get their summary
        interrupted = True
    finally:
        close_spares()
        log.close()
    elapsed = time.monotonic() - started
    overheads = [o for o in map(beyond_loops, results) if o is not None]
    summary = {
        "rows": len(programs), "runs": len(results), "elapsed_s": round(elapsed, 1),
        "runs_per_min": round(len(results) / elapsed * 60, 2), "interrupted": interrupted,
        "jobs_per_gpu": slots[0].lanes, "shuffle": args.shuffle,
        "profile": spec.profile, "timeout_s": spec.timeout_s,
        "verdicts": dict(Counter(r["error_type"] or "ok" for r in results).most_common()),
        "gpu_gates": (gates := gates_report()), "gate_ceiling_runs_per_min": gate_ceiling(len(results), gates),
        "gpu_busy_fraction_smi": smi.stop(), "host_cpu": cpu.report(len(results), elapsed),
        "beyond_timing_loops_s": _quantiles(overheads),
        "phase_totals_s": _phase_totals(results),
        "process_cpu_s_per_run": _cpu_per_run(results),
        "spare_warm_up_s": _warm_up_medians(results),
        "gpu": next((r["system"].get("gpu") for r in results if r.get("system", {}).get("gpu")), None),
    }
    (args.out / "summary.json").write_text(json.dumps(summary, indent=2))
    print(json.dumps(summary, indent=2))
    return 0


def gate_ceiling(runs: int, gates: dict[str, dict]) -> float | None:
    """Runs/min were the GPU gates' holds (shared or alone) packed back to back with the same hold time per row,
    the rows spread evenly over the GPUs: the bound the gates set (None: no gate held)."""
    busy = [g["busy_s"] for g in gates.values() if g.get("busy_s")]
    if not runs or not busy:
        return None
    return round(runs / len(busy) * 60 * sum(1 / b for b in busy), 1)


def _phase_totals(results: list[dict]) -> dict[str, float]:
    """Seconds spent in each phase over all runs, largest first: where a pass's time went."""
    totals: Counter = Counter()
    for r in results:
        totals.update(r.get("phases_s") or {})
    return {name: round(s, 1) for name, s in totals.most_common()}


def _cpu_per_run(results: list[dict]) -> dict[str, float]:
    """Mean CPU seconds per run of the judge and the candidate, warming up and for the job (`cpu_s`)."""
    totals: Counter = Counter()
    for r in results:
        totals.update(r.get("cpu_s") or {})
    return {name: round(s / len(results), 2) for name, s in sorted(totals.items())} if results else {}


def _warm_up_medians(results: list[dict]) -> dict[str, float]:
    """Median wall seconds of each warm-up step of the spares the runs were given (`warm_up_s`; `*_idle` < 0: the
    job waited for that process)."""
    steps: dict[str, list[float]] = {}
    for r in results:
        for name, seconds in (r.get("warm_up_s") or {}).items():
            steps.setdefault(name, []).append(seconds)
    return {name: round(statistics.median(values), 3) for name, values in sorted(steps.items())}


def _quantiles(values: list[float]) -> dict[str, float] | None:
    if not values:
        return None
    s = sorted(values)
    return {"n": len(s), "median": round(statistics.median(s), 3), "p90": round(s[int(0.9 * (len(s) - 1))], 3),
            "max": round(s[-1], 3)}


def _by_id(path: Path) -> dict[str, list[dict]]:
    out: dict[str, list[dict]] = {}
    with open(path, encoding="utf-8") as fh:
        for line in fh:
            if line.strip():
                d = json.loads(line)
                out.setdefault(d["id"], []).append(d)
    return out


def compare(args: argparse.Namespace) -> int:
    """Verdict agreement and run-to-run timing differences between two result files (first run of each row)."""
    a, b = _by_id(args.first), _by_id(args.second)
    common = sorted(a.keys() & b.keys())
    differ = [(i, a[i][0]["error_type"], b[i][0]["error_type"]) for i in common
              if a[i][0]["error_type"] != b[i][0]["error_type"]]
    diffs = []
    for i in common:
        ta, tb = (a[i][0].get("timing") or {}).get("median_ms"), (b[i][0].get("timing") or {}).get("median_ms")
        if ta and tb and min(ta, tb) >= BIG_MS:
            diffs.append((abs(ta - tb) / min(ta, tb), i))
    diffs.sort()
    summary = {
        "rows_in_both": len(common), "verdicts_identical": len(common) - len(differ), "verdicts_differ": differ,
        "timed_rows_ge_50us": len(diffs),
        "timing_rel_diff_median": round(statistics.median(d for d, _ in diffs), 5) if diffs else None,
        "timing_rel_diff_max": round(diffs[-1][0], 5) if diffs else None,
        "timing_worst_rows": [(i, round(d, 4)) for d, i in diffs[-5:]],
    }
    print(json.dumps(summary, indent=2))
    return 0


def _start_beside(args: argparse.Namespace) -> subprocess.Popen | None:
    """`--beside FILE`: a bulk pass (`run`) over FILE's rows in another process, sharing the GPU with the service;
    returns once it has finished `--beside-warm` rows (its jobs and spares are warm)."""
    if args.beside is None:
        return None
    out = args.out / "beside"
    proc = subprocess.Popen([sys.executable, __file__, "run", "--programs", str(args.beside), "--shuffle", "1",
                             "--budget-s", "3600", "--out", str(out)], stderr=subprocess.DEVNULL,
                            stdout=subprocess.DEVNULL, cwd=Path(__file__).resolve().parent.parent)
    deadline = time.monotonic() + 300
    while time.monotonic() < deadline and proc.poll() is None:
        done = out / "results.jsonl"
        if done.is_file() and sum(1 for _ in open(done, encoding="utf-8")) >= args.beside_warm:
            break
        time.sleep(1)
    return proc


def latency(args: argparse.Namespace) -> int:
    """Start a service, run K correct programs once (cold), then again with force (warm): seconds from submit to
    verdict beyond the timing loops; with `--beside`, while a bulk pass shares the GPU (the service's jobs go first:
    `runner.gpu.host_lock`), also the seconds each job waited for the GPU. Each row keeps the job's longest phases
    (its gate waits apart) and its spare's warm-up, so that a slow re-run says where its time went."""
    import secrets
    import signal

    from runner.service.client import RunnerClient

    done = _by_id(args.results)
    programs = dict(load_programs(args.programs))
    chosen = [i for i in sorted(done) if done[i][0]["status"] == "ok" and i in programs][: args.rows]
    runs = args.out / "service-runs"
    token = secrets.token_urlsafe(16)
    env = {**os.environ, "TLX_RUNNER_TOKEN": token, "TLX_RUNS_DIR": str(runs)}
    service = subprocess.Popen([sys.executable, "-m", "runner", "serve", "--port", str(args.port), "--device", "cuda",
                                "--runs-dir", str(runs)], env=env, cwd=Path(__file__).resolve().parent.parent)
    client = RunnerClient(f"http://127.0.0.1:{args.port}", token, timeout=30)
    beside = _start_beside(args)
    try:
        for _ in range(120):
            try:
                client.health()
                break
            except Exception:
                time.sleep(0.5)
        time.sleep(args.settle_s)
        rows = []
        for row_id in chosen:
            for attempt in ("cold", "warm"):
                t0 = time.monotonic()
                job = client.wait(client.submit(program=programs[row_id], force=attempt == "warm",
                                                timeout_s=120)["id"], timeout=300, poll=0.05)
                wall = time.monotonic() - t0
                r = job["result"] or {}
                loops = sum((r.get(k) or {}).get("loop_s") or 0.0 for k in ("timing", "ref_timing"))
                waited = (r.get("phases_s") or {}).get("timing: waiting for the GPU")
                phases = sorted((r.get("phases_s") or {}).items(), key=lambda kv: -kv[1])
                rows.append({"id": row_id, "attempt": attempt, "status": r.get("status"), "wall_s": round(wall, 2),
                             "timing_loops_s": round(loops, 2), "beyond_loops_s": round(wall - loops, 2),
                             "waited_for_gpu_s": waited, "beside_bulk": beside is not None and beside.poll() is None,
                             "longest_phases_s": dict(phases[:8]), "warm_up_s": r.get("warm_up_s") or {}})
                print(json.dumps(rows[-1]), flush=True)
    finally:
        service.terminate()
        service.wait(30)
        if beside is not None:
            try:
                beside.wait(args.beside_wait_s)  # the pass may finish its rows
            except subprocess.TimeoutExpired:
                beside.send_signal(signal.SIGINT)  # its summary is written on the way out
                beside.wait(120)
    warm = [r["beyond_loops_s"] for r in rows if r["attempt"] == "warm" and r["status"] == "ok"]
    summary = {"warm_rerun_beyond_timing_loops_s": _quantiles(warm), "beside": str(args.beside) if args.beside else None}
    if beside is not None and (args.out / "beside" / "summary.json").is_file():
        summary["beside_runs_per_min"] = json.loads((args.out / "beside" / "summary.json").read_text())["runs_per_min"]
    (args.out).mkdir(parents=True, exist_ok=True)
    (args.out / "latency.json").write_text(json.dumps({"rows": rows, **summary}, indent=2))
    print(json.dumps(summary, indent=2))
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="command", required=True)
    p = sub.add_parser("export")
    p.add_argument("--corpus", type=Path, required=True)
    p.add_argument("--rows", type=int, default=300)
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--label", choices=("any", "present", "null"), default="any", help="rows whose y is ...")
    p.add_argument("--exclude", type=Path, help="leave out the rows of this results file (if it exists)")
    p.add_argument("--out", type=Path, required=True)
    p = sub.add_parser("pick")
    p.add_argument("--programs", type=Path, required=True)
    p.add_argument("--results", type=Path, required=True)
    p.add_argument("--correct", action="store_true", help="only correct rows timed at >= 50 us")
    p.add_argument("--rows", type=int, default=40)
    p.add_argument("--out", type=Path, required=True)
    p = sub.add_parser("run")
    p.add_argument("--programs", type=Path, required=True)
    p.add_argument("--skip", type=int, default=0, help="start at this row of the file (after --shuffle)")
    p.add_argument("--rows", type=int, default=0, help="at most N rows (0: all)")
    p.add_argument("--repeats", type=int, default=1)
    p.add_argument("--shuffle", type=int, default=0, metavar="SEED",
                   help="run the rows in this seeded random order (0: the file's order, which export sorts by id)")
    p.add_argument("--device", choices=("cuda", "cpu"), default="cuda")
    p.add_argument("--jobs-per-gpu", type=int, default=None,
                   help="(default: TLX_RUNNER_JOBS_PER_GPU, else sized from the cores and memory per GPU; with "
                        "--device cpu: interpreter workers, 2)")
    p.add_argument("--timeout", type=float, default=60.0)
    p.add_argument("--trials", type=int, default=None)
    p.add_argument("--profile", default=None)
    p.add_argument("--budget-s", type=float, default=480.0, help="start no row after this many seconds")
    p.add_argument("--exclude", type=Path, help="leave out the rows of this results file (if it exists)")
    p.add_argument("--out", type=Path, required=True)
    p = sub.add_parser("compare")
    p.add_argument("first", type=Path)
    p.add_argument("second", type=Path)
    p = sub.add_parser("latency")
    p.add_argument("--programs", type=Path, required=True)
    p.add_argument("--results", type=Path, required=True)
    p.add_argument("--rows", type=int, default=5)
    p.add_argument("--port", type=int, default=8799)
    p.add_argument("--beside", type=Path, help="programs of a bulk pass run beside the service meanwhile")
    p.add_argument("--beside-warm", type=int, default=12, help="rows the bulk pass finishes before the first re-run")
    p.add_argument("--beside-wait-s", type=float, default=0.0, help="after the re-runs, let the bulk pass finish")
    p.add_argument("--settle-s", type=float, default=0.0, help="wait this long after the service answers before the "
                   "first re-run (its spares warm up meanwhile)")
    p.add_argument("--out", type=Path, required=True)
    args = parser.parse_args(argv)
    return {"export": export, "pick": pick, "run": run, "compare": compare, "latency": latency}[args.command](args)


if __name__ == "__main__":
    sys.exit(main())
