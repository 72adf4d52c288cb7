"""Run results: the verdict of one evaluation, as stored and exchanged (design §3, ARCHITECTURE "Run results")."""

from __future__ import annotations

import dataclasses
import datetime as dt
import re
from dataclasses import dataclass, field
from enum import IntEnum
from typing import TYPE_CHECKING, Any

from common.outcomes import ErrorType
from runner.options import refuse_unknown

if TYPE_CHECKING:
    from runner.spec import RunSpec


REF_TIMING_REUSED = "reference_timing_reused"  # Model's timing came from an earlier job (runner.gpu.reference_timings)


class ExitCode(IntEnum):
    """Exit status of the child process (`runner.child.main`)."""

    VERDICT = 0  # a verdict was written to the result channel, whatever it is
    USAGE = 2  # bad command line / spec
    NO_CHANNEL = 3  # the result channel could not be written
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
    repeated_median_ms: float | None = None  # single calls after the timed values were written back into the inputs
    fresh_median_ms: float | None = None  # the same, after fresh values were written into the inputs

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)

    @classmethod
    def from_dict(cls, d: dict[str, Any] | None) -> Timing | None:
        if d is None:
            return None
        names = {f.name for f in dataclasses.fields(cls)}
        return cls(**{k: v for k, v in d.items() if k in names})


@dataclass
class OutputDiff:
    """How one output (flattened from tuples/dicts, in order) differed from the reference over the correctness
    trials run: max abs and rel difference, and the tightest standard tolerance (`runner.profiles.LADDER`,
    atol = rtol) it passed on every trial (None: none, or NaN)."""

    index: int
    shape: list[int]
    dtype: str
    max_abs_diff: float | None
    max_rel_diff: float | None
    tolerance_passed: float | None

    def merged(self, other: OutputDiff) -> OutputDiff:
        """This output over two trials: the larger differences, the looser tolerance."""

        def worst(a: float | None, b: float | None) -> float | None:
            return None if a is None or b is None else max(a, b)

        return OutputDiff(self.index, self.shape, self.dtype, _max(self.max_abs_diff, other.max_abs_diff),
                          _max(self.max_rel_diff, other.max_rel_diff),
                          worst(self.tolerance_passed, other.tolerance_passed))


_TRIAL = re.compile(r" \(trial \d+\)")


def phase_name(stage: str) -> str:
    """The `phases_s` key of a job's stage text: without its trial number ("correctness: Model forward" sums the
    reference's forward calls of all trials)."""
    return _TRIAL.sub("", stage)


def _max(a: float | None, b: float | None) -> float | None:
    return b if a is None else a if b is None else max(a, b)


def _now() -> str:
    return dt.datetime.now(dt.UTC).isoformat(timespec="seconds")


@dataclass
class RunResult:
    """One verdict. `to_dict()` gives exactly the JSON keys of design §3 plus row_id, program_sha256,
    duration_s, finished_at, phases_s (where the time went), warm_up_s (the spare's), tolerance_passed, outputs (per output
    differences) and pair (the pair job that ran it beside another program, else None). Built with `passed`, `failed` and `crashed`; the child leaves id and times to the parent
    (`completed`). Converted to JSON only where it is stored or sent."""

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
    # the child's warm-up), start, load, init, correctness, timing, system (in the child), harness (the rest); a
    # stage's wait for the GPU gate beside it as "<stage> [waiting for the GPU]" (`runner.sandbox.run.gate_waits_apart`)
    tolerance_passed: float | None = None  # tightest standard tolerance every output passed on every trial
    outputs: list[OutputDiff] = field(default_factory=list)
    launches: dict[str, Any] | None = None  # what one untimed ModelNew call launched (runner.child.launches)
    cpu_s: dict[str, float] = field(default_factory=dict)  # CPU seconds of the judge and the candidate, warming
    # up (before the job) and for the job: judge_warm, judge_job, candidate_warm, candidate_job
    warm_up_s: dict[str, float] = field(default_factory=dict)  # wall seconds of the spare's warm-up steps, per
    # process (judge_, candidate_): imports, gpu_wait, cuda, triton, idle (`runner.child.warmup.durations`)
    pair: dict[str, Any] | None = None  # the pair job this run was one of (runner.service.pairs.member_link)

    @property
    def ok(self) -> bool:
        return self.status == "ok"

    def to_dict(self) -> dict[str, Any]:
        d = {f.name: getattr(self, f.name) for f in dataclasses.fields(self)}
        d["timing"] = self.timing.to_dict() if self.timing else None
        d["ref_timing"] = self.ref_timing.to_dict() if self.ref_timing else None
        d["flags"] = list(self.flags)
        d["outputs"] = [dataclasses.asdict(o) for o in self.outputs]
        return d

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> RunResult:
        refuse_unknown(cls, d, "run result has unknown keys")
        if "id" not in d or "status" not in d:
            raise ValueError("run result needs 'id' and 'status'")
        kw = dict(d)
        kw["timing"] = Timing.from_dict(d.get("timing"))
        kw["ref_timing"] = Timing.from_dict(d.get("ref_timing"))
        kw["flags"] = list(d.get("flags") or [])
        kw["method"] = dict(d.get("method") or {})
        kw["system"] = dict(d.get("system") or {})
        kw["phases_s"] = dict(d.get("phases_s") or {})
        kw["cpu_s"] = dict(d.get("cpu_s") or {})
        kw["warm_up_s"] = dict(d.get("warm_up_s") or {})
        kw["outputs"] = [OutputDiff(**o) for o in d.get("outputs") or []]
        return cls(**kw)

    @classmethod
    def passed(cls, message: str, **kw: Any) -> RunResult:
        return cls(id=kw.pop("id", ""), status="ok", error_type=None, message=message, **kw)

    @classmethod
    def failed(cls, error_type: ErrorType, message: str, **kw: Any) -> RunResult:
        return cls(id=kw.pop("id", ""), status="failed", error_type=ErrorType(error_type).value, message=message,
                   **kw)

    @classmethod
    def crashed(cls, message: str, spec: RunSpec, *, id: str, row_id: str | None = None, program_sha256: str = "",
                duration_s: float = 0.0, **kw: Any) -> RunResult:
        """The `crashed` result of a run of `spec` that never produced a verdict of its own (the worker, its Ray
        task or the service died; the evaluator raised): the one builder of such results for the service and
        bulk. It carries the spec's device and settings (`stamped`), so it counts under its profile."""
        return cls.failed(ErrorType.CRASHED, message, id=id, row_id=row_id, program_sha256=program_sha256,
                          device=spec.result_device, duration_s=round(duration_s, 3), finished_at=_now(),
                          **kw).stamped(spec)

    def completed(self, *, id: str, row_id: str | None, program_sha256: str, duration_s: float) -> RunResult:
        """Fill in what only the parent knows (in place; returns self)."""
        self.id, self.row_id, self.program_sha256 = id, row_id, program_sha256
        self.duration_s, self.finished_at = round(duration_s, 3), _now()
        return self

    def stamped(self, spec: RunSpec) -> RunResult:
        """Record the run settings' key and profile (`RunSpec.method_basics`) in `method`, keeping what the child
        recorded (in place; returns self)."""
        basics = spec.method_basics()
        self.method = {**basics, **self.method, "options_key": basics["options_key"]}
        return self
