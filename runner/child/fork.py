"""The candidate's process forked from the judge's (issue 43): the judge has imported torch and triton (no CUDA
yet) when it forks, so the candidate starts with them imported instead of spending 4-5 CPU-s importing them again.

The forked process becomes what `python -P -m runner.child.candidate` would have been before it runs anything of
the job: every descriptor closed but its end of the socket pair and its host-lock descriptors, stdin from
/dev/null, the candidate's environment and folder, the candidate's user (`identity`: groups, gid, uid; then
dumpable again, as a fresh program of that user would be), and its warm-up clock restarted. The fork happens
before the judge reads its job spec, so nothing of the job (the channel key) is in the memory it copies; the
judge's process holds no thread then (`threading.active_count() == 1` is checked: a fork beside threads may copy a
held lock). `ForkedProcess` is the judge's handle, with what the judge used of `subprocess.Popen`."""

from __future__ import annotations

import gc
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path

from runner.child import separation, warmup
from runner.child.process import exit_now

POLL_S = 0.01


class ForkedProcess:
    """A child of this process, waited for with `waitpid` (`poll`, `wait`, `kill`, `returncode` as in Popen:
    negative for a signal)."""

    def __init__(self, pid: int) -> None:
        self.pid = pid
        self.returncode: int | None = None

    def poll(self) -> int | None:
        if self.returncode is None:
            try:
                done, status = os.waitpid(self.pid, os.WNOHANG)
            except ChildProcessError:
                self.returncode = -signal.SIGKILL  # reaped elsewhere: it is gone, how is unknown
                return self.returncode
            if done:
                self.returncode = os.waitstatus_to_exitcode(status)
        return self.returncode

    def wait(self, timeout: float | None = None) -> int:
        end = None if timeout is None else time.monotonic() + timeout
        while self.poll() is None:
            if end is not None and time.monotonic() > end:
                raise subprocess.TimeoutExpired(f"pid {self.pid}", timeout or 0)
            time.sleep(POLL_S)
        return self.returncode  # type: ignore[return-value]

    def kill(self) -> None:
        if self.poll() is None:
            os.kill(self.pid, signal.SIGKILL)


def _keep_only(fds: set[int]) -> None:
    for name in os.listdir("/proc/self/fd"):
        fd = int(name)
        if fd > 2 and fd not in fds:
            try:
                os.close(fd)
            except OSError:
                pass


def _become(identity: tuple[int, int] | None, folder: Path, env: dict[str, str]) -> None:
    null = os.open(os.devnull, os.O_RDONLY)
    os.dup2(null, 0)
    os.close(null)
    if identity is not None:
        os.setgroups([])
        os.setgid(identity[1])
        os.setuid(identity[0])
        separation.set_dumpable(True)  # a change of user made it non-dumpable; a program started as that user is not
    os.chdir(folder)
    os.environ.clear()
    os.environ.update(env)


def fork_candidate(run: Callable[[list[str]], int], argv: list[str], keep_fds: list[int],
                   identity: tuple[int, int] | None, folder: Path, env: dict[str, str]) -> ForkedProcess:
    """Fork the candidate: in the child, become it and `run(argv)` (the candidate's `main`), then leave with its
    status; here, its handle."""
    if threading.active_count() != 1:
        raise RuntimeError(f"the judge forks its candidate with {threading.active_count()} threads running")
    sys.stdout.flush()
    sys.stderr.flush()
    gc.freeze()  # the collector would write to every object's header: each page copied in the child
    pid = os.fork()
    if pid == 0:
        exit_now(_child(run, argv, keep_fds, identity, folder, env))
    return ForkedProcess(pid)


def _child(run: Callable[[list[str]], int], argv: list[str], keep_fds: list[int],
           identity: tuple[int, int] | None, folder: Path, env: dict[str, str]) -> int:
    try:
        _keep_only(set(keep_fds))
        _become(identity, folder, env)
        warmup.restart()
        sys.argv = ["runner.child.candidate", *argv]
        return run(argv)
    except BaseException as exc:  # nothing may return into the judge's code in this process
        try:
            print(f"runner.child.fork: the candidate could not start: {type(exc).__name__}: {exc}",
                  file=sys.stderr)
        except Exception:
            pass
        return 1
