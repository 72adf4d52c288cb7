"""What CPU triage results cost the explorer (issue 41): reading N triage lines, loading the `triage` table with
each row's latest triage, and the Failures page's count by most trusted cause, on a synthetic `programs` table.

    python scripts/bench_triage.py [--rows 601000] [--triaged 601000] [--repeat 5]

`--rows` programs (35% without a label, as in the dataset), `--triaged` of them with one triage line each (a third
passed, half failed, the rest not triaged) written to a temporary `triage/` folder in the writer's format, and a
GPU run for 1% of them. Prints: reading and flattening the lines (`queries.triage.TriageReader`, CPU seconds), then
1,000 lines appended to the file (read alone); `sql/setup_triage.sql` (the table, the latest per row, the copy
onto `programs`; then again for the appended lines alone, as a refresh does); `sql/failures.sql` (median of
`--repeat`). The connection is configured as the explorer's (`TLX_DUCKDB_THREADS`, `TLX_DUCKDB_MEMORY`).
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path

import duckdb

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from common.settings import load_settings  # noqa: E402
from queries.checks_table import checks_table  # noqa: E402
from queries.filters import Filters  # noqa: E402
from queries.sql_files import sql_text  # noqa: E402
from queries.triage import TriageReader  # noqa: E402

PROGRAMS = """
CREATE TABLE programs AS
SELECT 'train/' || lpad(i::VARCHAR, 6, '0') AS id, 'train' AS split, NULL::VARCHAR AS holdout_group,
       md5((i % 2000)::VARCHAR)[:16] AS problem_key, NULL::VARCHAR AS problem_id, NULL::INTEGER AS level,
       i % 20 >= 7 AS ok, CASE WHEN i % 100 = 0 THEN 'syntax_error' ELSE 'ok_static' END AS static_error,
       []::VARCHAR[] AS static_flags, md5(i::VARCHAR) AS program_sha256,
       NULL::VARCHAR AS measured_status, NULL::VARCHAR AS measured_error, NULL::VARCHAR[] AS run_flags,
       NULL::VARCHAR AS triage_status, NULL::VARCHAR AS triage_error, NULL::VARCHAR AS triage_basis
FROM range($rows) t(i);
"""
RUNS = """
CREATE TABLE runs AS
SELECT 'train/' || lpad(i::VARCHAR, 6, '0') AS row_id, 'failed' AS status, 'compile_error' AS error_type,
       'cuda' AS device, 'NVIDIA H100 80GB HBM3' AS gpu, 'boom' AS message
FROM range($rows) t(i) WHERE i % 100 = 1;
"""
RUNS_LATEST = """
CREATE VIEW runs_latest AS SELECT * FROM runs;
UPDATE programs SET measured_status = r.status, measured_error = r.error_type FROM runs_latest r
WHERE programs.id = r.row_id;
"""


def triage_lines(rows: int, triaged: int) -> list[str]:
    lines = []
    for i in range(min(rows, triaged)):
        status = ("passed", "failed", "failed", "not_triaged", "passed", "failed")[i % 6]
        lines.append(json.dumps({
            "id": f"train/{i:06d}", "row_id": f"train/{i:06d}", "program_sha256": None, "triage_status": status,
            "error_type": ("compile_error", "import_error", "shape_mismatch")[i % 3] if status == "failed" else None,
            "message": "CompilationError: unsupported tensor index" if status == "failed" else "",
            "exception": None, "kernel": "k", "module": None, "reason": None, "stage": "compile", "target": "sm_90",
            "versions": {"torch": "2.13.0", "triton": "3.5.0", "python": "3.11.7"},
            "phases_s": {"import": 0.1, "build": 0.05, "compile": 0.4, "compare": 0.01},
            "cache": {"hits": 1, "misses": 1}, "triaged_at": "2026-12-06T17:00:00Z", "flags": []}))
    return lines


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rows", type=int, default=601_000)
    parser.add_argument("--triaged", type=int, default=601_000)
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    settings = load_settings()
    con = duckdb.connect(":memory:", config={"threads": settings.duckdb_threads,
                                            "memory_limit": settings.duckdb_memory})
    con.execute(PROGRAMS, {"rows": args.rows})
    con.register("checks_arrow", checks_table())
    con.execute(sql_text("setup_checks"))
    for name in ("setup_filtered", "setup_causes"):
        con.execute(sql_text(name))
    con.execute(RUNS, {"rows": args.rows})
    con.execute(RUNS_LATEST)
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp) / "triage"
        folder.mkdir()
        (folder / "triage-bench.jsonl").write_text("\n".join(triage_lines(args.rows, args.triaged)) + "\n")
        reader = TriageReader(Path(tmp))
        started = time.process_time()
        table, _ = reader.read()
        read_s = time.process_time() - started
        with open(folder / "triage-bench.jsonl", "a") as fh:  # a running triage appends: only the new lines
            fh.write("\n".join(triage_lines(1000, 1000)) + "\n")
        started = time.process_time()
        appended, full = reader.read()
        append_s = time.process_time() - started
    con.register("triage_new", table)
    con.execute(sql_text("setup_triage_lines"))
    started = time.perf_counter()
    con.execute(sql_text("setup_triage"))
    setup_s = time.perf_counter() - started
    con.register("triage_new", appended)
    started = time.perf_counter()
    con.execute(sql_text("setup_triage"))  # a refresh while a triage runs: only the rows the new lines name
    refresh_s = time.perf_counter() - started
    params = Filters().params()
    sql = sql_text("failures")
    times = []
    for _ in range(args.repeat):
        started = time.perf_counter()
        answer = con.execute(sql, {k: v for k, v in params.items() if f"${k}" in sql}).fetchall()
        times.append(time.perf_counter() - started)
    print(f"rows {args.rows:,}, triage lines {table.num_rows:,}")
    print(f"read + flatten triage lines: {read_s:.2f} CPU-s")
    print(f"then {appended.num_rows:,} appended lines: {append_s:.3f} CPU-s (read again in full: {full})")
    print(f"setup_triage.sql:            {setup_s:.2f} s; again for the appended lines: {refresh_s:.2f} s")
    print(f"failures.sql (median of {args.repeat}): {statistics.median(times):.3f} s; "
          f"{len(answer)} causes, {sum(r[3] for r in answer):,} failed rows")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
