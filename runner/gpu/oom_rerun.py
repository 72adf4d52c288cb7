"""`evaluate_on_slot`: one sandboxed evaluation of a program under a `RunSpec` on a worker's slot, as a
`RunResult`.

Used by the service's workers and by bulk runs. Setting the `cancel` event kills the sandbox's process group
(`evaluate_in_sandbox`'s cancel hook); the evaluation then ends with a `crashed` result flagged `cancelled`,
which the caller discards. A CUDA slot's jobs go through its GPU's gate (`runner.gpu.gate`): the slots sharing a GPU
overlap their CPU-bound stages and time one at a time. Their memory is not shared out, so a job that ends
`out_of_memory` while other jobs ran on its GPU is run again with the GPU to itself (flagged `rerun_alone_oom`):
out of memory is a verdict only when the program alone does not fit (on an H200 a row correct at 37 ms ran out
of memory once beside three other jobs). With `reuse_reference_timing` (bulk runs), Model's timing measured by an
earlier job for the same reference text, settings and GPU is used instead of timing it again
(`runner.gpu.reference_timings`). A job that failed in a candidate whose own warm-up had failed (the harness's
kernel, before any job: `runner.protocol.WARM_UP_FAILED_FLAG`) is run once more in processes started for it (no
spare, no fork server), flagged `rerun_harness`: the program's verdict is not the harness's process's. A second
failure keeps both flags, for review."""

from __future__ import annotations

import threading
from dataclasses import replace
from typing import TYPE_CHECKING

from runner.protocol import WARM_UP_FAILED_FLAG

if TYPE_CHECKING:
    from runner.gpu.slots import Slot
    from runner.options import EvalOptions
    from runner.result import RunResult
    from runner.spec import RunSpec


RERUN_ALONE_FLAG = "rerun_alone_oom"
RERUN_HARNESS_FLAG = "rerun_harness"


def slot_options(spec: RunSpec, slot: Slot) -> EvalOptions:
    """The options of a job of `spec` on `slot`: where it runs (the slot's GPU, Triton cache, placement) and how
    many spares its configuration keeps (one per job sharing the GPU, at least 2)."""
    cuda = spec.device == "cuda" and slot.device == "cuda"
    return spec.eval_options(visible_devices=slot.visible_devices if cuda else "",
                             triton_cache_dir=slot.triton_cache_dir, spares=max(2, slot.lanes), **slot.placement)


def warm_gpu_slots(slots: list[Slot]) -> int:
    """Start the spares of each GPU slot's configuration now, before its first job (`runner serve` at start: the
    first re-run then finds processes with torch imported and the CUDA context made, and the fork server
    started). CPU slots are left to their first job. Slots sharing a GPU share one configuration. Returns how many
    configurations were warmed."""
    from runner.sandbox.spares import POOL
    from runner.spec import RunSpec

    configs = {POOL.key(o): o for o in (slot_options(RunSpec.build("cuda"), s) for s in slots if s.device == "cuda")}
    return sum(POOL.warm(options) for options in configs.values())


def evaluate_on_slot(program: str, spec: RunSpec, slot: Slot, *, result_id: str, row_id: str | None,
                     cancel: threading.Event | None = None, reuse_reference_timing: bool = False) -> RunResult:
    from common.outcomes import ErrorType
    from runner.gpu.gate import EXCLUSIVE, SHARED, gate_for, occupancy_for
    from runner.gpu.reference_timings import REFERENCE_TIMINGS, reference_key
    from runner.sandbox.run import evaluate_in_sandbox

    cuda = spec.device == "cuda" and slot.device == "cuda"
    options = slot_options(spec, slot)
    gpu = slot.visible_devices or ""
    gate = gate_for(gpu) if cuda else None
    jobs = occupancy_for(gpu) if gate is not None and slot.lanes > 1 else None
    ref_key = reference_key(program, spec.key(), gpu) if cuda and reuse_reference_timing else None

    def attempt(mode: str, fresh: bool = False) -> RunResult:
        # False when cancelled while waiting: the sandbox then ends at once
        held = jobs is not None and jobs.acquire(mode, abort=cancel)
        try:
            return evaluate_in_sandbox(program, replace(options, prewarm=False, forkserver=False) if fresh else options,
                                       result_id=result_id, row_id=row_id, cancel=cancel, gate=gate,
                                       reference_timing=REFERENCE_TIMINGS.lookup(ref_key))
        finally:
            if held:
                jobs.release(mode)

    def cancelled() -> bool:
        return cancel is not None and cancel.is_set()

    result = attempt(SHARED)
    if jobs is not None and result.error_type == ErrorType.OUT_OF_MEMORY and not cancelled():
        result = attempt(EXCLUSIVE)
        result.flags.append(RERUN_ALONE_FLAG)
    if result.status == "failed" and WARM_UP_FAILED_FLAG in result.flags and not cancelled():
        result = attempt(SHARED, fresh=True)
        result.flags.append(RERUN_HARNESS_FLAG)
    REFERENCE_TIMINGS.remember(ref_key, result)
    return result
