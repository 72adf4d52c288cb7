"""A warm triage worker: `python -P -m runner.triage.worker --target sm_90 ...`, started inside the job isolation
(`runner.triage.pool`), imports torch and triton once, installs the stand-in GPU, triages its warm-up program
(`runner.triage.warm_up`: torch's and Triton's first-use work, done once here instead of in every child), then
forks a fresh child per program.

Requests on stdin, one JSON line each: `{"path": PROGRAM}`; answers on stdout, one JSON line each: the triage's
fields (`runner.triage.program`). Each child:
- is a copy of the warm state (no program has run in it: programs never see each other's memory);
- runs as the user GPU jobs' candidates run as (`runner.child.candidate_client.candidate_identity`: uid 65534
  where the worker is root and the interpreter is within that user's reach), in a process group of its own, with its
  stdout and stderr on /dev/null (the answers' pipe is the worker's alone) and its writes under the job's folder;
- is ended at `--timeout` or when its resident memory passes `--memory-mb` (`not_triaged`: the triage's limits
  say nothing of the program on a GPU), or by a signal (`crashed`); every process it left is killed before the next
  program starts.
Triton's cache folder is shared by the worker's children: a kernel compiled for one program is a cache hit for
the next with the same source and specialization.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import select
import signal
import sys
import time
import warnings
from pathlib import Path

from runner.child.candidate_client import candidate_identity
from runner.child.separation import drop_capabilities
from runner.procfs import stat_fields

NOBODY = 65534
POLL_S = 0.05


def _child(path: str, result_w: int, identity: tuple[int, int] | None) -> None:
    """In the forked child: drop privileges, triage, write the result, exit without cleanup."""
    code = 0
    try:
        os.setpgid(0, 0)
        devnull = os.open(os.devnull, os.O_RDWR)
        for fd in (0, 1, 2):
            os.dup2(devnull, fd)
        if identity is not None:  # root to another user: the kernel clears every capability
            os.setgroups([])
            os.setgid(identity[1])
            os.setuid(identity[0])
        else:  # the worker's user: not its capabilities (CAP_KILL would reach the worker)
            drop_capabilities()
        from runner.triage.program import triage

        result = triage(path)
        children = resource.getrusage(resource.RUSAGE_CHILDREN)  # ptxas runs as a child process
        result["cpu_s"] = round(time.process_time() + children.ru_utime + children.ru_stime, 4)
        data = json.dumps(result).encode() + b"\n"
    except BaseException as exc:  # noqa: BLE001 - anything here is the harness's failure, said as such
        data = json.dumps({"triage_status": "not_triaged", "error_type": None,
                           "reason": f"triage harness failed: {type(exc).__name__}: {exc}"[:600]}).encode() + b"\n"
        code = 1
    try:
        while data:
            data = data[os.write(result_w, data):]
    finally:
        os._exit(code)


def _rss_mb(pid: int) -> float:
    try:
        with open(f"/proc/{pid}/statm") as fh:
            return int(fh.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20
    except (OSError, IndexError, ValueError):
        return 0.0


def _kill_strays(keep: int, isolated: bool) -> None:
    """Kill what a child left behind, whatever its session: inside the isolation's PID namespace every process but
    its init and the worker; outside it, the unprivileged user's processes (root) or the worker's descendants."""
    for name in os.listdir("/proc"):
        if not name.isdigit() or int(name) in (keep, 1, os.getppid()):
            continue
        pid = int(name)
        try:
            if isolated or (_uid(pid) == NOBODY if os.getuid() == 0 else _is_descendant(pid, keep)):
                os.kill(pid, signal.SIGKILL)
        except (OSError, ValueError):
            pass


def _uid(pid: int) -> int:
    with open(f"/proc/{pid}/status") as fh:
        return int(next(line.split()[1] for line in fh if line.startswith("Uid:")))


def _is_descendant(pid: int, ancestor: int) -> bool:
    for _ in range(64):
        try:
            pid = int(stat_fields(pid)[1])
        except (OSError, ValueError, IndexError):
            return False
        if pid == ancestor:
            return True
        if pid <= 1:
            return False
    return False


def _wait(pid: int, result_r: int, timeout_s: float, memory_mb: float) -> dict:
    """The child's answer: one line on the pipe (what it started may hold the pipe open after it exits)."""
    data, deadline, status, code = b"", time.monotonic() + timeout_s, None, None
    while b"\n" not in data:
        ready, _, _ = select.select([result_r], [], [], POLL_S)
        chunk = os.read(result_r, 1 << 16) if ready else None
        if chunk:
            data += chunk
            continue
        if code is None:
            done, status_code = os.waitpid(pid, os.WNOHANG)
            code = status_code if done else None
        if chunk == b"" or code is not None:  # every writer closed, or the child ended without a whole answer
            if code is not None:
                data += _drain(result_r)
            break
        if _rss_mb(pid) > memory_mb:
            status = f"the triage passed its {memory_mb:,.0f} MB"
            break
        if time.monotonic() > deadline:
            status = f"the triage took over {timeout_s:g} s"
            break
    try:
        os.killpg(pid, signal.SIGKILL)
    except OSError:
        pass
    if code is None:
        _, code = os.waitpid(pid, 0)
    if status is not None:  # the triage's own limits: they say nothing of the program on a GPU
        return {"triage_status": "not_triaged", "error_type": None, "stage": None, "reason": status}
    try:
        return json.loads(data.split(b"\n", 1)[0])
    except ValueError:
        sig = os.WTERMSIG(code) if os.WIFSIGNALED(code) else None
        return {"triage_status": "failed", "error_type": "crashed", "stage": None,
                "message": f"the triage's process ended by signal {sig}" if sig else
                f"the triage's process exited with status {os.WEXITSTATUS(code)} without an answer"}


def _drain(fd: int) -> bytes:
    """What the pipe holds now, without waiting for writers that may never close it."""
    data = b""
    while select.select([fd], [], [], 0)[0]:
        chunk = os.read(fd, 1 << 16)
        if not chunk:
            break
        data += chunk
    return data


def triage_forked(path: str, timeout_s: float, memory_mb: float, isolated: bool,
                  identity: tuple[int, int] | None) -> dict:
    result_r, result_w = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.close(result_r)
        _child(path, result_w, identity)
    os.close(result_w)
    try:
        return _wait(pid, result_r, timeout_s, memory_mb)
    finally:
        os.close(result_r)
        _kill_strays(os.getpid(), isolated)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m runner.triage.worker")
    parser.add_argument("--target", default="sm_90")
    parser.add_argument("--timeout", type=float, default=60.0)
    parser.add_argument("--memory-mb", type=float, default=4096.0)
    parser.add_argument("--isolated", action="store_true", help="running in the isolation's PID namespace")
    args = parser.parse_args(argv)
    warnings.simplefilter("ignore")
    cache = os.environ.get("TRITON_CACHE_DIR")
    if cache:
        os.makedirs(cache, exist_ok=True)
        os.chmod(cache, 0o1777)
    import torch  # noqa: F401 - imported once, before the fork, for every child
    import triton

    from runner.triage import program, stand_in  # the children's code, imported and warmed up once

    stand_in.install(args.target)
    out = sys.stdout
    try:
        program.warm_up()
    except RuntimeError as e:  # the pool's start error says why (the worker's stderr goes nowhere)
        out.write(json.dumps({"ready": False, "error": str(e)[:2000]}) + "\n")
        out.flush()
        return 1
    identity, runs_as = candidate_identity(Path.cwd())
    out.write(json.dumps({"ready": True, "torch": torch.__version__, "triton": triton.__version__,
                          "runs_as": runs_as}) + "\n")
    out.flush()
    for line in sys.stdin:
        request = json.loads(line)
        out.write(json.dumps(triage_forked(request["path"], args.timeout, args.memory_mb, args.isolated, identity)) + "\n")
        out.flush()
    return 0


if __name__ == "__main__":
    sys.exit(main())
