"""The judge's entry: `python -P -m runner.child.main --spec-fd N --result-fd M --parent-pid P [--cpus ...
--timing-cpu C --gpu-lock-fds A,B,C,D]`.

First asks the kernel to SIGKILL it when its parent dies (and exits if the parent is already gone), imports torch
and triton, forks its candidate process from that state (`runner.child.candidate_client`, `runner.child.fork`:
it warms up beside the judge), then warms the CUDA stack (`runner.child.warmup`), so that a pre-warmed spare (`runner.sandbox.spares`) is ready for
work; then reads its one job spec (`{"program", "options", "triton_cache_dir", "channel_key", "gate"}`, and
`"reference_timing"` when a bulk run reuses Model's timing: `runner.gpu.reference_timings`; one JSON line) from the spec pipe, which stays open for the GPU gate's answers (`runner.gpu.gate`). It sets its resource
limits, moves the result channel (an inherited pipe) to a private descriptor the candidate does not inherit, picks
the device (CPU → TRITON_INTERPRET=1 and hard-coded "cuda" sent to the CPU), evaluates (`runner.child.evaluate`:
the reference here, ModelNew in the candidate), and writes JSON lines to the channel: {"event": "stage", ...}
while working (and {"event": "gate", ...} requests, its own and those it relays for the candidate) and one
{"event": "result", ...} with the `RunResult` at the end. Exits with os._exit so that nothing the program left
behind (threads, atexit hooks) can hang or change the verdict."""

from __future__ import annotations

import argparse
import faulthandler
import json
import os
import random
import sys
import time
import traceback
from pathlib import Path
from typing import Any, BinaryIO

from common.outcomes import ErrorType
from runner.child import pinning, process, separation, warmup
from runner.child.candidate_client import CandidateProcess, open_for
from runner.child.classify import error_type_of
from runner.child.process import die_with_parent, prewarm, resolve_device, set_limits, synchronize
from runner.gpu.gate import NO_GATE, ChildGate, install
from runner.options import EvalOptions
from runner.protocol import EVENT, RESULT, STACKS_SIGNAL, STAGE
from runner.result import ExitCode, RunResult, phase_name


class Phases:
    """Wall seconds per stage of the job (stage texts without their trial numbers: "correctness: Model
    forward" sums the reference's forward calls of all trials), from the moment the job spec arrived; returned
    with the verdict as `phases_s`."""

    def __init__(self) -> None:
        self.current: str | None = None
        self.since = time.perf_counter()
        self.spent: dict[str, float] = {}

    def enter(self, stage: str) -> None:
        name = phase_name(stage)
        if name != self.current:
            self._close()
            self.current = name

    def _close(self) -> None:
        now = time.perf_counter()
        if self.current is not None:
            self.spent[self.current] = self.spent.get(self.current, 0.0) + now - self.since
        self.since = now

    def finish(self) -> dict[str, float]:
        self._close()
        self.current = None
        return {k: round(v, 3) for k, v in self.spent.items()}


def read_spec(control: BinaryIO) -> dict[str, Any]:
    spec = json.loads(control.readline() or b"null")
    if not isinstance(spec, dict) or not isinstance(spec.get("program"), str):
        raise ValueError(f"job spec must be an object with a 'program' path, got {type(spec).__name__}")
    return spec


class ChannelWriter:
    """The child's end of the result channel (`runner.protocol`): the result pipe, moved to a random high descriptor that subprocesses do not inherit."""

    def __init__(self, fd: int, key: str = "") -> None:
        self.key = key  # the parent accepts a result only with this job's key
        target = random.randrange(600, 1000)
        self.fd = os.dup2(fd, target, inheritable=False)
        os.close(fd)

    def send(self, obj: dict[str, Any]) -> None:
        data = (json.dumps(obj, default=str) + "\n").encode()
        while data:
            data = data[os.write(self.fd, data):]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="runner.child.main")
    parser.add_argument("--spec-fd", type=int, required=True, help="pipe carrying the job spec (one JSON line)")
    parser.add_argument("--result-fd", type=int, required=True)
    parser.add_argument("--parent-pid", type=int, required=True)
    parser.add_argument("--cpus", type=pinning.parse_cpus, help="the job's cores (runner.gpu.cpu_plan)")
    parser.add_argument("--timing-cpu", type=int, help="the core the timing thread moves to")
    parser.add_argument("--gpu-lock-fds", type=process.parse_fds, default=[],
                        help="two (main, intent) pairs of the GPU's host lock: this process's, the candidate's")
    try:
        args = parser.parse_args(argv)
    except SystemExit as exc:
        print(f"runner.child.main: bad invocation: {exc}", file=sys.stderr)
        return ExitCode.USAGE
    if not die_with_parent(args.parent_pid):
        return ExitCode.ORPHANED
    private = separation.non_dumpable()  # before the candidate starts and the job spec (the channel key) arrives
    pinning.set_plan(args.cpus, args.timing_cpu)  # before any thread or the candidate's process starts
    faulthandler.enable()  # a crash leaves the Python stack on stderr, whose tail the parent keeps
    faulthandler.register(STACKS_SIGNAL, all_threads=True)  # the parent asks for stacks before a timeout kill
    warmup.import_runtime()  # torch and triton, no CUDA: the candidate is forked with them imported
    candidate = CandidateProcess(Path(os.getcwd()), args.gpu_lock_fds[2:4])  # warms up beside this process
    candidate.judge_private = private
    prewarm(triton_kernel=False, lock_fds=args.gpu_lock_fds[:2])  # the judge runs no Triton kernel
    try:
        control_fd = os.dup2(args.spec_fd, random.randrange(400, 600), inheritable=False)  # below the channel's
        os.close(args.spec_fd)
        control = os.fdopen(control_fd, "rb")
        spec = read_spec(control)
        judge_warm_up = {f"judge_{k}": v for k, v in warmup.durations(time.time()).items()}
        cpu_warm = process.cpu_seconds(children=False)
        options = EvalOptions.from_dict(spec.get("options") or {})
        channel = ChannelWriter(args.result_fd, str(spec.get("channel_key") or ""))
    except (ValueError, TypeError, OSError) as exc:
        print(f"runner.child.main: bad job spec: {exc}", file=sys.stderr)
        return ExitCode.USAGE
    gate = ChildGate(channel.send, control, drain=synchronize) if spec.get("gate") else NO_GATE
    install(gate)
    if spec.get("triton_cache_dir"):
        os.environ["TRITON_CACHE_DIR"] = str(spec["triton_cache_dir"])  # read lazily by triton at compile time
    sys.argv = [spec["program"]]
    phases = Phases()
    try:
        verdict = _evaluate(spec["program"], options, channel, phases, gate, candidate, _dict_or_none(spec.get("reference_timing")))
    except Exception as exc:
        verdict = harness_failure(exc)
    verdict.phases_s = phases.finish()
    verdict.warm_up_s = {**judge_warm_up, **candidate.warm_up_s}
    verdict.cpu_s = {"judge_warm": cpu_warm, "judge_job": round(process.cpu_seconds(children=False) - cpu_warm, 3), **verdict.cpu_s}
    try:
        channel.send({EVENT: RESULT, "key": channel.key, "result": verdict.to_dict()})
    except OSError:
        return ExitCode.NO_CHANNEL
    return ExitCode.VERDICT


def _dict_or_none(value: Any) -> dict[str, Any] | None:
    return value if isinstance(value, dict) else None


def harness_failure(exc: Exception) -> RunResult:
    """The verdict when the harness itself fails: a runtime error flagged `harness_error`, but out of memory is
    `out_of_memory` (beside other jobs, the job is then run again alone: `runner.gpu.oom_rerun`)."""
    oom = error_type_of(exc, "harness") is ErrorType.OUT_OF_MEMORY
    return RunResult.failed(ErrorType.OUT_OF_MEMORY if oom else ErrorType.RUNTIME_ERROR,
                            f"harness error: {type(exc).__name__}: {exc}", flags=["harness_error"],
                            exception=type(exc).__name__, traceback=traceback.format_exc()[-6000:])


def _evaluate(program: str, options: EvalOptions, channel: ChannelWriter, phases: Phases, gate: ChildGate,
              candidate: CandidateProcess, reference_timing: dict[str, Any] | None) -> RunResult:
    smi: list[Any] = []  # the nvidia-smi probe, started with the timing loops (clocks under load)

    def stage(text: str) -> None:
        phases.enter(text)
        if device == "cuda" and not smi and text.startswith("timing: timing"):
            from runner.child.system import SmiProbe

            smi.append(SmiProbe())
            smi[0].start()
        channel.send({EVENT: STAGE, "stage": text})

    device = ""

    stage("start: resolving the device")
    device = resolve_device(options.device)
    set_limits(options, device)
    if device == "cuda":
        import torch

        if not torch.cuda.is_available():
            return RunResult.failed(ErrorType.CUDA_ERROR, "CUDA requested but torch sees no CUDA device",
                                    flags=["no_cuda_device"], device="cuda")
    from runner.child import guard, setup
    from runner.child.evaluate import evaluate_program
    from runner.child.system import collect_system

    tf32 = setup.device_runtime(options, device, gate_hooks=False)  # the judge compiles no Triton kernel
    cache_dir = os.environ.get("TRITON_CACHE_DIR", "")
    if cache_dir:
        open_for(Path(cache_dir), candidate.identity, replace=True)  # the job's own copy (runner.sandbox.triton_cache)
    guard.install([os.getcwd(), os.path.dirname(os.getcwd()), cache_dir, *options.write_roots])
    verdict = evaluate_program(program, options, device, stage, gate, candidate, cache_dir, tf32, reference_timing)
    flags = setup.runtime_flags(device) + [f"refused: {what}" for what in dict.fromkeys(guard.refused())]
    verdict.flags = list(dict.fromkeys(verdict.flags + flags))
    stage("system: collecting system info")
    verdict.system = collect_system(probe_gpu=device == "cuda", smi=smi[0] if smi else None)
    return verdict


if __name__ == "__main__":
    process.exit_now(main())
