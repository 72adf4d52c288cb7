"""Child process entry: `python -P -m runner.child.main --spec-fd N --result-fd M --parent-pid P`.

First asks the kernel to SIGKILL it when its parent dies (and exits if the parent is already gone), then imports
torch and triton and warms the CUDA stack (`runner.child.warmup`), so that a pre-warmed spare (`runner.pool.spares`) is ready
for work; then reads its one job spec (`{"program", "options", "triton_cache_dir", "channel_key", "gate"}`, one JSON
line) from the spec pipe, which stays open for the GPU gate's answers (`runner.pool.gate`). It sets
its resource limits, moves the result channel (an inherited pipe) to a private descriptor, picks the device
(CPU → TRITON_INTERPRET=1 and hard-coded "cuda" sent to the CPU), evaluates, and writes JSON lines to the channel:
{"event": "stage", ...} while working (and {"event": "gate", ...} requests) and one {"event": "result", ...} with
the `RunResult` at the end. Exits with os._exit so that
nothing the program left behind (threads, atexit hooks) can hang or change the verdict."""

from __future__ import annotations

import argparse
import ctypes
import ctypes.util
import faulthandler
import json
import os
import random
import re
import resource
import signal
import sys
import time
import traceback
from typing import Any, BinaryIO

from runner.child.classify import error_type_of
from runner.options import EvalOptions
from runner.pool.gate import NO_GATE, ChildGate, install
from runner.result import ErrorType, ExitCode, RunResult

STACKS_SIGNAL = signal.SIGUSR1
_TRIAL = re.compile(r" \(trial \d+\)")
PR_SET_PDEATHSIG = 1


def die_with_parent(parent_pid: int) -> bool:
    """SIGKILL this process when its parent goes (Linux); False if the parent is already gone."""
    if sys.platform.startswith("linux"):
        try:
            libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6", use_errno=True)
            libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
        except (OSError, AttributeError):
            pass
    return os.getppid() == parent_pid  # checked after prctl: a parent that died before it is caught here


def prewarm() -> None:
    """Import torch and triton and warm the CUDA stack (`runner.child.warmup`) while waiting for a job; a failure shows
    up again in the job."""
    try:
        from runner.child import warmup

        warmup.warm_cuda()
    except Exception:
        pass


class Phases:
    """Wall seconds per stage of the job (stage texts without their trial numbers: "correctness: Model
    forward" sums the reference's forward calls of all trials), from the moment the job spec arrived; returned
    with the verdict as `phases_s`."""

    def __init__(self) -> None:
        self.current: str | None = None
        self.since = time.perf_counter()
        self.spent: dict[str, float] = {}

    def enter(self, stage: str) -> None:
        name = _TRIAL.sub("", stage)
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


def _user_tasks(uid: int) -> int:
    """Threads of all processes of `uid` (what RLIMIT_NPROC counts)."""
    total = 0
    for pid in os.listdir("/proc"):
        if not pid.isdigit():
            continue
        try:
            with open(f"/proc/{pid}/status") as fh:
                fields = dict(line.split(":", 1) for line in fh if ":" in line)
            if int(fields["Uid"].split()[0]) == uid:
                total += int(fields["Threads"])
        except (OSError, KeyError, ValueError):
            continue
    return total


def _limit(which: int, value: int) -> None:
    try:
        _, hard = resource.getrlimit(which)
        value = value if hard == resource.RLIM_INFINITY else min(value, hard)
        resource.setrlimit(which, (value, value))
    except (ValueError, OSError):
        pass


def set_limits(options: EvalOptions, device: str) -> None:
    _limit(resource.RLIMIT_CORE, 0)
    _limit(resource.RLIMIT_FSIZE, options.file_size_limit_bytes)
    cpu_s = int(options.timeout_s * max(2, os.cpu_count() or 1)) + 30  # backstop; the parent's clock rules
    _limit(resource.RLIMIT_CPU, cpu_s)
    if os.getuid() != 0:
        _limit(resource.RLIMIT_NPROC, _user_tasks(os.getuid()) + options.nproc_extra)
    if device == "cpu":  # CUDA maps large private regions; there the parent's RSS watchdog is the limit
        _limit(resource.RLIMIT_DATA, options.memory_limit_bytes)


class Channel:
    """The result pipe, moved to a random high descriptor that subprocesses do not inherit."""

    def __init__(self, fd: int, key: str = "") -> None:
        self.key = key  # the parent accepts a result only with this job's key
        target = random.randrange(600, 1000)
        self.fd = os.dup2(fd, target, inheritable=False)
        os.close(fd)

    def send(self, obj: dict[str, Any]) -> None:
        data = (json.dumps(obj, default=str) + "\n").encode()
        while data:
            data = data[os.write(self.fd, data):]


def cuda_cpu_threads() -> int:
    """Torch's CPU threads in a CUDA job: a few. Inputs are made and programs do host work on the CPU, and jobs
    and warming spares of every GPU share the host's cores; torch's default (one thread per core in every
    process) oversubscribes them, and its spinning thread pools then turn milliseconds of host work into
    seconds. `TLX_RUNNER_CPU_THREADS` overrides (`common.settings`)."""
    from common.settings import RunnerConfig

    return RunnerConfig.from_env().child_cpu_threads()


def _synchronize() -> None:
    """Wait for this process's queued GPU work; a broken context (a CUDA error) has none left to wait for."""
    try:
        import torch

        if torch.cuda.is_initialized():
            torch.cuda.synchronize()
    except Exception:
        pass


def resolve_device(requested: str) -> str:
    import torch

    if requested == "auto":
        return "cuda" if torch.cuda.is_available() else "cpu"
    return requested


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="runner.child.main")
    parser.add_argument("--spec-fd", type=int, required=True, help="pipe carrying the job spec (one JSON line)")
    parser.add_argument("--result-fd", type=int, required=True)
    parser.add_argument("--parent-pid", type=int, required=True)
    try:
        args = parser.parse_args(argv)
    except SystemExit as exc:
        print(f"runner.child.main: bad invocation: {exc}", file=sys.stderr)
        return ExitCode.USAGE
    if not die_with_parent(args.parent_pid):
        return ExitCode.ORPHANED
    faulthandler.enable()  # a crash leaves the Python stack on stderr, whose tail the parent keeps
    faulthandler.register(STACKS_SIGNAL, all_threads=True)  # the parent asks for stacks before a timeout kill
    prewarm()
    try:
        control_fd = os.dup2(args.spec_fd, random.randrange(400, 600), inheritable=False)  # below the channel's
        os.close(args.spec_fd)
        control = os.fdopen(control_fd, "rb")
        spec = read_spec(control)
        options = EvalOptions.from_dict(spec.get("options") or {})
        channel = Channel(args.result_fd, str(spec.get("channel_key") or ""))
    except (ValueError, TypeError, OSError) as exc:
        print(f"runner.child.main: bad job spec: {exc}", file=sys.stderr)
        return ExitCode.USAGE
    gate = ChildGate(channel.send, control, drain=_synchronize) if spec.get("gate") else NO_GATE
    install(gate)
    if spec.get("triton_cache_dir"):
        os.environ["TRITON_CACHE_DIR"] = str(spec["triton_cache_dir"])  # read lazily by triton at compile time
    sys.argv = [spec["program"]]
    phases = Phases()
    try:
        verdict = _evaluate(spec["program"], options, channel, phases, gate)
    except Exception as exc:
        verdict = harness_failure(exc)
    verdict.phases_s = phases.finish()
    try:
        channel.send({"event": "result", "key": channel.key, "result": verdict.to_dict()})
    except OSError:
        return ExitCode.NO_CHANNEL
    return ExitCode.VERDICT


def harness_failure(exc: Exception) -> RunResult:
    """The verdict when the harness itself fails: a runtime error flagged `harness_error`, but out of memory is
    `out_of_memory` (beside other jobs, the job is then run again alone: `runner.pool.oom_rerun`)."""
    oom = error_type_of(exc, "harness") is ErrorType.OUT_OF_MEMORY
    return RunResult.failed(ErrorType.OUT_OF_MEMORY if oom else ErrorType.RUNTIME_ERROR,
                            f"harness error: {type(exc).__name__}: {exc}", flags=["harness_error"],
                            exception=type(exc).__name__, traceback=traceback.format_exc()[-6000:])


def _evaluate(program: str, options: EvalOptions, channel: Channel, phases: Phases, gate: ChildGate) -> RunResult:
    smi: list[Any] = []  # the nvidia-smi probe, started with the timing loops (clocks under load)

    def stage(text: str) -> None:
        phases.enter(text)
        if device == "cuda" and not smi and text.startswith("timing: timing"):
            from runner.child.system import SmiProbe

            smi.append(SmiProbe())
            smi[0].start()
        channel.send({"event": "stage", "stage": text})

    device = ""

    stage("start: resolving the device")
    device = resolve_device(options.device)
    set_limits(options, device)
    flags: list[str] = []
    if device == "cpu":
        os.environ["TRITON_INTERPRET"] = "1"
        from runner.child import cuda_remap

        cuda_remap.install()
    elif device == "cuda":
        import torch

        if not torch.cuda.is_available():
            return RunResult.failed(ErrorType.CUDA_ERROR, "CUDA requested but torch sees no CUDA device",
                                    flags=["no_cuda_device"], device="cuda")
        torch.set_num_threads(cuda_cpu_threads())
    import triton  # noqa: F401 - imported after TRITON_INTERPRET is settled

    if device == "cuda":
        from runner.child import autotune

        autotune.install(options.timing.autotune_warmup_ms, options.timing.autotune_rep_ms)
    if device == "cuda" and gate is not NO_GATE:
        from runner.pool.gate import install_triton_hooks

        install_triton_hooks()

    if device == "cpu":
        from runner.child import interpreter_compat

        interpreter_compat.install()

    from runner.child import guard
    from runner.child.evaluate import evaluate_program
    from runner.child.system import collect_system

    guard.install([os.getcwd(), os.path.dirname(os.getcwd()), os.environ.get("TRITON_CACHE_DIR", ""),
                   *options.write_roots])
    verdict = evaluate_program(program, options, device, stage, gate)
    if device == "cpu":
        from runner.child import cuda_remap, interpreter_compat

        if cuda_remap.remapped():
            flags.append("cuda_remapped_to_cpu")
        if interpreter_compat.narrowed():
            flags.append("autotune_first_config_only")
    flags += [f"refused: {what}" for what in dict.fromkeys(guard.refused())]
    verdict.flags = verdict.flags + flags
    stage("system: collecting system info")
    verdict.system = collect_system(probe_gpu=device == "cuda", smi=smi[0] if smi else None)
    return verdict


if __name__ == "__main__":
    code = main()
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except Exception:
            pass
    os._exit(int(code))
