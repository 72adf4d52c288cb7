"""`evaluate_in_sandbox`: the only way the project runs dataset code (design §4, "Isolation").

One fresh subprocess per call (`runner.sandbox.spares`: usually a pre-warmed spare that has imported torch and triton and
warmed CUDA), inside the host's operating-system isolation (`runner.sandbox.isolation`; where there is none, every
result carries the flag `not_isolated`), in its own session (killed as a group; isolated, every process of its
PID namespace dies with it), in a fresh job folder that is its HOME, cwd and TMPDIR, with an allow-listed
environment, resource limits (set by the child itself), a memory cap (its cgroup's where there is one, and an RSS
watchdog over all its processes: `runner.sandbox.cgroup.job_memory_cap`), capped stdout/stderr, a wall-clock
timeout and an optional `cancel` event. Secret values of the runner's environment are redacted from the result
(`runner.sandbox.scrub`). The child dies with the process that started it. The verdict comes back
over a private pipe, never from stdout. Timeouts, crashes, memory kills and cancels are results; this function
does not raise for a verdict. With a `gate` (`runner.gpu.gate.GpuGate`), the job's GPU steps wait for the GPU's gate
(the time waited does not count against its timeout) and its timing stage has the GPU alone."""

from __future__ import annotations

import json
import os
import secrets
import signal
import subprocess
import threading
import time
from collections import deque
from pathlib import Path
from typing import Any

from common.hardware import CPU_LABEL
from common.outcomes import ErrorType
from common.program_hash import program_sha256
from runner.child import separation
from runner.child.system import collect_system
from runner.gpu.gate import WAITING_FOR_GPU, GpuGate
from runner.options import EvalOptions
from runner.procfs import stat_fields
from runner.protocol import EVENT, EXCLUSIVE, GATE, GO, RELEASE, RESULT, SHARED, STACKS_SIGNAL, STAGE
from runner.result import RunResult, phase_name
from runner.sandbox import isolation, scratch, scrub, triton_cache
from runner.sandbox.cgroup import job_memory_cap
from runner.sandbox.isolation import NOT_ISOLATED
from runner.sandbox.spares import POOL, Child, close_spares, kill_group

__all__ = ["close_spares", "evaluate_in_sandbox"]
POLL_S = 0.1
TAIL_CHARS = 3000
STACKS_WAIT_S = 0.5
TASKS_OF_THE_ISOLATION = 8  # setpriv, unshare, bwrap, the namespace's init: in the job's cgroup, not its count


class _Capture(threading.Thread):
    """Drains one output pipe, keeping its first and last `cap // 2` bytes."""

    def __init__(self, stream: Any, cap: int) -> None:
        super().__init__(daemon=True)
        self.stream, self.half = stream, max(1, cap // 2)
        self.head = bytearray()
        self.tail: deque[bytes] = deque()
        self.tail_len = self.total = 0

    def run(self) -> None:
        for chunk in iter(lambda: self.stream.read1(65536), b""):
            self.total += len(chunk)
            room = self.half - len(self.head)
            if room > 0:
                self.head += chunk[:room]
                chunk = chunk[room:]
            if chunk:
                self.tail.append(chunk)
                self.tail_len += len(chunk)
                while self.tail_len - len(self.tail[0]) >= self.half:
                    self.tail_len -= len(self.tail.popleft())

    def text_tail(self, chars: int = TAIL_CHARS) -> str:
        data = bytes(self.head) + (b"\n[...]\n" if self.total > len(self.head) + self.tail_len else b"")
        data += b"".join(self.tail)
        return data.decode("utf-8", errors="replace")[-chars:]


class ChannelReader(threading.Thread):
    """The parent's end of the result channel (`runner.protocol`): reads the child's JSON-lines result channel: last stage seen, GPU gate requests and the final result. A
    result counts only when it carries this job's random key (sent in the spec): a program that finds the pipe
    and writes its own verdict without the key is ignored (and flagged `forged_verdict`). Gate requests are
    answered with a `go` line on the child's spec pipe once `gate` is held; the first request starts the job's
    claim on the GPU (`GpuGate.claim`), which lasts to the job's end. `close_gate` releases what the job still holds
    and its claim, and stops a wait."""

    def __init__(self, fd: int, key: str, gate: GpuGate | None, control_fd: int) -> None:
        super().__init__(daemon=True)
        self.file = os.fdopen(fd, "rb")
        self.key = key
        self.stage = "starting"
        self.result: dict[str, Any] | None = None
        self.forged = False
        self.first_event_at: float | None = None  # time.monotonic() of the child's first stage
        self.done = threading.Event()  # set when this job's verdict has arrived
        self.gate, self.control_fd = gate, control_fd
        self.held: str | None = None
        self.claimed = False
        self.gate_closed = threading.Event()
        self._gate_lock = threading.Lock()
        self._waited_s = 0.0
        self._waiting_since: float | None = None
        self.waited_by_stage: dict[str, float] = {}  # seconds waited for the gate, by the child's stage then

    def run(self) -> None:
        try:
            for line in self.file:
                try:
                    event = json.loads(line)
                except ValueError:
                    continue
                if event.get(EVENT) == STAGE:
                    self.stage = str(event.get("stage"))
                    if self.first_event_at is None:
                        self.first_event_at = time.monotonic()
                elif event.get(EVENT) == GATE:
                    self._gate(event.get("mode"))
                elif event.get(EVENT) == RESULT and isinstance(event.get("result"), dict):
                    if event.get("key") == self.key:
                        self.result = event["result"]
                        self.done.set()
                    else:
                        self.forged = True
        finally:
            self.file.close()
            self.close_gate()

    def _gate(self, mode: Any) -> None:
        if self.gate is None:
            return
        if mode == RELEASE:
            with self._gate_lock:
                held, self.held = self.held, None
            if held:
                self.gate.release(held)
            return
        if mode not in (SHARED, EXCLUSIVE) or self.held:
            return
        with self._gate_lock:
            if self.gate_closed.is_set():
                return
            if not self.claimed:
                self.gate.claim(True)
                self.claimed = True
        self._waiting_since = time.monotonic()
        got = self.gate.acquire(mode, abort=self.gate_closed)
        with self._gate_lock:  # close_gate takes it too: no "go" is written once the job is over
            waited = time.monotonic() - self._waiting_since
            self._waited_s += waited
            stage = phase_name(self.stage)
            self.waited_by_stage[stage] = self.waited_by_stage.get(stage, 0.0) + waited
            self._waiting_since = None
            if not got:
                return
            try:
                if self.gate_closed.is_set():
                    raise OSError("job over")
                os.write(self.control_fd, GO + b"\n")
                self.held = mode
            except OSError:
                self.gate.release(mode)

    def waited_s(self) -> float:
        """Seconds spent waiting for the gate (so far)."""
        since = self._waiting_since
        return self._waited_s + (time.monotonic() - since if since is not None else 0.0)

    def close_gate(self) -> None:
        with self._gate_lock:
            self.gate_closed.set()
            held, self.held = self.held, None
            claimed, self.claimed = self.claimed, False
        if held and self.gate is not None:
            self.gate.release(held)
        if claimed:
            self.gate.claim(False)


def _pid_namespace(child: Child) -> str | None:
    """The job's own PID namespace (`/proc/PID/ns/pid`'s link), None when it has none (yet: a child starting)."""
    if not child.iso.isolated:
        return None
    try:
        namespace = os.readlink(f"/proc/{child.job_pid()}/ns/pid")
        return None if namespace == os.readlink("/proc/self/ns/pid") else namespace
    except OSError:
        return None


def _job_pids(pgid: int, namespace: str | None) -> list[str]:
    """Every process of the job: of its PID namespace, else of its process group."""
    pids = []
    for pid in os.listdir("/proc"):
        if not pid.isdigit():
            continue
        try:
            if namespace is not None:
                if os.readlink(f"/proc/{pid}/ns/pid") != namespace:
                    continue
            else:
                if int(stat_fields(pid)[2]) != pgid:  # fields after "(comm)": state ppid pgrp ...
                    continue
        except (OSError, IndexError, ValueError):
            continue
        pids.append(pid)
    return pids


def _resident_bytes(pid: str) -> int:
    """RSS from statm (cheap): a page shared by several processes counts in each."""
    with open(f"/proc/{pid}/statm") as fh:
        return int(fh.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


def _proportional_bytes(pid: str) -> int:
    """PSS from smaps_rollup (~3 ms for a process holding torch): a shared page counts once over its sharers."""
    with open(f"/proc/{pid}/smaps_rollup") as fh:
        for line in fh:
            if line.startswith("Pss:"):
                return int(line.split()[1]) * 1024
    return 0


def _tasks(pid: str) -> int:
    """The process's threads (each a task of the kernel's, as a process is)."""
    return len(os.listdir(f"/proc/{pid}/task"))


def _job_usage(pgid: int, namespace: str | None, memory_cap: int) -> tuple[int, int]:
    """(memory bytes, tasks: processes and their threads) of the job. Memory is the sum of RSS, and where that is
    over `memory_cap`, the sum of PSS: forked children share their parent's pages copy-on-write, and counting those
    in every child would call a program with forked workers (or a fork bomb, which the task count stops) out of
    memory. The task count is what bounds a fork bomb when the child runs as root (the kernel does not apply
    RLIMIT_NPROC to root), and it counts threads (issue 45: 3,000 threads went past a count of processes)."""
    pids = _job_pids(pgid, namespace)
    tasks = 0
    for pid in pids:
        try:
            tasks += _tasks(pid)
        except OSError:  # the process has exited meanwhile
            continue
    for measure in (_resident_bytes, _proportional_bytes):
        total = 0
        for pid in pids:
            try:
                total += measure(pid)
            except PermissionError:  # smaps of a non-dumpable judge (runner.child.separation): its RSS instead
                total += _resident_bytes(pid) if measure is _proportional_bytes else 0
            except (OSError, IndexError, ValueError):  # the process has exited meanwhile
                continue
        if total <= memory_cap:
            break
    return total, tasks


def _dump_stacks(child: Child) -> None:
    """Ask a hung child for its Python stacks (faulthandler writes them to stderr) before the kill."""
    try:
        os.killpg(os.getpgid(child.job_pid()), STACKS_SIGNAL)  # the judge and its candidate print their stacks
        child.proc.wait(timeout=STACKS_WAIT_S)
    except (OSError, subprocess.TimeoutExpired):
        pass


def _signal_name(num: int) -> str:
    try:
        return signal.Signals(num).name
    except ValueError:
        return f"signal {num}"


def evaluate_in_sandbox(program: str, options: EvalOptions, *, result_id: str, row_id: str | None = None,
                        cancel: threading.Event | None = None, gate: GpuGate | None = None,
                        reference_timing: dict[str, Any] | None = None) -> RunResult:
    """Evaluate `program` (the text of one dataset row) in a fresh sandboxed subprocess. Setting `cancel` kills
    the job's process group; the result is then `crashed` with the flag `cancelled`. `reference_timing`: Model's
    timing to use instead of timing it (`runner.gpu.reference_timings`)."""
    started = time.monotonic()
    sha = program_sha256(program)
    child: Child | None = None
    try:
        if cancel is not None and cancel.is_set():
            verdict = _cancelled("before start")
        else:
            child = POOL.take(options)
            path = child.work / "program.py"
            path.write_text(program, encoding="utf-8", errors="surrogatepass")
            shared = Path(options.triton_cache_dir) / sha if options.triton_cache_dir else None
            cache = child.root / "triton-cache"
            if shared is not None:
                triton_cache.seed(shared, cache)
            verdict = _run_child(child, path, options, cache, cancel, gate, reference_timing)
            if shared is not None:  # the job's processes are gone: nothing changes the entries while they are read
                triton_cache.publish(cache, shared)
    except OSError as exc:  # the sandbox itself could not be set up (disk full, no fork): still a verdict
        verdict = RunResult.failed(ErrorType.CRASHED, f"could not start the sandbox: {exc}", flags=["sandbox_error"],
                                   exception=type(exc).__name__)
    finally:
        if child is not None:
            child.discard()
    duration = time.monotonic() - started
    verdict.phases_s = {**verdict.phases_s, "harness": round(max(duration - sum(verdict.phases_s.values()), 0.0), 3)}
    verdict.trials = verdict.trials or options.trials
    verdict.device = verdict.device or {"cpu": CPU_LABEL}.get(options.device, options.device)
    if not verdict.system:  # no verdict from the child (a timeout, a crash): name the job's GPU here all the same
        gpu = options.visible_devices or os.environ.get("CUDA_VISIBLE_DEVICES") or "0"
        verdict.system = collect_system(probe_gpu=False, gpu_id=gpu if options.device == "cuda" else None)
    if not isolation.current().isolated:
        verdict.flags = [*verdict.flags, NOT_ISOLATED]
    verdict = RunResult.from_dict(scrub.scrub(verdict.to_dict()))
    return verdict.completed(id=result_id, row_id=row_id, program_sha256=sha, duration_s=duration)


def _cancelled(stage: str, **kw: Any) -> RunResult:
    return RunResult.failed(ErrorType.CRASHED, f"cancelled {stage}", flags=["cancelled"], **kw)


def _run_child(child: Child, path: Path, options: EvalOptions, cache_dir: Path,
               cancel: threading.Event | None, gate: GpuGate | None,
               reference_timing: dict[str, Any] | None = None) -> RunResult:
    proc = child.proc
    separation.non_dumpable()  # the keys live here too: out of a same-user candidate's reach (no /proc/<pid>/mem)
    key = secrets.token_hex(16)
    channel = ChannelReader(child.result_fd, key, gate, child.spec_fd)
    child.result_fd = -1  # the channel reader owns it now
    out, err = (_Capture(proc.stdout, options.output_cap_bytes), _Capture(proc.stderr, options.output_cap_bytes))
    for t in (channel, out, err):
        t.start()
    sent = time.monotonic()
    child.send_spec({"program": str(path), "options": options.to_dict(), "triton_cache_dir": str(cache_dir),
                     "channel_key": key, "gate": gate is not None, "reference_timing": reference_timing},
                    keep_open=gate is not None)
    killed_for: str | None = None
    peak_rss = peak_procs = 0
    memory_cap = job_memory_cap(options.memory_limit_bytes)
    if child.cgroup is not None:
        try:
            child.cgroup.set_limit(memory_cap)
        except OSError:  # v1 refuses a cap below what the spare holds already: the RSS watchdog still applies
            pass
        try:  # the kernel's cap on tasks, a little above the watchdog's (the isolation's own processes count)
            child.cgroup.set_task_limit(options.nproc_extra + TASKS_OF_THE_ISOLATION)
        except OSError:
            pass
    try:
        scratch.resize(child.root, options.disk_limit_bytes)
    except OSError:  # below what the folder holds already (the shared Triton cache's entries): it keeps its cap
        pass
    namespace = None
    while child.poll() is None and not channel.done.is_set():  # a verdict in hand: no waiting for the exit
        if cancel is not None and cancel.is_set():
            killed_for = "cancel"
        elif time.monotonic() > sent + options.timeout_s + channel.waited_s():  # waiting for the GPU is free
            killed_for = "timeout"
        else:
            namespace = namespace or _pid_namespace(child)
            rss, procs = _job_usage(proc.pid, namespace, memory_cap)
            peak_rss, peak_procs = max(peak_rss, rss), max(peak_procs, procs)
            if peak_rss > memory_cap:
                killed_for = "memory"
            elif peak_procs > options.nproc_extra:
                killed_for = "processes"
        if killed_for:
            if killed_for == "timeout":
                _dump_stacks(child)
            kill_group(proc.pid)
            proc.wait()
            break
        channel.done.wait(POLL_S)
    kill_group(proc.pid)  # whatever the program left running in its session goes too (the child too, if it
    proc.wait()  # has not exited after sending its verdict: its CUDA teardown is nobody's business)
    channel.close_gate()
    for t in (channel, out, err):
        t.join(timeout=5)
    if killed_for is None and child.cgroup is not None and channel.result is None and child.cgroup.oom_killed():
        killed_for = "cgroup_oom"
    if killed_for is None and child.cgroup is not None and child.cgroup.tasks_refused():
        killed_for = "tasks_refused"  # whatever the program made of the refusal (an error, a fallback)
    verdict = _verdict(child.returncode(), killed_for, channel, err, options, memory_cap, peak_rss, peak_procs)
    if "candidate_crashed" in verdict.flags and child.cgroup is not None and child.cgroup.oom_killed():
        verdict = RunResult.failed(ErrorType.OUT_OF_MEMORY, f"host memory over the job's cap of {memory_cap / 2**20:.0f} "
                                   f"MiB: its memory cgroup killed the candidate process ({verdict.message})",
                                   exception="oom_kill", traceback=verdict.traceback, flags=verdict.flags)
    verdict.phases_s = gate_waits_apart(verdict.phases_s, channel.waited_by_stage)
    if channel.first_event_at is not None:  # the spare still warming up, or a cold child starting
        verdict.phases_s = {"child_ready": round(channel.first_event_at - sent, 3), **verdict.phases_s}
    if channel.forged:
        verdict.flags = [*verdict.flags, "forged_verdict"]
    if scratch.filled(child.root):
        verdict.flags = [*verdict.flags, "disk_full"]
    return _host_refused_a_task(verdict, peak_procs)


_REFUSED_TASK = ("can't start new thread", "BlockingIOError: [Errno 11]")  # CPython's words for a refused clone


def _host_refused_a_task(verdict: RunResult, peak_procs: int) -> RunResult:
    """A failure because the host refused a thread or process at a limit outside the job's own (a container's
    `pids.max` on a CI host: neither the watchdog's count nor the job cgroup's `pids.events` saw it) is
    `too_many_processes` all the same. The words come from the program's process and could be its own: they
    only ever name a failure, never make one."""
    if verdict.status != "failed" or "too_many_processes" in verdict.flags or not any(
            t in verdict.message for t in _REFUSED_TASK):
        return verdict
    verdict.message = (f"the host refused a process or thread (a limit outside the job's; the watchdog saw "
                       f"{peak_procs} at most): {verdict.message}")
    verdict.flags = [*verdict.flags, "too_many_processes"]
    return verdict


def gate_waits_apart(phases: dict[str, float], waited: dict[str, float]) -> dict[str, float]:
    """`phases` with each stage's wait for the GPU gate (`waited`, by stage) taken out of it and put beside it as
    `<stage> [waiting for the GPU]`, so that where a job's time went says which steps waited for other jobs' GPU
    work; the sum stays the same. A stage that is itself a wait for the GPU stays whole."""
    out: dict[str, float] = {}
    for stage, seconds in phases.items():
        wait = min(round(waited.get(stage, 0.0), 3), seconds)
        if wait < 0.001 or stage.endswith(WAITING_FOR_GPU):
            out[stage] = seconds
            continue
        out[stage] = round(seconds - wait, 3)
        out[f"{stage} [{WAITING_FOR_GPU}]"] = wait
    return out


def _verdict(code: int, killed_for: str | None, channel: ChannelReader, err: _Capture, options: EvalOptions,
             memory_cap: int, peak_rss: int, peak_procs: int) -> RunResult:
    tail = err.text_tail() or None
    if channel.result is not None and killed_for is None:
        try:
            verdict = RunResult.from_dict({**channel.result, "id": ""})
        except (TypeError, ValueError) as exc:
            return RunResult.failed(ErrorType.CRASHED, f"unreadable verdict from the child: {exc}",
                                    flags=["harness_error"])
        if verdict.error_type == ErrorType.CRASHED and not verdict.traceback:
            verdict.traceback = tail  # the candidate process died: its stderr (with its stacks) is the job's
        return verdict
    where = f"during '{channel.stage}'"
    if killed_for == "processes":
        return RunResult.failed(ErrorType.CRASHED, f"{peak_procs} processes and threads, over the limit of "
                                f"{options.nproc_extra}; killed {where}", flags=["too_many_processes"], traceback=tail)
    if killed_for == "tasks_refused":
        return RunResult.failed(ErrorType.CRASHED, f"the kernel refused a process or thread past the job's cap of "
                                f"{options.nproc_extra + TASKS_OF_THE_ISOLATION} {where}",
                                flags=["too_many_processes"], traceback=tail)
    if killed_for == "cancel":
        return _cancelled(where, traceback=tail)
    if killed_for == "timeout":
        return RunResult.failed(ErrorType.TIMEOUT, f"no verdict after {options.timeout_s:g} s; killed {where}",
                                traceback=tail)
    if killed_for == "memory":
        return RunResult.failed(ErrorType.OUT_OF_MEMORY, f"host memory {peak_rss / 2**20:.0f} MiB over the limit of "
                                f"{memory_cap / 2**20:.0f} MiB; killed {where}", traceback=tail)
    if killed_for == "cgroup_oom":
        return RunResult.failed(ErrorType.OUT_OF_MEMORY, f"host memory over the job's cap of {memory_cap / 2**20:.0f} "
                                f"MiB (its memory cgroup's OOM kill) {where}", exception="oom_kill", traceback=tail)
    if code < 0:
        sig = _signal_name(-code)
        error_type = ErrorType.TIMEOUT if -code == signal.SIGXCPU else ErrorType.CRASHED
        hint = " (possibly the kernel's OOM killer)" if -code == signal.SIGKILL else ""
        return RunResult.failed(error_type, f"killed by {sig}{hint} {where}", exception=sig, traceback=tail)
    return RunResult.failed(ErrorType.CRASHED, f"exited with status {code} without a verdict {where}",
                            exception=f"exit {code}", traceback=tail)
