"""`python -m runner triage`: why programs fail, without a GPU (issue 41; design §3 "triaged").

Programs come from a store (`--store`, with bulk's filters, `--ids`, `--sample`, `--limit`) or from files given as
arguments. Each is triaged once in a warm worker inside the job isolation (`runner.triage.pool`), or in chunks on a
Ray cluster (`--backend ray`). Every result is one JSON line, appended to `RUNS_DIR/triage/triage-<host>-<pid>.jsonl`
(which the explorer reads beside the store's published `triage-*.jsonl`) and, with `--out`, to that file too:
`id`, `row_id`, `program_sha256`, `triage_status` (`passed` | `failed` | `not_triaged`), `error_type` (the GPU
runner's names, `common.outcomes.ErrorType`), `message`, `exception`, `kernel`, `module`, `reason`, `stage`,
`target`, `versions`, `phases_s` (wall) and `phases_cpu_s` (CPU seconds of import, build, compile, compare),
`compile_s`, `cpu_s`, `cache` (launches that compiled: `misses`; that did not: `hits`, of which `from_disk` an
earlier program of the worker compiled), `kernels`, `triaged_at`, `flags`.

Resumable: a program already triaged for the same target under the same torch (in `--out` or the triage log, same
row id and program hash) is skipped unless `--force`. Progress (rate, ETA) goes to stderr, the summary to stdout.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import sys
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path

from common.program_hash import program_sha256
from common.results_log import TRIAGE, ResultsLog, default_writer
from common.settings import Settings, load_settings
from common.triage_log import read_triage
from runner.bulk.command import Progress, add_row_arguments, select_rows
from runner.rows import StoreUnavailable, iter_programs, resolve_store
from runner.triage.backends import LocalTriage, RayTriage
from runner.triage.pool import TriageSettings
from runner.triage.stand_in import TARGETS

FIELDS = ("triage_status", "error_type", "message", "exception", "kernel", "module", "reason", "stage",
          "phases_s", "phases_cpu_s", "compile_s", "cpu_s", "cache", "kernels", "flags", "traceback")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("programs", nargs="*", type=Path, help="program files (instead of a store's rows)")
    add_row_arguments(parser)
    parser.add_argument("--target", default="sm_90", choices=sorted(TARGETS), help="GPU to compile for")
    parser.add_argument("--out", type=Path, help="also append the results to this JSON-lines file")
    parser.add_argument("--workers", type=int, default=max(1, (os.cpu_count() or 2)),
                        help="warm worker processes (default: one per core)")
    parser.add_argument("--timeout", type=float, default=60.0, help="seconds one program may take")
    parser.add_argument("--memory-mb", type=float, default=4096.0, help="resident memory one program may use")
    parser.add_argument("--force", action="store_true", help="triage programs already triaged")
    parser.add_argument("--backend", choices=("local", "ray"), default="local")
    parser.add_argument("--address", help="Ray cluster address (default: start a local Ray instance)")
    parser.add_argument("--ray-cpus", type=int, default=None, help="CPUs of a local Ray instance")


def _done(runs_dir: Path, target: str) -> set[tuple[str, str]]:
    """(id, program hash) of the results the triage log already holds for `target`."""
    done = set()
    for logged in read_triage(runs_dir):
        result = logged.result
        if result.get("target") == target and result.get("id"):
            done.add((result["id"], result.get("program_sha256")))
    return done


def _out_done(path: Path | None, target: str) -> set[tuple[str, str]]:
    done = set()
    if path is None or not path.is_file():
        return done
    for line in path.read_text(encoding="utf-8", errors="replace").splitlines():
        try:
            r = json.loads(line)
        except ValueError:
            continue
        if isinstance(r, dict) and r.get("target") == target:
            done.add((r.get("id"), r.get("program_sha256")))
    return done


def _items(args: argparse.Namespace, runs_dir: Path, settings: Settings) -> tuple[list, Iterator[tuple[str, str]]]:
    """(the selection, an iterator of (id, program)) from files or from the store."""
    if args.programs:
        texts = []
        for path in args.programs:
            try:
                texts.append(path.read_text(encoding="utf-8", errors="replace"))
            except OSError as e:
                raise SystemExit(f"triage: cannot read {path}: {e}") from None
        items = [(program_sha256(text), text) for text in texts]
        return items, iter(items)
    store = resolve_store(args.store, settings)
    rows = select_rows(store, args, replace(settings, runs_dir=runs_dir))
    return rows, iter_programs(store, rows)


def main(args: argparse.Namespace) -> int:
    settings = load_settings()  # once, at the process's entry
    runs_dir = (args.runs_dir or settings.runs_dir).expanduser()
    try:
        selection, items = _items(args, runs_dir, settings)
    except (StoreUnavailable, OSError) as e:
        print(f"triage: {e}", file=sys.stderr)
        return 1
    done = set() if args.force else _done(runs_dir, args.target) | _out_done(args.out, args.target)
    triage = TriageSettings(args.target, args.timeout, args.memory_mb, settings.job_placement()["hidden_roots"])
    try:
        backend = (LocalTriage(args.workers, triage) if args.backend == "local"
                   else RayTriage(args.address, args.ray_cpus, args.workers, triage))
    except (RuntimeError, OSError) as e:
        print(f"triage: {e}", file=sys.stderr)
        return 1
    log = ResultsLog(runs_dir, default_writer("triage"), folder=TRIAGE)
    progress = Progress(len(selection), name="triage", good="passed")
    print(f"[triage] {len(selection)} program(s) for {args.target} on {backend.name} ({backend.capacity} at a time);"
          f" results -> {log.path}", file=sys.stderr, flush=True)
    from_store = not args.programs

    def todo() -> Iterator[tuple[str, str]]:
        for row_id, program in items:
            if (row_id, program_sha256(program)) in done:
                progress.skip()
                continue
            yield row_id, program

    def on_result(row_id: str, program: str, result: dict) -> None:
        line = {"id": row_id, "row_id": row_id if from_store else None, "program_sha256": program_sha256(program),
                **{k: result.get(k) for k in FIELDS}, "target": args.target, "versions": result.get("versions"),
                "triaged_at": dt.datetime.now(dt.UTC).isoformat(timespec="seconds")}
        log.append(line)
        if args.out is not None:
            with open(args.out, "a", encoding="utf-8") as fh:
                fh.write(json.dumps(line, default=str) + "\n")
        progress.record(line["error_type"] or line["triage_status"])

    interrupted = False
    try:
        backend.run(todo(), on_result)
    except KeyboardInterrupt:
        interrupted = True
    finally:
        backend.close()
    progress.show(final=True)
    outcomes = ", ".join(f"{k} {v}" for k, v in sorted(progress.by_outcome.items(), key=lambda kv: -kv[1]))
    print(f"triage: {progress.done} triaged, {progress.skipped} skipped{'; interrupted' if interrupted else ''}"
          f" ({outcomes or 'nothing to do'}); log {log.path}")
    return 130 if interrupted else 0
