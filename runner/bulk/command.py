"""`python -m runner bulk`: re-run many store rows, locally (one sandbox per GPU) or on a Ray cluster.

Rows are chosen from the store's `index.parquet` (`--problem`, `--split`, `--status`, `--error-type`,
`--triage-status`, `--triage-error`, `--ids`, `--sample`, `--limit`); each task is the same sandboxed evaluation as a single re-run, and every result is
appended to the same results log (`RUNS_DIR/results/bulk-<host>-<pid>.jsonl`) that the explorer reads.

Locally, `--jobs-per-gpu` jobs share each GPU through their CPU-bound stages and are timed one at a time
(`runner.gpu.gate`).

Resumable: a row is skipped when the log already holds `--repeats` results for the same row id, program hash,
run settings (`runner.spec.RunSpec.key`, profile included) and hardware (GPU name, or `cpu-interpreter`), unless `--force`;
a `crashed` result (a run whose worker died) counts, stamped with the planned GPU where it names none. Results are
fsync'd as they arrive, so Ctrl-C loses at most the tasks in flight. Progress (rate, ETA) goes to stderr, the
summary to stdout.
"""

from __future__ import annotations

import argparse
import random
import sys
import time
from collections import Counter
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path

from common.program_hash import program_sha256
from common.results_log import ResultsLog, default_writer, read_results
from common.settings import Settings, load_settings
from common.terminal import inert
from common.triage_log import TRIAGE_ERROR_TYPES, TRIAGE_FILTER_STATUSES
from runner.bulk.backends import LocalBackend, RayBackend, Task
from runner.gpu.slots import detect_gpus, make_slots
from runner.result import RunResult
from runner.rows import StoreUnavailable, filtered_rows, iter_programs, resolve_store
from runner.sandbox import isolation
from runner.spec import result_key
from runner.spec_args import add_spec_arguments, spec_from_args

ERROR_SOURCES = ("static", "triaged", "measured")  # queries.filters.ERROR_SOURCES (bulk parses without queries)


def select_rows(store: Path, args: argparse.Namespace, settings: Settings) -> list[tuple[str, int, int]]:
    """(row id, code shard, code row group) of the rows the filters pick, in id order (or sample order).

    Rows are chosen by the filters of the explorer's pages (`runner.rows.filtered_rows`): `--error-type` matches
    the static error, the latest CPU triage's or the latest measured verdict (the store's shipped runs and triage
    and `settings.runs_dir`'s), as the Failures page counts them; `--triage-status passed --status failed` re-runs
    only the failed rows whose triage found nothing (the rest needs a GPU).
    """
    rows = filtered_rows(store, settings, split=args.split, holdout_group=args.holdout, status=args.status,
                         error_type=args.error_type, error_source=args.error_source, problem=args.problem,
                         triage_status=args.triage_status, triage_error=args.triage_error)
    if args.ids:
        wanted = read_ids(args.ids)
        rows = [r for r in rows if r[0] in wanted]
    if args.sample is not None and args.sample < len(rows):
        rows = random.Random(args.seed).sample(rows, args.sample)
    return rows[: args.limit] if args.limit is not None else rows


def read_ids(path: Path) -> set[str]:
    try:
        lines = Path(path).read_text(encoding="utf-8").splitlines()
    except OSError as e:
        raise SystemExit(f"bulk: cannot read --ids file {path}: {e}") from None
    return {line.strip() for line in lines if line.strip() and not line.lstrip().startswith("#")}


def done_counts(runs_dir: Path, okey: str, hardware: str) -> Counter:
    """(row id, program hash) -> how many logged results match these settings and hardware."""
    counts: Counter = Counter()
    for r in read_results(runs_dir):
        key = result_key(r)
        if key and key[2] == okey and key[3] == hardware:
            counts[(key[0], key[1])] += 1
    return counts


class Progress:
    """Counts results; prints a progress line with rate and ETA to stderr at most every `every_s` seconds."""

    def __init__(self, planned: int, every_s: float = 2.0, name: str = "bulk", good: str = "ok"):
        self.planned = planned
        self.name, self.good = name, good
        self.every_s = every_s
        self.started = time.monotonic()
        self.last = 0.0
        self.done = 0
        self.skipped = 0
        self.by_outcome: Counter = Counter()
        self.tty = sys.stderr.isatty()
        self.printed = ""

    def skip(self, n: int = 1) -> None:
        self.skipped += n

    def record(self, outcome: str) -> None:
        self.done += 1
        self.by_outcome[outcome] += 1
        self.show()

    def rate(self) -> float:
        return self.done / max(time.monotonic() - self.started, 1e-9)

    def show(self, final: bool = False) -> None:
        now = time.monotonic()
        if not final and now - self.last < self.every_s:
            return
        self.last = now
        left = max(self.planned - self.done - self.skipped, 0)
        rate = self.rate()
        eta = f"{left / rate:,.0f} s" if rate > 0 else "?"
        line = (f"[{self.name}] {self.done} done, {self.skipped} skipped, {left} left; "
                f"{rate * 60:,.1f}/min; ETA {eta}; {self.good} {self.by_outcome.get(self.good, 0)}")
        if self.tty:
            print("\r" + line, end="\n" if final else "", file=sys.stderr, flush=True)
        elif line != self.printed:
            print(line, file=sys.stderr, flush=True)
        self.printed = line


def plan_tasks(
    store: Path, rows: list[tuple[str, int, int]], counts: Counter, repeats: int, force: bool, progress: Progress
) -> Iterator[Task]:
    """Tasks still to run, reading programs a row group at a time; skipped rows are counted on `progress`."""
    for row_id, program in iter_programs(store, rows):
        sha = program_sha256(program)
        have = 0 if force else counts.get((row_id, sha), 0)
        progress.skip(min(have, repeats))
        for repeat in range(have, repeats):
            yield Task(row_id, program, sha, repeat)


def summary(progress: Progress, selected: int, interrupted: bool, log_path: Path) -> str:
    elapsed = time.monotonic() - progress.started
    outcomes = ", ".join(f"{k} {v}" for k, v in sorted(progress.by_outcome.items(), key=lambda kv: -kv[1]))
    lines = [
        f"bulk {'interrupted' if interrupted else 'finished'}: {selected} row(s) selected, "
        f"{progress.done} run(s) done, {progress.skipped} skipped (already done)",
        f"outcomes: {outcomes or 'none'}",
        f"time {elapsed:,.1f} s, rate {progress.rate() * 60:,.2f} runs/min",
        f"results: {log_path}",
    ]
    return "\n".join(lines)


def add_row_arguments(parser: argparse.ArgumentParser) -> None:
    """The rows a run takes from a store: the explorer's filters, ids, a sample, a limit (bulk and triage)."""
    parser.add_argument("--store", type=Path, default=None, help="store to read rows from (default TLX_STORE)")
    parser.add_argument("--runs-dir", type=Path, default=None, help="results log folder (default TLX_RUNS_DIR)")
    parser.add_argument("--problem", help="problem key (16 hex) or problem id (e.g. 1_23)")
    parser.add_argument("--split", help="train or test")
    parser.add_argument("--holdout", help="holdout group (test rows)")
    parser.add_argument("--error-type",
                        help="static error type, or the error type of the row's latest CPU triage or latest result")
    parser.add_argument("--error-source", choices=ERROR_SOURCES,
                        help="--error-type from this source only; alone: rows with a static error / a CPU triage / "
                             "a run result")
    parser.add_argument("--triage-status", choices=TRIAGE_FILTER_STATUSES,
                        help="the row's latest CPU triage (`python -m runner triage`); untriaged: none")
    parser.add_argument("--triage-error", choices=TRIAGE_ERROR_TYPES,
                        help="the error type of the row's latest CPU triage")
    parser.add_argument("--status", choices=("ok", "failed"), help="the dataset's label: y present or null")
    parser.add_argument("--ids", type=Path, help="file with one row id per line")
    parser.add_argument("--sample", type=int, help="random sample of N selected rows (see --seed)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--limit", type=int, help="at most N rows")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    add_row_arguments(parser)
    parser.add_argument("--backend", choices=("local", "ray"), default="local")
    parser.add_argument("--address", help="Ray cluster address (default: start a local Ray instance)")
    parser.add_argument("--repeats", type=int, default=1, help="runs per row (resume counts them)")
    parser.add_argument("--force", action="store_true", help="run rows even if already done")
    parser.add_argument("--device", choices=("auto", "cuda", "cpu"), default="auto")
    add_spec_arguments(parser)
    parser.add_argument("--workers", type=int, default=1, help="local CPU interpreter workers (no GPU)")
    parser.add_argument("--jobs-per-gpu", type=int, default=None,
                        help="local jobs sharing each GPU, timed one at a time (default TLX_RUNNER_JOBS_PER_GPU, "
                             "else a job per 2 cores and 8 GiB per GPU, at most 6)")
    parser.add_argument("--ray-cpus", type=int, default=None, help="CPUs of a local Ray instance")


def _backend(args: argparse.Namespace, triton_cache_dir: str, settings: Settings):
    reuse = settings.runner.reuse_reference_timing
    if args.backend == "local":
        lanes = args.jobs_per_gpu or settings.runner.jobs_per_gpu
        return LocalBackend(make_slots(args.device, args.workers, triton_cache_dir=triton_cache_dir,
                                       jobs_per_gpu=lanes, placement=settings.job_placement()),
                            reuse_reference_timing=reuse)
    if args.device == "auto":
        args.device = "cuda" if (args.address or detect_gpus()) else "cpu"
    return RayBackend(args.device, args.address, args.ray_cpus, triton_cache_dir, settings.job_placement(), reuse)


def main(args: argparse.Namespace) -> int:
    if args.repeats < 1 or (args.limit is not None and args.limit < 0) or (args.sample is not None and args.sample < 1):
        print("bulk: --repeats and --sample must be >= 1, --limit >= 0", file=sys.stderr)
        return 2
    settings = load_settings()  # once, at the process's entry
    runs_dir = (args.runs_dir or settings.runs_dir).expanduser()
    try:
        store = resolve_store(args.store, settings)
        isolation.keep_private(runs_dir, store)  # named by flags: no job may see them, wherever they lie
        rows = select_rows(store, args, replace(settings, runs_dir=runs_dir))
    except (StoreUnavailable, OSError) as e:
        print(inert(f"bulk: {e}"), file=sys.stderr)
        return 1
    try:
        backend = _backend(args, str(runs_dir / "triton-cache"), settings)
    except (RuntimeError, ValueError) as e:
        print(inert(f"bulk: {e}"), file=sys.stderr)
        return 1
    try:
        spec = spec_from_args(args, backend.device)
    except ValueError as e:
        backend.close()
        print(inert(f"bulk: {e}"), file=sys.stderr)
        return 2
    hardware = backend.hardware()
    counts = Counter() if args.force else done_counts(runs_dir, spec.key(), hardware)
    log = ResultsLog(runs_dir, default_writer("bulk"))
    progress = Progress(len(rows) * args.repeats)
    print(f"[bulk] {len(rows)} row(s) x {args.repeats} on {backend.name} ({hardware}, {backend.capacity} at a time), "
          f"profile {spec.profile}; results -> {log.path}", file=sys.stderr, flush=True)

    def on_result(task: Task, result: RunResult) -> None:
        if result.device == "cuda" and not result.system.get("gpu"):
            # a verdict made where no GPU was asked (the Ray worker died, the evaluation raised, the sandbox's parent
            # ended the child): it ran on the hardware planned for, and resume must count it there, not run it again
            result.system = {**result.system, "gpu": hardware}
        log.append(result.stamped(spec).to_dict())
        progress.record(result.error_type or result.status or "?")

    interrupted = False
    try:
        backend.run(plan_tasks(store, rows, counts, args.repeats, args.force, progress), spec, on_result)
    except KeyboardInterrupt:
        interrupted = True
    except StoreUnavailable as e:
        print(inert(f"\nbulk: {e}"), file=sys.stderr)
        return 1
    finally:
        backend.close()
    progress.show(final=True)
    print(inert(summary(progress, len(rows), interrupted, log.path)))
    return 130 if interrupted else 0
