"""A job that runs out of GPU memory beside other jobs is run again with the GPU to itself, and one that failed in a
candidate whose own warm-up failed is run again in fresh processes (runner.gpu.oom_rerun)."""

from __future__ import annotations

import threading
import time

import runner.sandbox.run
from common.outcomes import ErrorType
from runner.gpu.oom_rerun import RERUN_ALONE_FLAG, RERUN_HARNESS_FLAG, evaluate_on_slot
from runner.gpu.slots import make_slots
from runner.protocol import WARM_UP_FAILED_FLAG
from runner.result import RunResult
from runner.spec import RunSpec


class FakeSandbox:
    """Stands for evaluate_in_sandbox: counts the jobs running at once; program "big" runs out of memory whenever
    another job runs beside it."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.running = 0
        self.big_runs: list[int] = []  # how many jobs ran (itself included) during each run of "big"

    def __call__(self, program, options, *, result_id, row_id, cancel=None, gate=None, reference_timing=None) -> RunResult:
        with self.lock:
            self.running += 1
        try:
            time.sleep(0.05 if program == "big" else 0.2)
            with self.lock:
                company = self.running
            if program != "big":
                return RunResult.passed("correct")
            self.big_runs.append(company)
            if company > 1:
                return RunResult.failed(ErrorType.OUT_OF_MEMORY, "CUDA out of memory")
            return RunResult.passed("correct")
        finally:
            with self.lock:
                self.running -= 1


def test_out_of_memory_beside_others_is_run_again_alone(monkeypatch):
    fake = FakeSandbox()
    monkeypatch.setattr(runner.sandbox.run, "evaluate_in_sandbox", fake)
    slots = make_slots("cuda", gpus=["H200"], jobs_per_gpu=3)
    spec = RunSpec.build("cuda", timeout_s=60)
    results: dict[str, RunResult] = {}

    def run(i: int, program: str) -> None:
        results[f"{program}{i}"] = evaluate_on_slot(program, spec, slots[i], result_id=str(i), row_id=None)

    threads = [threading.Thread(target=run, args=(i, p)) for i, p in enumerate(["small", "big", "small"])]
    for t in threads:
        t.start()
    for t in threads:
        t.join(10)
    big = results["big1"]
    assert fake.big_runs == [3, 1]  # out of memory beside two others, then alone
    assert big.error_type is None and RERUN_ALONE_FLAG in big.flags
    assert all(r.error_type is None and RERUN_ALONE_FLAG not in r.flags for k, r in results.items() if k != "big1")


def test_out_of_memory_on_a_gpu_of_its_own_is_final(monkeypatch):
    calls: list[str] = []

    def oom(program, options, **kw) -> RunResult:
        calls.append(program)
        return RunResult.failed(ErrorType.OUT_OF_MEMORY, "CUDA out of memory")

    monkeypatch.setattr(runner.sandbox.run, "evaluate_in_sandbox", oom)
    slot = make_slots("cuda", gpus=["H200"], jobs_per_gpu=1)[0]
    result = evaluate_on_slot("big", RunSpec.build("cuda", timeout_s=60), slot, result_id="x", row_id=None)
    assert calls == ["big"] and result.error_type == ErrorType.OUT_OF_MEMORY and RERUN_ALONE_FLAG not in result.flags


def _failing_then(second: RunResult, first_flags: list[str]):
    """A sandbox whose first run fails with `first_flags` and whose second gives `second`; records the options."""
    seen = []

    def sandbox(program, options, **kw) -> RunResult:
        seen.append(options)
        if len(seen) == 1:
            result = RunResult.failed(ErrorType.RUNTIME_ERROR, "CalledProcessError: gcc cuda_utils.c")
            result.flags += first_flags
            return result
        return second

    return sandbox, seen


def test_a_failure_after_the_harness_warm_up_failed_runs_again_in_fresh_processes(monkeypatch):
    sandbox, seen = _failing_then(RunResult.passed("correct"), [WARM_UP_FAILED_FLAG])
    monkeypatch.setattr(runner.sandbox.run, "evaluate_in_sandbox", sandbox)
    slot = make_slots("cuda", gpus=["H200"], jobs_per_gpu=2)[0]
    result = evaluate_on_slot("p", RunSpec.build("cuda", timeout_s=60), slot, result_id="x", row_id=None)
    assert result.status == "ok" and result.flags == [RERUN_HARNESS_FLAG]
    assert [(o.prewarm, o.forkserver) for o in seen] == [(True, True), (False, False)]


def test_a_program_failure_without_the_harness_flag_is_final(monkeypatch):
    sandbox, seen = _failing_then(RunResult.passed("correct"), [])
    monkeypatch.setattr(runner.sandbox.run, "evaluate_in_sandbox", sandbox)
    slot = make_slots("cuda", gpus=["H200"], jobs_per_gpu=2)[0]
    result = evaluate_on_slot("p", RunSpec.build("cuda", timeout_s=60), slot, result_id="x", row_id=None)
    assert len(seen) == 1 and result.error_type == ErrorType.RUNTIME_ERROR and RERUN_HARNESS_FLAG not in result.flags


def test_the_candidate_says_when_its_warm_up_failed(monkeypatch):
    from runner.child import process, warmup
    from runner.child.candidate import Candidate

    def broken(triton_kernel, lock_fds):
        raise RuntimeError("gcc returned non-zero exit status 1")

    monkeypatch.setattr(warmup, "warm_cuda", broken)
    failure = process.prewarm(triton_kernel=True)
    assert failure == "RuntimeError: gcc returned non-zero exit status 1"
    assert WARM_UP_FAILED_FLAG in Candidate("", failure).finish({})["flags"]
    assert WARM_UP_FAILED_FLAG not in Candidate("", None).finish({})["flags"]
    monkeypatch.setattr(warmup, "warm_cuda", lambda triton_kernel, lock_fds: False)  # no CUDA: nothing failed
    assert process.prewarm(triton_kernel=True) is None
