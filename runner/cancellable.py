"""`evaluate_on_slot`: one sandboxed evaluation of a program under a `RunSpec` on a worker's slot, as a
`RunResult`.

Used by the service's workers and by bulk runs. Setting the `cancel` event kills the sandbox's process group
(`evaluate_in_sandbox`'s cancel hook); the evaluation then ends with a `crashed` result flagged `cancelled`,
which the caller discards. A CUDA slot's jobs go through its GPU's gate (`runner.gate`): the slots sharing a GPU
overlap their CPU-bound stages and time one at a time."""

from __future__ import annotations

import threading
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from runner.result import RunResult
    from runner.run_keys import RunSpec
    from runner.workers import Slot


def evaluate_on_slot(program: str, spec: RunSpec, slot: Slot, *, result_id: str, row_id: str | None,
                     cancel: threading.Event | None = None) -> RunResult:
    from runner.gate import gate_for
    from runner.sandbox import evaluate_in_sandbox

    cuda = spec.device == "cuda" and slot.device == "cuda"
    options = spec.eval_options(visible_devices=slot.visible_devices if cuda else "",
                                triton_cache_dir=slot.triton_cache_dir, spares=max(2, slot.lanes))
    gate = gate_for(slot.visible_devices or "") if cuda else None
    return evaluate_in_sandbox(program, options, result_id=result_id, row_id=row_id, cancel=cancel, gate=gate)
