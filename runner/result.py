"""Run results: the verdict of one evaluation, as stored and exchanged (design §3, ARCHITECTURE "Run results")."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from enum import IntEnum, StrEnum
from typing import Any


class ErrorType(StrEnum):
    """Measured error types (design §3); `ok` is the type of a passing run (stored as error_type null)."""

    OK = "ok"
    SYNTAX_ERROR = "syntax_error"
    IMPORT_ERROR = "import_error"
    MISSING_SYMBOL = "missing_symbol"
    INIT_ERROR = "init_error"
    COMPILE_ERROR = "compile_error"
    RUNTIME_ERROR = "runtime_error"
    CUDA_ERROR = "cuda_error"
    SHAPE_MISMATCH = "shape_mismatch"
    OUTPUT_MISMATCH = "output_mismatch"
    NAN_OUTPUT = "nan_output"
    TIMEOUT = "timeout"
    OUT_OF_MEMORY = "out_of_memory"
    CRASHED = "crashed"


class ExitCode(IntEnum):
    """Exit status of the child process (`runner.child`)."""

    VERDICT = 0  # a verdict was written to the result channel, whatever it is
    USAGE = 2  # bad command line / spec
    NO_CHANNEL = 3  # the result channel could not be written
    INTERNAL = 4  # the harness itself failed before reaching a verdict
    ORPHANED = 5  # the parent that started the child was gone before the child could watch it


@dataclass
class Timing:
    """Summary of one timed loop, in milliseconds."""

    median_ms: float
    mean_ms: float
    std_ms: float
    min_ms: float
    max_ms: float
    n: int
    cv: float | None = None  # std / mean
    p10_ms: float | None = None
    p90_ms: float | None = None
    rel_err: float | None = None  # relative standard error of the median at stop
    loop_s: float | None = None  # wall seconds spent in the timing loop (warm-up included)
    source: str | None = None  # cuda_events | wall_minus_host_overhead (side-stream work) | triton_do_bench
    event_median_ms: float | None = None  # median CUDA-event time (current stream only)
    wall_median_ms: float | None = None  # median host wall time, call to after the device synchronize
    host_overhead_ms: float | None = None  # wall median of an empty call timed the same way
    host_call_ms: float | None = None  # median host time for the call to return (its launch cost), batched trials

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)

    @classmethod
    def from_dict(cls, d: dict[str, Any] | None) -> Timing | None:
        if d is None:
            return None
        names = {f.name for f in dataclasses.fields(cls)}
        return cls(**{k: v for k, v in d.items() if k in names})


@dataclass
class RunResult:
    """One verdict. `to_dict()` gives exactly the JSON keys of design §3 plus row_id, program_sha256,
    duration_s, finished_at and phases_s (where the time went)."""

    id: str
    status: str  # "ok" | "failed"
    error_type: str | None = None  # None when ok, else an ErrorType value
    message: str = ""
    exception: str | None = None
    traceback: str | None = None
    correct_trials: int = 0
    trials: int = 0
    max_abs_diff: float | None = None
    max_rel_diff: float | None = None
    timing: Timing | None = None
    ref_timing: Timing | None = None
    speedup: float | None = None
    flags: list[str] = field(default_factory=list)
    method: dict[str, Any] = field(default_factory=dict)
    device: str = ""
    system: dict[str, Any] = field(default_factory=dict)
    row_id: str | None = None
    program_sha256: str = ""
    duration_s: float | None = None
    finished_at: str | None = None
    phases_s: dict[str, float] = field(default_factory=dict)  # wall seconds per stage: child_ready (waiting for
    # the child's warm-up), start, load, init, correctness, timing, system (in the child), harness (the rest)

    @property
    def ok(self) -> bool:
        return self.status == "ok"

    def to_dict(self) -> dict[str, Any]:
        d = {f.name: getattr(self, f.name) for f in dataclasses.fields(self)}
        d["timing"] = self.timing.to_dict() if self.timing else None
        d["ref_timing"] = self.ref_timing.to_dict() if self.ref_timing else None
        d["flags"] = list(self.flags)
        return d

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> RunResult:
        names = {f.name for f in dataclasses.fields(cls)}
        unknown = set(d) - names
        if unknown:
            raise ValueError(f"run result has unknown keys: {sorted(unknown)}")
        if "id" not in d or "status" not in d:
            raise ValueError("run result needs 'id' and 'status'")
        kw = dict(d)
        kw["timing"] = Timing.from_dict(d.get("timing"))
        kw["ref_timing"] = Timing.from_dict(d.get("ref_timing"))
        kw["flags"] = list(d.get("flags") or [])
        kw["method"] = dict(d.get("method") or {})
        kw["system"] = dict(d.get("system") or {})
        kw["phases_s"] = dict(d.get("phases_s") or {})
        return cls(**kw)

    @classmethod
    def failure(cls, result_id: str, error_type: ErrorType, message: str, **kw: Any) -> RunResult:
        return cls(id=result_id, status="failed", error_type=error_type.value, message=message, **kw)
