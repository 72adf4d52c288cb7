"""The timing loop's checked call (`runner.child.loop_check`, issue 42): exactly one call, among the batch it is
armed for and never its first, runs on the fresh inputs, and its outputs are kept as they were right after it."""

from __future__ import annotations

import torch

from runner.child.loop_check import LoopCheck, timed_work_short


def test_one_call_of_the_armed_batch_runs_on_the_fresh_inputs():
    timed, fresh = [torch.zeros(4)], [torch.ones(4)]
    seen = []
    check = LoopCheck(lambda args: seen.append(args[0]) or args[0] * 2, timed, fresh)
    for _ in range(3):  # warm-up and the side-stream check: not armed yet
        check()
    check.arm(10)
    for _ in range(25):
        check()
    fresh_calls = [i for i, x in enumerate(seen) if x is fresh[0]]
    assert len(fresh_calls) == 1 and 3 + 1 <= fresh_calls[0] <= 3 + 9  # not the batch's first call
    assert check.checked and torch.equal(check.output, torch.full((4,), 2.0))
    check.arm(10)  # armed once only
    for _ in range(20):
        check()
    assert sum(x is fresh[0] for x in seen) == 1


def test_a_kept_output_buffer_is_cloned_as_the_checked_call_left_it():
    buffer = torch.zeros(4)

    def call(args):  # an honest candidate that writes every output into one buffer it keeps
        return buffer.copy_(args[0] + 1)

    check = LoopCheck(call, [torch.zeros(4)], [torch.ones(4)])
    check.arm(2)
    for _ in range(4):
        check()
    assert torch.equal(check.output, torch.full((4,), 2.0)) and torch.equal(buffer, torch.ones(4))


def test_a_batch_of_one_checks_its_only_call():
    check = LoopCheck(lambda args: args[0], [torch.zeros(1)], [torch.ones(1)])
    check.arm(1)
    check()
    assert check.checked and torch.equal(check.output, torch.ones(1))


def test_timed_work_short_of_the_checked_call():
    assert timed_work_short(0.55, 1.0)  # 55% of the work inside the loop
    assert not timed_work_short(1.1, 1.0)  # the loop's calls flush L2: an honest one takes as long or longer
    assert not timed_work_short(0.004, 0.008)  # too short for the events' resolution
    assert not timed_work_short(None, 1.0) and not timed_work_short(0.5, None)
    check = LoopCheck(lambda args: None, [], [])
    assert check.audited_median_ms() is None
    check.audited_ms = [0.5, 0.7, 0.6]
    assert check.audited_median_ms() == 0.6


def test_the_audit_batch_splits_triton_time_per_call(monkeypatch):
    """`timing._audit_batch` on the CPU, CUDA's events and synchronize faked: each call's Triton launches summed."""
    import itertools

    from runner.child import launches, timing

    monkeypatch.setenv("TRITON_INTERPRET", "1")
    from tests.interpreted_kernels import add

    clock = itertools.count()

    class Event:
        def __init__(self):
            self.t = next(clock)

    monkeypatch.setattr(launches, "_recorded_event", Event)
    monkeypatch.setattr(timing, "_sync", lambda: None)
    monkeypatch.setattr(timing, "_elapsed", lambda start, end: float(end.t - start.t))
    a = torch.randn(8)
    calls = iter([1, 2, 0])  # Triton launches per call: the third call launches nothing

    def call():
        for _ in range(next(calls)):
            add(a, a)

    assert timing._audit_batch(call, None, 3) == [1.0, 2.0, 0.0]
    assert timing._audit_batch(lambda: 1 / 0, None, 2) is None  # a failing record never fails the job
