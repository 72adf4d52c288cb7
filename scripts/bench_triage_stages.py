"""Where a triage's compile time goes, and which Triton stage catches each compile error (issue 41).

    python scripts/bench_triage_stages.py --store STORE [--ids FILE] [--rows N] [--target sm_90] [--per-row FILE]

Triages each row in a forked child of one warm process (no isolation: a measurement of the compiler, run only on
corpora you trust, such as ../shared/data/realworld), with every stage of Triton's CUDA pipeline (ttir, ttgir,
llir, ptx, cubin) timed through `knobs.runtime.add_stages_inspection_hook`; prints the stage totals, the stage that
raised each compile error, CPU seconds per row (median, mean, and by triage phase: import, build, compile,
compare) and the compile cache's hits as JSON; `--per-row` writes each row's figures and verdict, one JSON line each.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))


def _children_cpu() -> float:
    """CPU seconds of finished child processes (ptxas runs as one)."""
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def _timed_stages(record: dict) -> None:
    from triton import knobs

    before = knobs.runtime.add_stages_inspection_hook  # the stand-in's own (stages it stands in for)

    def hook(*args):
        if not args:  # JITFunction.run asks for the hook's cache key: each launch starts in the front end
            record["stage"] = "frontend"
            return before() if before else ("timed-stages", "timed-stages")
        if before:
            before(*args)
        stages = args[1]
        for name, fn in list(stages.items()):
            def timed(src, metadata, _fn=fn, _name=name):
                start = time.process_time() + _children_cpu()
                record["stage"] = _name
                try:
                    return _fn(src, metadata)
                finally:
                    spent = time.process_time() + _children_cpu() - start
                    record["times"][_name] = record["times"].get(_name, 0.0) + spent
            stages[name] = timed

    knobs.runtime.add_stages_inspection_hook = hook


def _stage_failed(result: dict, stage: str) -> str | None:
    """The stage that raised a compile error: shared memory is known from the allocation (`llir` in a triage)."""
    if result.get("error_type") != "compile_error":
        return None
    return "llir" if (result.get("exception") or "").endswith("OutOfResources") else stage


def main() -> int:
    p = argparse.ArgumentParser()
    p.add_argument("--store", type=Path, required=True)
    p.add_argument("--ids", type=Path)
    p.add_argument("--rows", type=int, default=100)
    p.add_argument("--target", default="sm_90")
    p.add_argument("--per-row", type=Path, help="write each row's figures and verdict here (JSON lines)")
    args = p.parse_args()
    import warnings

    warnings.simplefilter("ignore")
    from queries.store import Store
    from runner.rows import iter_programs
    from runner.triage import stand_in
    from runner.triage.program import triage, warm_up

    store = Store(args.store)
    index = store.read_index(["id", "code_shard", "code_rg"]).to_pylist()
    wanted = set(Path(args.ids).read_text().split()) if args.ids else None
    rows = [(r["id"], r["code_shard"], r["code_rg"]) for r in index if wanted is None or r["id"] in wanted]
    rows = rows[: args.rows]
    os.environ.setdefault("TRITON_CACHE_DIR", tempfile.mkdtemp(prefix="tlx-triage-bench-"))
    import torch  # noqa: F401

    stand_in.install(args.target)
    warm_up()  # as a worker does before its first fork
    stage_totals: Counter = Counter()
    caught: Counter = Counter()
    per_row = []
    folder = Path(tempfile.mkdtemp(prefix="tlx-triage-bench-programs-"))
    for row_id, program in iter_programs(args.store, rows):
        path = folder / "program.py"
        path.write_text(program)
        r_fd, w_fd = os.pipe()
        pid = os.fork()
        if pid == 0:
            os.close(r_fd)
            record = {"times": {}, "stage": "frontend"}  # before the first stage: Python AST -> Triton IR
            _timed_stages(record)
            cpu = time.process_time() + _children_cpu()
            result = triage(str(path))
            out = {"id": row_id, "status": result["triage_status"], "error_type": result.get("error_type"),
                   "stage_failed": _stage_failed(result, record["stage"]),
                   "times": record["times"], "phases_cpu": result.get("phases_cpu_s"),
                   "cache": result.get("cache"), "message": (result.get("message") or "")[:300],
                   "cpu": time.process_time() + _children_cpu() - cpu}
            os.write(w_fd, json.dumps(out).encode())
            os._exit(0)
        os.close(w_fd)
        data = b""
        while chunk := os.read(r_fd, 1 << 16):
            data += chunk
        os.close(r_fd)
        os.waitpid(pid, 0)
        if not data:
            continue
        out = json.loads(data)
        per_row.append(out)
        stage_totals.update(out["times"])
        if out["stage_failed"]:
            caught[out["stage_failed"]] += 1
    cpus = [r["cpu"] for r in per_row]
    phases = Counter()
    for r in per_row:
        phases.update(r["phases_cpu"] or {})
    hits, misses, from_disk = (sum((r["cache"] or {}).get(k, 0) for r in per_row)
                               for k in ("hits", "misses", "from_disk"))
    if args.per_row:
        args.per_row.write_text("".join(json.dumps(r) + "\n" for r in per_row))
    report = {"rows": len(per_row), "cpu_s_median": statistics.median(cpus) if cpus else None,
              "cpu_s_mean": statistics.fmean(cpus) if cpus else None,
              "phase_cpu_s_mean": {k: round(v / len(per_row), 3) for k, v in phases.items()},
              "launches": {"compiled nothing": hits, "compiled": misses,
                           "hit_rate": round(hits / (hits + misses), 3) if hits + misses else None},
              "compiles_across_rows": {"from an earlier row": from_disk, "compiled": misses,
                                       "hit_rate": round(from_disk / (from_disk + misses), 3) if misses else None},
              "stage_cpu_s_total": {k: round(v, 2) for k, v in stage_totals.items()},
              "compile_errors_caught_at": dict(caught),
              "statuses": dict(Counter(r["status"] for r in per_row)),
              "error_types": dict(Counter(r["error_type"] for r in per_row if r["error_type"]))}
    print(json.dumps(report, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
