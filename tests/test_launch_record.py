"""`runner.child.launches.account` on CUDA, its GPU times faked: a short call whose Triton share reads low is
recorded again (a host gap only ever adds to the other time) and the least gapped call is kept."""

from __future__ import annotations

import pytest

from runner.child import launches


class Event:
    def __init__(self, ms: float) -> None:
        self.ms = ms

    def elapsed_time(self, other: Event) -> float:
        return other.ms - self.ms


def one_call(call_ms: float, kernel_ms: float) -> tuple[list, float]:
    return [("silu_kernel", Event(0.0), Event(kernel_ms))], call_ms


@pytest.fixture
def calls(monkeypatch):
    queue: list[tuple[list, float]] = []
    made: list[int] = []

    def timed(call, prefill_ms):
        made.append(1)
        return queue.pop(0)

    monkeypatch.setattr(launches, "_timed_launches", timed)
    return queue, made


def test_a_gapped_short_call_is_recorded_again_and_the_least_gapped_kept(calls):
    queue, made = calls
    queue += [one_call(1.0, 0.1), one_call(0.12, 0.1), one_call(0.5, 0.1)]
    record = launches.account(lambda: None, None, "cuda")
    assert len(made) == 3 and record["triton_ms"] == 0.1 and record["other_ms"] == 0.02
    assert record["triton_share"] == 0.8333 and record["triton_launches"] == 1


def test_a_clean_call_or_a_long_one_is_recorded_once(calls):
    queue, made = calls
    queue += [one_call(0.105, 0.1)]
    assert launches.account(lambda: None, None, "cuda")["triton_share"] == 0.9524 and len(made) == 1
    made.clear()
    queue += [one_call(20.0, 1.0)]  # mostly torch's own work: a real reading, not a gap
    assert launches.account(lambda: None, None, "cuda")["triton_share"] == 0.05 and len(made) == 1


class FakeGpu:
    """A stream on a fake clock: the host enqueues (taking host time), the GPU runs in order and idles when the
    queue is empty; `torch.cuda._sleep`'s first call first loads its kernel on the host."""

    def __init__(self, cycles_per_ms: float, load_ms: float, launch_ms: float) -> None:
        self.rate, self.load_ms, self.launch_ms = cycles_per_ms, load_ms, launch_ms
        self.host = self.gpu = 0.0  # host time now; when the GPU's queue runs dry
        self.loaded = False

    def sleep(self, cycles: int) -> None:
        if not self.loaded:
            self.host += self.load_ms
            self.loaded = True
        self.host += self.launch_ms
        self.gpu = max(self.gpu, self.host) + cycles / self.rate

    def event(self, enable_timing: bool = True):
        gpu = self

        class _Event:
            def record(self) -> None:
                gpu.host += gpu.launch_ms
                gpu.gpu = self.ms = max(gpu.gpu, gpu.host)

            def synchronize(self) -> None:
                gpu.host = max(gpu.host, gpu.gpu)

            def elapsed_time(self, other) -> float:
                return other.ms - self.ms

        return _Event()


def test_the_queue_filling_sleep_is_calibrated_without_its_first_load(monkeypatch):
    """A first `_sleep` that loads its kernel (2 ms of host time) or a slow launch must not count as GPU time: the
    rate read too low made every filled queue too short."""
    import torch

    gpu = FakeGpu(cycles_per_ms=1.98e6, load_ms=2.0, launch_ms=0.02)
    monkeypatch.setattr(torch.cuda, "Event", gpu.event)
    monkeypatch.setattr(torch.cuda, "_sleep", gpu.sleep)
    launches._sleep_cycles_per_ms.cache_clear()
    try:
        assert launches._sleep_cycles_per_ms() == pytest.approx(1.98e6, rel=1e-3)
    finally:
        launches._sleep_cycles_per_ms.cache_clear()


class FakeGraph:
    """Stands for torch.cuda.CUDAGraph on the CPU: capture and replay run nothing of their own."""

    def capture_begin(self, *args, **kwargs):
        return None

    def capture_end(self):
        return None

    def replay(self):
        return None


def test_a_cuda_graph_replay_counts_the_triton_kernels_it_captured(monkeypatch):
    """Issue 42: an honest candidate replaying its Triton launch from a CUDA graph failed in the launch record (an
    event recorded on a capturing stream) or read as launching nothing. Launches into a capture are not counted
    (nor timed); each replay counts the Triton kernels its capture saw."""
    import torch

    from runner.child.launches import counting_triton_launches, watch_graphs

    monkeypatch.setenv("TRITON_INTERPRET", "1")
    monkeypatch.setattr(torch.cuda, "CUDAGraph", type("Graph", (FakeGraph,), {}))
    from tests.interpreted_kernels import add  # an interpreted Triton kernel

    watch_graphs()
    graph = torch.cuda.CUDAGraph()
    a, b = torch.randn(64), torch.randn(64)
    with counting_triton_launches() as during_capture:
        graph.capture_begin()
        add(a, b)
        graph.capture_end()
    assert during_capture == []  # captured, not run
    with counting_triton_launches() as replays:
        graph.replay()
        graph.replay()
        torch.cuda.CUDAGraph().replay()  # a graph that captured no Triton kernel counts nothing
    assert [name for name, _, _ in replays] == ["add_kernel", "add_kernel"]
    with counting_triton_launches() as plain:
        add(a, b)
    assert [name for name, _, _ in plain] == ["add_kernel"]
