"""Worker threads of the runner service, one per slot (`runner.gpu.slots`: `jobs_per_gpu` per visible GPU, sharing
it through `runner.gpu.gate`, or CPU (Triton interpreter) workers).

A worker claims a job from the `JobStore`, runs the evaluator (by default `runner.gpu.oom_rerun.evaluate_on_slot`),
stores the result and appends it to the results log. A pair job's two members (`runner.service.pairs`) run on the
claiming worker's slot one after the other, each through the evaluator (its own sandbox), under the job's one
`RunSpec`; the first member's result is stored as the job's progress, and both are logged (each a normal run
whose `pair` field names the job) only once the job is done. A job cancelled while running has its sandbox killed through the `cancel` event the evaluator receives; a
result that still arrives for a cancelled job is discarded (neither stored nor logged).
"""

from __future__ import annotations

import threading
import time
import traceback
from collections.abc import Callable
from typing import Any

from common.results_log import ResultsLog
from runner.gpu.oom_rerun import evaluate_on_slot
from runner.gpu.slots import Slot
from runner.result import RunResult
from runner.service.jobs import Job, JobStore
from runner.service.pairs import member_link, pair_result, run_records

Evaluator = Callable[[Job, Slot, threading.Event], RunResult]


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
                record = self._run_pair(job, worker, slot, cancel) if job.is_pair else self._record(job, slot, cancel)
            finally:
                with self._current_lock:
                    self._current.pop(slot.name, None)
            if record is not None and self.jobs.finish(job.id, record):
                for logged in run_records(record):
                    self.log.append(logged)

    def _record(self, job: Job, slot: Slot, cancel: threading.Event, pair: dict[str, Any] | None = None) -> dict:
        """One run's result as the dict that is stored and logged (made once)."""
        result = self._run(job, slot, cancel).stamped(job.spec)
        result.pair = pair
        return result.to_dict()

    def _run_pair(self, job: Job, worker: str, slot: Slot, cancel: threading.Event) -> dict[str, Any] | None:
        """Both members back to back on this slot; None when the job was cancelled before the second started."""
        records: dict[str, dict[str, Any]] = {}
        started: dict[str, float] = {}
        for position, member in enumerate(job.members):
            if cancel.is_set():
                return None
            partner = job.members[1 - position]
            started[member.label] = time.time()
            link = member_link(job.id, member, position, started[member.label], partner)
            records[member.label] = self._record(job.member_job(member), slot, cancel, link)
            self.jobs.record_progress(job.id, {"runs": records})
        return pair_result(job.id, worker, slot.name, slot.gpu_name, records, started)

    def _run(self, job: Job, slot: Slot, cancel: threading.Event) -> RunResult:
        started = time.monotonic()
        try:
            return self.evaluate(job, slot, cancel)
        except Exception as e:  # the evaluator must not raise; if it does, the job still gets a verdict
            return RunResult.crashed(f"runner internal error: {type(e).__name__}: {e}", job.spec,
                                     id=job.result_id, row_id=job.row_id, program_sha256=job.program_sha256,
                                     duration_s=time.monotonic() - started, traceback=traceback.format_exc(limit=20))


def sandbox_evaluator(job: Job, slot: Slot, cancel: threading.Event) -> RunResult:
    """The service's evaluator: the job's program in a fresh sandbox subprocess on the worker's slot."""
    return evaluate_on_slot(job.program, job.spec, slot, result_id=job.result_id,
                            row_id=job.row_id, cancel=cancel)
