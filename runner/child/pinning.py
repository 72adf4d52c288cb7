"""The child's side of `runner.gpu.cpu_plan`: keep the job's processes off the timing cores, and move the thread
that times onto its GPU's core while it times. Standard library only; a core the host refuses is skipped
(nothing pinned), never an error: pinning steadies the timing, it decides nothing."""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator

_timing_cpu: int | None = None  # this job's timing core (`set_plan`), also sent to the candidate


def parse_cpus(text: str) -> set[int]:
    return {int(c) for c in text.split(",") if c.strip()}


def set_plan(job_cpus: set[int] | None, timing_cpu: int | None) -> None:
    """At the child's start, before torch makes its threads: every thread and process it starts inherits this."""
    global _timing_cpu
    if job_cpus:
        try:
            os.sched_setaffinity(0, job_cpus)
        except OSError:
            return
    _timing_cpu = timing_cpu


def timing_cpu() -> int | None:
    return _timing_cpu


@contextlib.contextmanager
def pinned(cpu: int | None) -> Iterator[bool]:
    """The calling thread on `cpu` alone inside the block (Linux: affinity is per thread); yields whether it is."""
    before = None
    if cpu is not None:
        try:
            before = os.sched_getaffinity(0)
            os.sched_setaffinity(0, {cpu})
        except OSError:
            before = None
    try:
        yield before is not None
    finally:
        if before is not None:
            with contextlib.suppress(OSError):
                os.sched_setaffinity(0, before)
