"""One call inside the timing loop checked for its work (issue 42: candidates that noticed calls queued back to
back, or a timing function on the call stack, did part of their work only there; 3.7x on an H100).

The candidate makes a second set of inputs (fresh values, `LOOP_CHECK_SEED_OFFSET` after the job's seed) before
timing. `LoopCheck` stands for the timed call: every call runs `ModelNew` on the timed inputs, except one, picked
at random among the first batch of the timed calls (`runner.child.timing` arms it when its batches start: calls
queued back to back, between the loop's own L2 flushes), which runs on the fresh inputs, other tensors with other
values, exactly as the loop calls it; its outputs are cloned right after the call (a GPU copy queued behind it, so
a kept output buffer that later calls overwrite is cloned as it was). After timing, the judge asks for those
outputs (`loop_check`), makes Model's on the same values and compares: a mismatch fails the run with the flag
`timed_call_differs`. The one call's own sample carries the clone; the median does not move. Nothing is added to
the other calls but a counter.

Before that batch, one batch of calls queued exactly like the timed ones is audited (`timing._audit_batch`, its
samples discarded): every Triton launch bracketed by CUDA events, each call's Triton GPU time kept. The judge
compares their median with the Triton GPU time of the untimed checked call (`launches.triton_ms`): under
`TIMED_WORK_SHARE` of it (and that at least `MIN_CHECKED_MS`) flags `timed_work_below_checked`, whatever the
candidate keys its shortcut on (a smaller grid, a smaller `n`, fewer kernels). The checked call runs with the
L2 cache warm and the queue filled, so an honest audited call takes at least as long."""

from __future__ import annotations

import random
from collections.abc import Callable
from typing import Any

LOOP_CHECK_SEED_OFFSET = 3000
TIMED_WORK_SHARE = 0.75  # audited Triton GPU time per call / the checked call's, under which the work is short
MIN_CHECKED_MS = 0.01  # below this the events' resolution decides, not the work


def timed_work_short(audited_ms: float | None, checked_ms: float | None) -> bool:
    """Whether the calls of the timing loop ran less Triton GPU work than the checked call."""
    return (audited_ms is not None and checked_ms is not None and checked_ms >= MIN_CHECKED_MS
            and audited_ms < TIMED_WORK_SHARE * checked_ms)


def _cloned(out: Any) -> Any:
    import torch

    if isinstance(out, torch.Tensor):
        return out.detach().clone() if type(out) in (torch.Tensor, torch.nn.Parameter) else out
    if isinstance(out, (list, tuple)):
        return type(out)(_cloned(item) for item in out) if not hasattr(out, "_fields") else type(out)(
            *(_cloned(item) for item in out))
    if isinstance(out, dict):
        return {key: _cloned(value) for key, value in out.items()}
    return out


class LoopCheck:
    """The timed callable: `call(inputs)` on the timed inputs, once on the fresh ones when armed."""

    def __init__(self, call: Callable[[list[Any]], Any], inputs: list[Any], fresh: list[Any]) -> None:
        self.call, self.inputs, self.fresh = call, inputs, fresh
        self.calls = 0
        self.at: int | None = None  # the call number that runs on the fresh inputs
        self.output: Any = None
        self.checked = False
        self.audited_ms: list[float] | None = None  # Triton GPU ms of each audited call (`timing._audit_batch`)

    def audited_median_ms(self) -> float | None:
        import statistics

        return statistics.median(self.audited_ms) if self.audited_ms else None

    def arm(self, batch: int) -> None:
        """Pick the checked call among the next `batch` calls, not the first (it follows a synchronize)."""
        if self.at is None and not self.checked:
            self.at = self.calls + (random.randint(2, batch) if batch >= 2 else 1)

    def __call__(self) -> Any:
        self.calls += 1
        if self.calls != self.at:
            return self.call(self.inputs)
        out = self.call(self.fresh)
        self.output, self.checked, self.at = _cloned(out), True, None
        return out
