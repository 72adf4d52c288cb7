"""CPU triage results (`python -m runner triage`, design §3): reading them, one JSON object per line.

The runner writes `RUNS_DIR/triage/<writer>.jsonl` (the writer convention of `common.results_log`); results
published beside the source Parquet files as `triage-*.jsonl` are copied into `STORE/triage/` at ingest
(`queries/ingest/pipeline.py`). Both roots are read alike: every `*.jsonl` file under `ROOT/triage/`, in file-name
order, torn or non-object lines skipped (`common.results_log.read_jsonl`, the one reader of the project's logs).
`flatten_triage` turns one result into one flat row of `TRIAGE_COLUMNS` (the explorer's `triage` table,
`queries.triage`); which triage of a row is its latest is decided in `queries/sql/setup_triage.sql` (newest
`triaged_at`, then file name, then line).

A triage result is never a measurement: it says what a CPU saw when it imported the program, built the models
on meta tensors and compiled every Triton launch for `target` without running it. Standard library only.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from common.outcomes import ErrorType, TriageStatus
from common.results_log import (
    TRIAGE,
    LoggedResult,
    files_signature,
    parse_lines,
    read_jsonl,
    results_dir,
    results_files,
)

MESSAGE_CHARS = 2000  # a message longer than this (a producer that did not bound it) is cut, and says so
STAGES = ("import", "build", "compile", "compare")


def triage_dir(root: Path) -> Path:
    """`ROOT/triage`: the runner's writes under `RUNS_DIR`, the published ones under a store."""
    return results_dir(Path(root), TRIAGE)


def triage_files(*roots: Path | None) -> list[Path]:
    """The `*.jsonl` files under `ROOT/triage/` of each root (None and missing folders skipped), sorted per root."""
    return results_files(*roots, folder=TRIAGE)


def read_triage(*roots: Path | None) -> Iterator[LoggedResult]:
    """Every triage result of the roots with where it was read (torn or non-object lines skipped)."""
    return read_jsonl(triage_files(*roots))


@dataclass(frozen=True)
class TriageTail:
    """What `read_triage_tail` read: the results, and where the next read of the file starts."""

    results: list[LoggedResult]
    offset: int
    next_line: int


def read_triage_tail(path: Path, offset: int = 0, first_line: int = 1) -> TriageTail:
    """The triage results of `path` from byte `offset` on (lines numbered from `first_line`), so that a reader
    that keeps up with a growing file parses each line once: every line that ends with a newline, and an
    unterminated last line that parses (a file written by hand); a torn last line (a writer mid-write) is left
    for the next read. Same lines, numbers and skipping as `read_triage` of the whole file."""
    path = Path(path)
    try:
        with open(path, "rb") as fh:
            fh.seek(offset)
            data = fh.read()
    except OSError:
        return TriageTail([], offset, first_line)
    end = data.rfind(b"\n") + 1
    lines = data[:end].decode("utf-8", errors="replace").splitlines()
    results = list(parse_lines(path.name, lines, first_line))
    offset, first_line = offset + end, first_line + len(lines)
    rest = data[end:]
    if rest.strip():
        last = list(parse_lines(path.name, [rest.decode("utf-8", errors="replace")], first_line))
        if last:
            results += last
            offset, first_line = offset + len(rest), first_line + 1
    return TriageTail(results, offset, first_line)


def triage_signature(*roots: Path | None) -> tuple:
    """Cheap fingerprint (path, size, mtime) of the triage files, to notice new results."""
    return files_signature(triage_files(*roots))


# The flat form of a triage result: (column, type) in order; `queries.triage` makes the Arrow schema from it.
TRIAGE_COLUMNS: tuple[tuple[str, str], ...] = (
    ("row_id", "string"), ("triage_id", "string"), ("program_sha256", "string"), ("triage_status", "string"),
    ("error_type", "string"), ("message", "string"), ("exception", "string"), ("kernel", "string"),
    ("module", "string"), ("reason", "string"), ("stage", "string"), ("target", "string"), ("torch", "string"),
    ("triton", "string"), ("python", "string"), ("import_s", "float64"), ("build_s", "float64"),
    ("compile_s", "float64"), ("compare_s", "float64"), ("cache_hits", "int64"), ("cache_misses", "int64"),
    ("triaged_at", "string"), ("flags", "list<string>"), ("triage_file", "string"), ("line", "int64"),
)
_STATUSES = frozenset(s.value for s in TriageStatus)
# What the row filters accept (the explorer's `Filters`, `runner bulk`): a latest triage's status, or `untriaged`
# (no triage result for the row); the error types a failed triage can name.
UNTRIAGED = "untriaged"
TRIAGE_FILTER_STATUSES = (*(s.value for s in TriageStatus), UNTRIAGED)
TRIAGE_ERROR_TYPES = tuple(e.value for e in ErrorType if e is not ErrorType.OK)


def _text(value: object) -> str | None:
    return value if isinstance(value, str) else None


def _one_of(value: object, allowed: frozenset[str] | tuple[str, ...]) -> str | None:
    return value if isinstance(value, str) and value in allowed else None


def _seconds(value: object) -> float | None:
    if isinstance(value, bool) or not isinstance(value, int | float) or value != value or value < 0:
        return None
    return float(value)


def _count(value: object) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else None


def _bounded(text: str | None) -> str | None:
    if text is None or len(text) <= MESSAGE_CHARS:
        return text
    return text[:MESSAGE_CHARS] + f" … ({len(text) - MESSAGE_CHARS:,} more characters cut)"


def _mapping(value: object) -> dict:
    return value if isinstance(value, dict) else {}


def flatten_triage(obj: dict, triage_file: str, line: int) -> dict:
    """One triage result (the contract's keys) → one flat row of `TRIAGE_COLUMNS`. Values of the wrong type become
    null, so a damaged line cannot break the table; a status or error type outside `common.outcomes` becomes null
    too (a `failed` triage without a known type then shows as failed, cause unknown)."""
    versions, phases, cache = _mapping(obj.get("versions")), _mapping(obj.get("phases_s")), _mapping(obj.get("cache"))
    status = _one_of(obj.get("triage_status"), _STATUSES)
    flags = obj.get("flags")
    return {
        "row_id": _text(obj.get("row_id")),
        "triage_id": _text(obj.get("id")),
        "program_sha256": _text(obj.get("program_sha256")),
        "triage_status": status,
        "error_type": _one_of(obj.get("error_type"), TRIAGE_ERROR_TYPES) if status == TriageStatus.FAILED else None,
        "message": _bounded(_text(obj.get("message"))),
        "exception": _text(obj.get("exception")),
        "kernel": _text(obj.get("kernel")),
        "module": _text(obj.get("module")),
        "reason": _bounded(_text(obj.get("reason"))),
        "stage": _one_of(obj.get("stage"), STAGES),
        "target": _text(obj.get("target")),
        "torch": _text(versions.get("torch")),
        "triton": _text(versions.get("triton")),
        "python": _text(versions.get("python")),
        "import_s": _seconds(phases.get("import")),
        "build_s": _seconds(phases.get("build")),
        "compile_s": _seconds(phases.get("compile")),
        "compare_s": _seconds(phases.get("compare")),
        "cache_hits": _count(cache.get("hits")),
        "cache_misses": _count(cache.get("misses")),
        "triaged_at": _text(obj.get("triaged_at")),
        "flags": [str(flag) for flag in flags] if isinstance(flags, list) else [],
        "triage_file": triage_file,
        "line": line,
    }


def flat_triage(*roots: Path | None) -> list[dict]:
    """Every triage result under the roots' `triage/` folders, flattened (`flatten_triage`), in file order."""
    return [flatten_triage(logged.result, logged.file, logged.line) for logged in read_triage(*roots)]
