"""The runner on a real GPU: timing figures, system info, CUDA errors, side streams (marker `gpu`)."""

from __future__ import annotations

import pytest
import torch

from runner.options import EvalOptions, TimingOptions
from runner.result import ErrorType
from runner.sandbox import evaluate_in_sandbox
from tests.programs import runner_program

pytestmark = [
    pytest.mark.gpu,
    pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU"),
]
CORRECT = runner_program("correct_add")
STORE = "tl.store(out_ptr + offs, "
SIDE_STREAM = '''
import torch
import torch.nn as nn


def work(x):
    for _ in range(20):
        x = torch.tanh(x @ x)
    return x


class Model(nn.Module):
    def forward(self, x):
        return work(x)


class ModelNew(nn.Module):
    def forward(self, x):
        side = torch.cuda.Stream()
        side.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(side):
            out = work(x)
        return out  # returned without making the current stream wait: the harness must synchronize


def get_inputs():
    return [torch.randn(2048, 2048, device="cuda") / 64]


def get_init_inputs():
    return []
'''


def options(**kw) -> EvalOptions:
    timing = TimingOptions(min_trials=100, max_trials=400, time_budget_s=3.0)
    return EvalOptions(**{"device": "cuda", "timeout_s": 120.0, "timing": timing, **kw})


def test_correct_program_is_timed():
    r = evaluate_in_sandbox(CORRECT.replace("torch.randn(64)", "torch.randn(1 << 20)"), options(),
                            result_id="gpu-ok")
    assert r.status == "ok", (r.message, r.traceback)
    assert r.device == "cuda"
    t, ref = r.timing, r.ref_timing
    assert 0 < t.min_ms <= t.median_ms <= t.max_ms < 100
    assert t.n >= 100 or "timing_budget_spent" in r.flags
    assert ref.median_ms > 0 and r.speedup == pytest.approx(ref.median_ms / t.median_ms)
    assert r.method["timing"]["l2_flush"] is True and r.method["timing"]["min_trials"] == 100
    assert t.source == "cuda_events" and "side_stream_suspect" not in r.flags
    assert 0 < t.event_median_ms <= t.wall_median_ms and t.host_overhead_ms > 0
    assert r.system["gpu"] and r.system["torch"] and r.system["triton"] and r.system["hostname"]


def test_illegal_memory_access_is_cuda_error():
    bad = CORRECT.replace(STORE, "tl.store(out_ptr + offs * 1000000007 + (1 << 40), ").replace(", mask=mask)\n", ")\n", 1)
    r = evaluate_in_sandbox(bad, options(), result_id="gpu-illegal")
    assert r.error_type == ErrorType.CUDA_ERROR.value, (r.error_type, r.message)


def test_side_stream_work_is_waited_for():
    r = evaluate_in_sandbox(SIDE_STREAM, options(), result_id="gpu-side-stream")
    assert r.status == "ok", (r.message, r.traceback)
    # the events of the current stream miss the side work: the wall check must flag it and time it instead
    flagged = "side_stream_suspect" in r.flags and r.timing.source == "wall_minus_host_overhead"
    assert flagged or r.timing.median_ms >= 0.5 * r.ref_timing.median_ms, (r.flags, r.timing, r.ref_timing)
    assert 0.5 < r.speedup < 2.0, (r.timing, r.ref_timing)
