"""Run results (`ROOT/results/*.jsonl`, read by `common.results_log.LogReader`) as one flat Arrow table.

The roots are the runner's `RUNS_DIR` and the store itself (runs published with a store, e.g. the sample's).
Lines that are not JSON objects are skipped and counted; a missing folder gives an empty table with the same
columns.
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import pyarrow as pa

from common.results_log import LogReader, results_files

RUNS_SCHEMA = pa.schema(
    [
        ("row_id", pa.string()),
        ("result_id", pa.string()),
        ("status", pa.string()),
        ("error_type", pa.string()),
        ("message", pa.string()),
        ("exception", pa.string()),
        ("traceback", pa.string()),
        ("correct_trials", pa.int64()),
        ("trials", pa.int64()),
        ("max_abs_diff", pa.float64()),
        ("max_rel_diff", pa.float64()),
        ("median_ms", pa.float64()),
        ("mean_ms", pa.float64()),
        ("std_ms", pa.float64()),
        ("min_ms", pa.float64()),
        ("max_ms", pa.float64()),
        ("timing_n", pa.int64()),
        ("ref_median_ms", pa.float64()),
        ("speedup", pa.float64()),
        ("flags", pa.list_(pa.string())),
        ("launches_checked", pa.bool_()),
        ("triton_share", pa.float64()),
        ("triton_launches", pa.int64()),
        ("triton_ms", pa.float64()),
        ("other_launches", pa.int64()),
        ("other_ms", pa.float64()),
        ("top_kernels", pa.string()),
        ("method", pa.string()),
        ("profile", pa.string()),
        ("atol", pa.float64()),
        ("rtol", pa.float64()),
        ("tolerance_passed", pa.float64()),
        ("device", pa.string()),
        ("gpu", pa.string()),
        ("program_sha256", pa.string()),
        ("duration_s", pa.float64()),
        ("finished_at", pa.string()),
        ("results_file", pa.string()),
        ("line", pa.int64()),
    ]
)


def results_signature(*roots: Path | None) -> tuple:
    """Cheap fingerprint (path, size, mtime) of the result files, to notice new results."""
    signature = []
    for path in results_files(*roots):
        try:
            stat = path.stat()
        except OSError:
            continue
        signature.append((str(path), stat.st_size, stat.st_mtime_ns))
    return tuple(signature)


def _number(value: object) -> float | None:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    value = float(value)
    return value if math.isfinite(value) else None


def _integer(value: object) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _text(value: object) -> str | None:
    if value is None:
        return None
    return value if isinstance(value, str) else json.dumps(value, sort_keys=True, default=str)


TRACEBACK_LINES = 30


def _trimmed(text: str | None) -> str | None:
    """A traceback's last `TRACEBACK_LINES` lines (where the error is), marked when lines were cut."""
    if text is None:
        return None
    lines = text.rstrip().splitlines()
    if len(lines) <= TRACEBACK_LINES:
        return "\n".join(lines)
    return f"… {len(lines) - TRACEBACK_LINES} earlier lines cut …\n" + "\n".join(lines[-TRACEBACK_LINES:])


def _timing(value: object) -> dict:
    return value if isinstance(value, dict) else {}


def flatten_result(obj: dict, results_file: str, line: int) -> dict:
    """One RunResult dict (design §3 keys + `row_id`) → one flat row of `RUNS_SCHEMA`."""
    timing = _timing(obj.get("timing"))
    ref_timing = _timing(obj.get("ref_timing"))
    system = obj.get("system") if isinstance(obj.get("system"), dict) else {}
    method = obj.get("method") if isinstance(obj.get("method"), dict) else {}
    launches = obj.get("launches") if isinstance(obj.get("launches"), dict) else {}
    checked = launches.get("checked")
    flags = obj.get("flags")
    if isinstance(flags, dict):
        flags = [name for name, on in flags.items() if on]
    return {
        "row_id": _text(obj.get("row_id")),
        "result_id": _text(obj.get("id")),
        "status": _text(obj.get("status")),
        "error_type": _text(obj.get("error_type")),
        "message": _text(obj.get("message")),
        "exception": _text(obj.get("exception")),
        "traceback": _trimmed(_text(obj.get("traceback"))),
        "correct_trials": _integer(obj.get("correct_trials")),
        "trials": _integer(obj.get("trials")),
        "max_abs_diff": _number(obj.get("max_abs_diff")),
        "max_rel_diff": _number(obj.get("max_rel_diff")),
        "median_ms": _number(timing.get("median_ms")),
        "mean_ms": _number(timing.get("mean_ms")),
        "std_ms": _number(timing.get("std_ms")),
        "min_ms": _number(timing.get("min_ms")),
        "max_ms": _number(timing.get("max_ms")),
        "timing_n": _integer(timing.get("n")),
        "ref_median_ms": _number(ref_timing.get("median_ms")),
        "speedup": _number(obj.get("speedup")),
        "flags": [str(flag) for flag in flags] if isinstance(flags, list) else [],
        "launches_checked": checked if isinstance(checked, bool) else None,  # null: an older result, not checked
        "triton_share": _number(launches.get("triton_share")) if checked is True else None,
        "triton_launches": _integer(launches.get("triton_launches")),
        "triton_ms": _number(launches.get("triton_ms")),
        "other_launches": _integer(launches.get("other_launches")),
        "other_ms": _number(launches.get("other_ms")),
        "top_kernels": _text(launches.get("top_kernels")),
        "method": _text(obj.get("method")),
        "profile": _text(method.get("profile")),
        "atol": _number(method.get("atol")),
        "rtol": _number(method.get("rtol")),
        "tolerance_passed": _number(obj.get("tolerance_passed")),
        "device": _text(obj.get("device")),
        "gpu": _text(system.get("gpu") or system.get("gpu_name")),
        "program_sha256": _text(obj.get("program_sha256")),
        "duration_s": _number(obj.get("duration_s")),
        "finished_at": _text(obj.get("finished_at")),
        "results_file": results_file,
        "line": line,
    }


def load_run_results(*roots: Path | None) -> tuple[pa.Table, int]:
    """All results under `ROOT/results/` → (table of `RUNS_SCHEMA`, number of lines skipped as unreadable)."""
    reader = LogReader(*roots)
    rows = [flatten_result(logged.result, logged.file, logged.line) for logged in reader]
    return pa.Table.from_pylist(rows, schema=RUNS_SCHEMA), reader.skipped
