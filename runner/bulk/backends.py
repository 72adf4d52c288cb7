"""Where bulk tasks run: `LocalBackend` (one thread per visible GPU, or CPU interpreter workers) or `RayBackend`
(`ray.remote` tasks, one GPU each, or one CPU each in interpreter mode). Both run the same sandboxed evaluation
as a single re-run and hand each result to the driver's `on_result` callback.

A task whose evaluation raises, or whose Ray worker dies, is reported as a `crashed` result and the run goes on.
Ctrl-C (KeyboardInterrupt in the driver) kills the sandboxes in flight; their results are lost, nothing else is.
Locally the slots of one GPU (`--jobs-per-gpu`) share it through its gate (`runner.gpu.gate`); a Ray task has its
GPU to itself.
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Any

from common.hardware import CPU_LABEL
from runner.gpu.oom_rerun import evaluate_on_slot
from runner.gpu.slots import Slot, detect_gpus
from runner.result import RunResult
from runner.spec import RunSpec

REPO_ROOT = Path(__file__).resolve().parents[2]  # runner/bulk/backends.py


def bulk_evaluate(program: str, spec: RunSpec, slot: Slot, *, reuse_reference_timing: bool = True,
                  **kw: Any) -> RunResult:
    """`evaluate_on_slot` as a bulk run uses it: Model timed once per reference text and GPU unless
    `TLX_RUNNER_REUSE_REFERENCE_TIMING=0` (`runner.gpu.reference_timings`)."""
    return evaluate_on_slot(program, spec, slot, reuse_reference_timing=reuse_reference_timing, **kw)


@dataclass(frozen=True)
class Task:
    row_id: str
    program: str
    program_sha256: str
    repeat: int


OnResult = Callable[[Task, RunResult], None]


class LocalBackend:
    """A pool of threads over this machine's slots; each thread runs one sandbox at a time."""

    name = "local"

    def __init__(self, slots: list[Slot], evaluate: Callable[..., RunResult] | None = None,
                 reuse_reference_timing: bool = True):
        self.slots = slots
        self.evaluate = evaluate or partial(bulk_evaluate, reuse_reference_timing=reuse_reference_timing)
        self.device = slots[0].device
        self.capacity = len(slots)

    def close(self) -> None:
        pass

    def hardware(self) -> str:
        names = {s.gpu_name for s in self.slots if s.device == "cuda"}
        return sorted(names)[0] if names else CPU_LABEL

    def run(self, tasks: Iterator[Task], spec: RunSpec, on_result: OnResult) -> None:
        lock = threading.Lock()
        stop = threading.Event()
        cancels: list[threading.Event] = []
        alive = {s.name for s in self.slots}
        finished = threading.Event()  # waited on instead of Thread.join, which a Ctrl-C can corrupt (bpo-45274)

        def next_task() -> Task | None:
            with lock:
                return None if stop.is_set() else next(tasks, None)

        def worker(slot: Slot) -> None:
            try:
                work(slot)
            finally:
                with lock:
                    alive.remove(slot.name)
                    if not alive:
                        finished.set()

        def work(slot: Slot) -> None:
            while (task := next_task()) is not None:
                cancel = threading.Event()
                with lock:
                    cancels.append(cancel)
                started = time.monotonic()
                try:
                    result = self.evaluate(task.program, spec, slot, result_id=task.row_id, row_id=task.row_id,
                                           cancel=cancel)
                except Exception as e:
                    result = RunResult.crashed(f"bulk worker error: {type(e).__name__}: {e}", spec, id=task.row_id,
                                               row_id=task.row_id, program_sha256=task.program_sha256,
                                               duration_s=time.monotonic() - started)
                with lock:
                    cancels.remove(cancel)
                    if stop.is_set():
                        return
                    on_result(task, result)

        threads = [threading.Thread(target=worker, args=(s,), name=f"bulk-{s.name}", daemon=True) for s in self.slots]
        for t in threads:
            t.start()
        try:
            while not finished.wait(0.5):
                pass
        except KeyboardInterrupt:
            with lock:
                stop.set()
                for cancel in cancels:
                    cancel.set()
            finished.wait(10.0)  # the sandboxes see their cancel events and die; wait so none outlives us
            raise


def _ray_evaluate(program: str, spec: RunSpec, result_id: str, row_id: str, triton_cache_dir: str | None,
                  placement: dict[str, Any], reuse_reference_timing: bool) -> RunResult:
    visible = os.environ.get("CUDA_VISIBLE_DEVICES", "") if spec.device == "cuda" else ""
    slot = Slot("ray", spec.device, visible, triton_cache_dir=triton_cache_dir, placement=placement)
    return bulk_evaluate(program, spec, slot, reuse_reference_timing=reuse_reference_timing, result_id=result_id,
                         row_id=row_id)


def _ray_gpu_name() -> str:
    names = detect_gpus()
    return names[0] if names else "cuda"


class RayBackend:
    """`ray.remote` tasks on a Ray cluster (`address`) or a local instance; the `runner` and `common` packages are
    shipped to the workers through `runtime_env.py_modules` (they need torch and triton installed).
    `triton_cache_dir` is the shared Triton cache's path on every node (a node that cannot create it uses a fresh cache per run).
    `placement` and `reuse_reference_timing` are the driver's settings, sent with every task."""

    name = "ray"

    def __init__(self, device: str, address: str | None, num_cpus: int | None = None,
                 triton_cache_dir: str | None = None, placement: dict[str, Any] | None = None,
                 reuse_reference_timing: bool = True):
        try:
            import ray
        except ImportError:
            raise RuntimeError("--backend ray needs Ray: pip install 'ray>=2.30' (or use --backend local)") from None
        self.ray = ray
        self.device = device
        self.triton_cache_dir = triton_cache_dir
        self.placement = placement or {}
        self.reuse_reference_timing = reuse_reference_timing
        runtime_env = {"py_modules": [str(REPO_ROOT / "common"), str(REPO_ROOT / "runner")]}  # what workers import
        if address:
            ray.init(address=address, runtime_env=runtime_env, logging_level="WARNING", log_to_driver=False)
        else:
            ray.init(num_cpus=num_cpus, include_dashboard=False, runtime_env=runtime_env,
                     logging_level="WARNING", log_to_driver=False)
        resources = ray.cluster_resources()
        per_task = {"num_gpus": 1} if device == "cuda" else {"num_cpus": 1}
        if device == "cuda" and resources.get("GPU", 0) < 1:
            ray.shutdown()
            raise RuntimeError("--device cuda: the Ray cluster has no GPU (use --device cpu for interpreter runs)")
        self.capacity = max(1, int(resources.get("GPU" if device == "cuda" else "CPU", 1)))
        self._remote = ray.remote(max_retries=0, **per_task)(_ray_evaluate)
        self._gpu_name = ray.remote(num_gpus=1, max_retries=0)(_ray_gpu_name) if device == "cuda" else None

    def hardware(self) -> str:
        if self._gpu_name is None:
            return CPU_LABEL
        return self.ray.get(self._gpu_name.remote())

    def run(self, tasks: Iterator[Task], spec: RunSpec, on_result: OnResult) -> None:
        ray = self.ray
        in_flight: dict[Any, tuple[Task, float]] = {}
        exhausted = False
        try:
            while True:
                while not exhausted and len(in_flight) < 2 * self.capacity:
                    task = next(tasks, None)
                    if task is None:
                        exhausted = True
                        break
                    ref = self._remote.remote(task.program, spec, task.row_id, task.row_id, self.triton_cache_dir,
                                              self.placement, self.reuse_reference_timing)
                    in_flight[ref] = (task, time.monotonic())
                if not in_flight:
                    return
                ready, _ = ray.wait(list(in_flight), num_returns=1, timeout=1.0)
                for ref in ready:
                    task, started = in_flight.pop(ref)
                    try:
                        result = ray.get(ref)
                    except Exception as e:  # worker died (WorkerCrashedError), task error, ...
                        result = RunResult.crashed(f"ray task failed: {type(e).__name__}: {e}"[:2000], spec,
                                                   id=task.row_id, row_id=task.row_id,
                                                   program_sha256=task.program_sha256,
                                                   duration_s=time.monotonic() - started)
                    on_result(task, result)
        except KeyboardInterrupt:
            for ref in in_flight:
                ray.cancel(ref, force=True)
            raise

    def close(self) -> None:
        self.ray.shutdown()
