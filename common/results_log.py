"""The results log: every finished run result, one JSON object per line, in `RUNS_DIR/results/<writer>.jsonl`.

Each writer process appends to its own file (no cross-process locking needed; threads of one process share a
lock), one `write` + `fsync` per line, so a crash loses at most the line being written. The writer takes result
dicts (`RunResult.to_dict()`, made once by the caller, which also stores it elsewhere). Readers (the explorer's
queries, bulk resume, scripts) all go through `read_log` / `read_results`: every `*.jsonl` file of the given
roots, in file-name order, torn or non-object lines skipped. `flatten_result` turns one result into one flat row
of `RUN_COLUMNS` (the explorer's `runs` table, `queries.results`); `pair_job` links the two runs of one pair job
(null for a run that was a job of its own, and in logs from before pair jobs). Which result of a row is its latest verdict is
decided in one place, `queries/sql/setup_runs.sql` (newest `finished_at`, then file name, then line); bulk
selects rows through it.

Standard library only (the runner writes the log under a GPU machine's bare Python).
"""

from __future__ import annotations

import json
import math
import os
import socket
import threading
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

RESULTS, TRIAGE = "results", "triage"  # the folders of run results and of CPU triage results under a root


def results_dir(runs_dir: Path, folder: str = RESULTS) -> Path:
    return Path(runs_dir) / folder


def default_writer(kind: str) -> str:
    """A file name unique to this process: `<kind>-<host>-<pid>`."""
    host = "".join(c if c.isalnum() or c in "-_." else "_" for c in socket.gethostname()) or "host"
    return f"{kind}-{host}-{os.getpid()}"


class ResultsLog:
    """Appends result dicts to `RUNS_DIR/results/<writer>.jsonl` (`RUNS_DIR/triage/` for triage results)."""

    def __init__(self, runs_dir: Path, writer: str, folder: str = RESULTS):
        if not writer or "/" in writer or writer.startswith("."):
            raise ValueError(f"bad results writer name {writer!r}")
        self.path = results_dir(runs_dir, folder) / f"{writer}.jsonl"
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._lock = threading.Lock()

    def append(self, result: dict[str, Any]) -> None:
        line = (json.dumps(result, separators=(",", ":"), default=str) + "\n").encode("utf-8")
        with self._lock:
            fd = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
            try:
                os.write(fd, line)
                os.fsync(fd)
            finally:
                os.close(fd)


@dataclass(frozen=True)
class LoggedResult:
    """One result line: the file's name, its 1-based line number and the parsed result dict."""

    file: str
    line: int
    result: dict[str, Any]


def results_files(*roots: Path | None, folder: str = RESULTS) -> list[Path]:
    """The `*.jsonl` files under `ROOT/<folder>/` of each root (`results`, or `triage` for CPU triage; None and
    missing folders skipped), sorted per root."""
    files: list[Path] = []
    for root in roots:
        found = results_dir(Path(root), folder) if root is not None else None
        if found is not None and found.is_dir():
            files.extend(sorted(p for p in found.glob("*.jsonl") if p.is_file()))
    return files


def read_log(*roots: Path | None) -> Iterator[LoggedResult]:
    """Every result of the roots' logs with where it was read, skipping lines that are not JSON objects (a torn
    last line of a writer, or damage)."""
    return read_jsonl(results_files(*roots))


def read_jsonl(files: list[Path]) -> Iterator[LoggedResult]:
    """Every JSON object of these JSON-lines files with where it was read; lines that are not JSON objects (a torn
    last line of a writer, or damage) and unreadable files are skipped. The one reader of the project's logs
    (run results here, CPU triage results in `common.triage_log`)."""
    for path in files:
        try:
            text = path.read_text(encoding="utf-8", errors="replace")
        except OSError:
            continue
        yield from parse_lines(path.name, text.splitlines(), 1)


def parse_lines(file: str, lines: list[str], first_line: int) -> Iterator[LoggedResult]:
    """The JSON objects among `lines` of `file` (numbered from `first_line`); blank, torn or non-object lines
    skipped."""
    for number, raw in enumerate(lines, start=first_line):
        if not raw.strip():
            continue
        try:
            item = json.loads(raw)
        except ValueError:
            continue
        if isinstance(item, dict):
            yield LoggedResult(file, number, item)


def results_signature(*roots: Path | None) -> tuple:
    """Cheap fingerprint (path, size, mtime) of the result files, to notice new results."""
    return files_signature(results_files(*roots))


def files_signature(files: list[Path]) -> tuple:
    """Cheap fingerprint (path, size, mtime) of these files, to notice new lines."""
    signature = []
    for path in files:
        try:
            stat = path.stat()
        except OSError:
            continue
        signature.append((str(path), stat.st_size, stat.st_mtime_ns))
    return tuple(signature)


def read_results(*roots: Path | None) -> Iterator[dict[str, Any]]:
    """Every result dict in every log file under the roots (torn or non-object lines skipped)."""
    for logged in read_log(*roots):
        yield logged.result


# The flat form of a result: (column, type) in order; `queries.results` makes the Arrow schema from it.
RUN_COLUMNS: tuple[tuple[str, str], ...] = (
    ("row_id", "string"), ("result_id", "string"), ("status", "string"), ("error_type", "string"),
    ("message", "string"), ("exception", "string"), ("traceback", "string"),
    ("correct_trials", "int64"), ("trials", "int64"), ("max_abs_diff", "float64"), ("max_rel_diff", "float64"),
    ("median_ms", "float64"), ("mean_ms", "float64"), ("std_ms", "float64"), ("min_ms", "float64"),
    ("max_ms", "float64"), ("p10_ms", "float64"), ("p90_ms", "float64"), ("timing_n", "int64"), ("ref_median_ms", "float64"), ("speedup", "float64"),
    ("flags", "list<string>"), ("launches_checked", "bool"), ("triton_share", "float64"),
    ("triton_launches", "int64"), ("triton_ms", "float64"), ("other_launches", "int64"), ("other_ms", "float64"),
    ("top_kernels", "string"), ("method", "string"), ("profile", "string"), ("atol", "float64"),
    ("rtol", "float64"), ("tolerance_passed", "float64"), ("device", "string"), ("gpu", "string"),
    ("program_sha256", "string"), ("duration_s", "float64"), ("finished_at", "string"), ("pair_job", "string"),
    ("results_file", "string"), ("line", "int64"),
)
TRACEBACK_LINES = 30


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


def _trimmed(text: str | None) -> str | None:
    """A traceback's last `TRACEBACK_LINES` lines (where the error is), marked when lines were cut."""
    if text is None:
        return None
    lines = text.rstrip().splitlines()
    if len(lines) <= TRACEBACK_LINES:
        return "\n".join(lines)
    return f"… {len(lines) - TRACEBACK_LINES} earlier lines cut …\n" + "\n".join(lines[-TRACEBACK_LINES:])


def _mapping(value: object) -> dict:
    return value if isinstance(value, dict) else {}


def flatten_result(obj: dict, results_file: str, line: int) -> dict:
    """One result dict (design §3 keys + `row_id`) → one flat row of `RUN_COLUMNS`; values of the wrong type
    become null, so a damaged line cannot break the table."""
    timing, ref_timing = _mapping(obj.get("timing")), _mapping(obj.get("ref_timing"))
    system, method = _mapping(obj.get("system")), _mapping(obj.get("method"))
    launches = _mapping(obj.get("launches"))  # what ran (design §4); absent in older results: not checked
    pair = _mapping(obj.get("pair"))  # the pair job that ran it beside another program; absent: a job of its own
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
        "p10_ms": _number(timing.get("p10_ms")),
        "p90_ms": _number(timing.get("p90_ms")),
        "timing_n": _integer(timing.get("n")),
        "ref_median_ms": _number(ref_timing.get("median_ms")),
        "speedup": _number(obj.get("speedup")),
        "flags": [str(flag) for flag in flags] if isinstance(flags, list) else [],
        "launches_checked": checked if isinstance(checked, bool) else None,
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
        "pair_job": _text(pair.get("job_id")),
        "results_file": results_file,
        "line": line,
    }


def flat_results(*roots: Path | None) -> list[dict]:
    """Every result under the roots' `results/` folders, flattened (`flatten_result`), in log order."""
    return [flatten_result(logged.result, logged.file, logged.line) for logged in read_log(*roots)]
