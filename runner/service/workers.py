"""Worker threads of the runner service: `jobs_per_gpu` per visible GPU (sharing it through `runner.pool.gate`), or
CPU (Triton interpreter) workers.

The service process never initialises CUDA: GPUs are counted in a child process (`detect_gpus`), and each job's
sandbox subprocess gets its GPU through `CUDA_VISIBLE_DEVICES`. A worker claims a job from the `JobStore`, runs
the evaluator (by default `runner.pool.sandbox.evaluate_in_sandbox`), stores the result and appends it to the results
log. A job cancelled while running has its sandbox killed through the `cancel` event the evaluator receives; a
result that still arrives for a cancelled job is discarded (neither stored nor logged).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import threading
import time
import traceback
from collections.abc import Callable
from dataclasses import dataclass

from common.results_log import ResultsLog
from runner.result import RunResult
from runner.service.jobs import Job, JobStore

_GPU_PROBE = (
    "import json, torch\n"
    "n = torch.cuda.device_count() if torch.cuda.is_available() else 0\n"
    "print(json.dumps([torch.cuda.get_device_name(i) for i in range(n)]))\n"
)


@dataclass(frozen=True)
class Slot:
    """Where one worker runs its jobs (one job at a time); the `lanes` slots of one GPU share it."""

    name: str  # "gpu0", "gpu0.1", ... (lanes of GPU 0), "cpu0"
    device: str  # "cuda" or "cpu"
    visible_devices: str | None  # CUDA_VISIBLE_DEVICES for the sandbox ("" hides GPUs)
    gpu_name: str | None = None
    triton_cache_dir: str | None = None  # shared Triton cache (RUNS_DIR/triton-cache), one subfolder per program
    lanes: int = 1  # slots (concurrent jobs) on this slot's GPU


Evaluator = Callable[[Job, Slot, threading.Event], RunResult]


def detect_gpus(timeout: float = 120.0) -> list[str]:
    """Names of the GPUs this process may use (honours CUDA_VISIBLE_DEVICES), found in a child process."""
    if shutil.which("nvidia-smi") is None and not os.path.exists("/dev/nvidiactl"):
        return []
    try:
        out = subprocess.run(
            [sys.executable, "-c", _GPU_PROBE], capture_output=True, text=True, timeout=timeout, check=True
        ).stdout
        names = json.loads(out.strip().splitlines()[-1])
    except (subprocess.SubprocessError, OSError, ValueError, IndexError):
        return []
    return [str(n) for n in names]


def make_slots(device: str = "auto", cpu_workers: int = 1, gpus: list[str] | None = None,
               triton_cache_dir: str | None = None, jobs_per_gpu: int = 1) -> list[Slot]:
    """`jobs_per_gpu` slots per GPU for `cuda`/`auto` with GPUs; else `cpu_workers` interpreter slots; all share
    the cache."""
    if device not in ("auto", "cuda", "cpu"):
        raise ValueError(f"device must be auto, cuda or cpu, not {device!r}")
    if jobs_per_gpu < 1:
        raise ValueError(f"jobs per GPU must be >= 1, not {jobs_per_gpu}")
    if gpus is None:
        gpus = detect_gpus() if device != "cpu" else []
    if device == "cuda" and not gpus:
        raise RuntimeError("--device cuda: no CUDA GPU is visible to this process")
    if device != "cpu" and gpus:
        parent = os.environ.get("CUDA_VISIBLE_DEVICES")
        physical = [p.strip() for p in parent.split(",")] if parent else [str(i) for i in range(len(gpus))]
        return [Slot(f"gpu{i}" + (f".{lane}" if lane else ""), "cuda", physical[i], name, triton_cache_dir, jobs_per_gpu)
                for i, name in enumerate(gpus) for lane in range(jobs_per_gpu)]
    return [Slot(f"cpu{i}", "cpu", "", None, triton_cache_dir) for i in range(max(1, cpu_workers))]


class WorkerPool:
    """Threads that drain the job store, one per slot."""

    def __init__(
        self, jobs: JobStore, log: ResultsLog, slots: list[Slot], evaluate: Evaluator, *, poll_s: float = 0.5
    ):
        self.jobs = jobs
        self.log = log
        self.slots = slots
        self.evaluate = evaluate
        self.poll_s = poll_s
        self._stop = threading.Event()
        self._wake = threading.Condition()
        self._current: dict[str, tuple[str, threading.Event]] = {}
        self._current_lock = threading.Lock()
        self._threads: list[threading.Thread] = []

    def start(self) -> None:
        for slot in self.slots:
            t = threading.Thread(target=self._loop, args=(slot,), name=f"runner-{slot.name}", daemon=True)
            t.start()
            self._threads.append(t)

    def wake(self) -> None:
        """Tell idle workers that a job was queued."""
        with self._wake:
            self._wake.notify_all()

    def running(self) -> dict[str, str]:
        """slot name -> id of the job it runs."""
        with self._current_lock:
            return {slot: jid for slot, (jid, _) in self._current.items()}

    def cancel_running(self, job_id: str) -> bool:
        """Kill the sandbox of a running job (the job store already says cancelled)."""
        with self._current_lock:
            for jid, event in self._current.values():
                if jid == job_id:
                    event.set()
                    return True
        return False

    def stop(self, grace_s: float = 10.0) -> None:
        """Stop claiming; after `grace_s`, kill the sandboxes still running and put their jobs back in the queue."""
        self._stop.set()
        self.wake()
        deadline = time.monotonic() + grace_s
        for t in self._threads:
            t.join(max(0.0, deadline - time.monotonic()))
        with self._current_lock:
            leftovers = list(self._current.values())
        for jid, event in leftovers:
            self.jobs.release(jid)
            event.set()
        for t in self._threads:
            t.join(5.0)

    def _loop(self, slot: Slot) -> None:
        worker = f"{self.log.path.stem}/{slot.name}"
        while not self._stop.is_set():
            job = self.jobs.claim(worker)
            if job is None:
                with self._wake:
                    self._wake.wait(self.poll_s)
                continue
            cancel = threading.Event()
            with self._current_lock:
                self._current[slot.name] = (job.id, cancel)
            try:
                result = self._run(job, slot, cancel)
            finally:
                with self._current_lock:
                    self._current.pop(slot.name, None)
            result.stamped(job.options)
            if self.jobs.finish(job.id, result):
                self.log.append(result)

    def _run(self, job: Job, slot: Slot, cancel: threading.Event) -> RunResult:
        started = time.monotonic()
        try:
            return self.evaluate(job, slot, cancel)
        except Exception as e:  # the evaluator must not raise; if it does, the job still gets a verdict
            return job.crashed(f"runner internal error: {type(e).__name__}: {e}", time.monotonic() - started,
                               traceback=traceback.format_exc(limit=20))


def sandbox_evaluator(job: Job, slot: Slot, cancel: threading.Event) -> RunResult:
    """The service's evaluator: the job's program in a fresh sandbox subprocess on the worker's slot."""
    from runner.pool.oom_rerun import evaluate_on_slot

    return evaluate_on_slot(job.program, job.options, slot, result_id=job.row_id or job.program_sha256,
                            row_id=job.row_id, cancel=cancel)
