"""What every child process of a job (the judge, `runner.child.main`, and the candidate,
`runner.child.candidate`) does to itself: die with its parent, warm up while it waits, set its resource
limits, pick its device and its CPU threads."""

from __future__ import annotations

import ctypes
import ctypes.util
import os
import resource
import signal
import sys

from runner.options import EvalOptions

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


def cpu_seconds(children: bool = True) -> float:
    """CPU seconds of this process, user and system, and of the children it waited for (Triton's compilers) when
    `children` (not for the judge: its child is the candidate, which reports its own)."""
    own = resource.getrusage(resource.RUSAGE_SELF)
    total = own.ru_utime + own.ru_stime
    if children:
        kids = resource.getrusage(resource.RUSAGE_CHILDREN)
        total += kids.ru_utime + kids.ru_stime
    return round(total, 3)


def prewarm(triton_kernel: bool, lock_fds: list[int] | None = None) -> str | None:
    """Import torch and triton and warm the CUDA stack (Triton's compiler too, `triton_kernel`:
    `runner.child.warmup`) while waiting for a job, holding the GPU shared through `lock_fds` (main, intent) while
    it makes its context; a failure (returned, as its exception's text) shows up again in the job. The descriptors
    are closed before any job arrives: the program never holds them."""
    try:
        from runner.child import warmup

        warmup.warm_cuda(triton_kernel, lock_fds or ())
        return None
    except Exception as e:  # noqa: BLE001 - any failure of the warm-up is the harness's, said by the caller
        return f"{type(e).__name__}: {e}"[:500]
    finally:
        close_fds(lock_fds or [])


def close_fds(fds: list[int]) -> None:
    for fd in fds:
        try:
            os.close(fd)
        except OSError:
            pass


def parse_fds(text: str) -> list[int]:
    """`--gpu-lock-fds` (comma-separated descriptors; empty: none)."""
    return [int(part) for part in text.split(",") if part.strip()]


NPROC_BACKSTOP_FACTOR = 4  # the user's task limit: this many times the job's process limit beyond its count


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
    if os.getuid() != 0:  # a backstop: the parent's count of the job's processes (nproc_extra) stops it first.
        # RLIMIT_NPROC counts every task of the user on the host, and other jobs' candidates share the uid: with
        # only nproc_extra of room, their new threads kept a fork bomb under the parent's limit until its timeout
        _limit(resource.RLIMIT_NPROC, _user_tasks(os.getuid()) + NPROC_BACKSTOP_FACTOR * options.nproc_extra)
    if device == "cpu":  # CUDA maps large private regions; there the parent's RSS watchdog is the limit
        _limit(resource.RLIMIT_DATA, options.memory_limit_bytes)


def cuda_cpu_threads(options: EvalOptions) -> int:
    """Torch's CPU threads in a CUDA job: a few. Inputs are made and programs do host work on the CPU, and jobs
    and warming spares of every GPU share the host's cores; torch's default (one thread per core in every
    process) oversubscribes them, and its spinning thread pools then turn milliseconds of host work into
    seconds. `TLX_RUNNER_CPU_THREADS`, read by the runner and sent in `options.cpu_threads`, overrides."""
    from common.settings import child_cpu_threads

    return child_cpu_threads(options.cpu_threads)


def synchronize() -> None:
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


def exit_now(code: int) -> None:
    """Flush the standard streams and leave with os._exit, so that nothing the program left behind (threads,
    atexit hooks) can hang the process or change what it reported."""
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except Exception:
            pass
    os._exit(int(code))
