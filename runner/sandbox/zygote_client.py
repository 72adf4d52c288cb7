"""The runner's side of the fork server (`runner.sandbox.zygote`): one server per launch configuration, started
by the spawner thread (its parent-death signal is tied to that thread), asked for a judge per job.

Used where the job's isolation has namespaces and the runner is root (joining them needs CAP_SYS_ADMIN), unless
`TLX_RUNNER_FORKSERVER=0`. A job whose judge the server could not start starts it as a program; a server that
fails its first start is not asked again (`broken`, shown in /health). `ForkedJudge` is a job's judge: its pid (the host's), its exit
status once it has ended."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import threading
from dataclasses import dataclass, field

START_S = 30.0  # for the judge to be started in the job's isolation (the door found, the namespaces joined)


@dataclass
class ForkedJudge:
    pid: int | None = None
    exit_code: int | None = None
    error: str | None = None
    started: threading.Event = field(default_factory=threading.Event)
    ended: threading.Event = field(default_factory=threading.Event)


class ForkServer:
    def __init__(self, env: dict[str, str]) -> None:
        ours, theirs = socket.socketpair()
        self.proc = subprocess.Popen([sys.executable, "-P", "-m", "runner.sandbox.zygote", "--fd",
                                      str(theirs.fileno()), "--parent-pid", str(os.getpid())], env=env, cwd="/",
                                     pass_fds=(theirs.fileno(),), stdin=subprocess.DEVNULL,
                                     stdout=subprocess.DEVNULL, start_new_session=True)
        theirs.close()
        self.sock = ours
        self.broken: str | None = None
        self.started_any = False
        self._jobs: dict[int, ForkedJudge] = {}
        self._next = 0
        self._lock = threading.Lock()
        threading.Thread(target=self._read, name="tlx-forkserver-reader", daemon=True).start()

    def _read(self) -> None:
        for line in self.sock.makefile("rb"):
            try:
                msg = json.loads(line)
                judge = self._jobs[int(msg["job"])]
            except (ValueError, KeyError, TypeError):
                continue
            if "pid" in msg:
                judge.pid = int(msg["pid"])
                judge.started.set()
            elif "exit" in msg or "error" in msg:
                judge.error = str(msg["error"]) if "error" in msg else None
                judge.exit_code = int(msg["exit"]) if "exit" in msg else None
                with self._lock:
                    self._jobs.pop(int(msg["job"]), None)
                judge.started.set()
                judge.ended.set()
        self.broken = self.broken or "the fork server ended"
        with self._lock:
            left, self._jobs = list(self._jobs.values()), {}
        for judge in left:
            judge.error = judge.error or self.broken
            judge.started.set()
            judge.ended.set()

    def fork_judge(self, outer_pid: int, depth: int, fds: list[int], procs: list[str],
                   argv: list[str]) -> ForkedJudge:
        """A judge forked into the isolation whose outer process is `outer_pid`; raises OSError where it did not
        start (the server is then `broken`)."""
        judge = ForkedJudge()
        with self._lock:
            job, self._next = self._next, self._next + 1
            self._jobs[job] = judge
        request = {"job": job, "outer": outer_pid, "depth": depth, "fds": fds, "procs": procs, "argv": argv}
        try:
            self.sock.sendall(json.dumps(request).encode() + b"\n")
        except OSError as exc:
            self.broken = f"the fork server is gone: {exc}"
            raise OSError(self.broken) from None
        if not judge.started.wait(START_S) or judge.pid is None:
            why = judge.error or f"no judge within {START_S:g} s"
            if not self.started_any:  # it never worked here: it is not asked again
                self.broken = why
            raise OSError(f"the fork server did not start the judge: {why}")
        self.started_any = True
        return judge

    def idle(self) -> bool:
        """Whether no judge of this server is running (closing the server kills its judges)."""
        with self._lock:
            return not self._jobs

    def close(self) -> None:
        try:
            self.sock.close()
        finally:
            self.proc.kill()
            self.proc.wait()


def wanted(isolated: bool, enabled: bool) -> str | None:
    """None where jobs' judges are forked from a server here, else why not (`enabled`: TLX_RUNNER_FORKSERVER)."""
    if not enabled:
        return "TLX_RUNNER_FORKSERVER=0"
    if not isolated:
        return "no isolation with namespaces to join"
    if os.geteuid() != 0:
        return "the runner is not root: joining a job's namespaces needs CAP_SYS_ADMIN"
    if not hasattr(os, "pidfd_open"):
        return "this Python has no os.pidfd_open"
    return None
