"""The judge's handle on its candidate process (`runner.child.candidate`): start it, send commands, read answers.

The candidate is forked from the judge once the judge has imported torch and triton, before either touches CUDA
(`runner.child.fork`: it starts with them imported, and warms its CUDA stack beside the judge), in the judge's
process group (the sandbox's kill and memory watch cover it), with only its end of the socket
pair: the judge's verdict channel, spec pipe and memory are out of its reach. Where the judge runs as root, the
candidate runs as an unprivileged user (`TLX_RUNNER_CANDIDATE_UID`, default 65534 "nobody"; `same` keeps the
judge's) with no supplementary groups and no way to gain privileges (no_new_privs, set on the judge before the
start and inherited), so it cannot read the judge's /proc files or signal it. Its folder (HOME, TMPDIR, cwd) is
`<job>/candidate`."""

from __future__ import annotations

import ctypes
import ctypes.util
import importlib.util
import os
import signal
import socket
import stat
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from common.outcomes import ErrorType
from common.settings import CANDIDATE_UID_ENV
from runner.child.candidate import main as candidate_main
from runner.child.fork import fork_candidate
from runner.child.link import LinkError, decode_outputs, receive, send
from runner.child.process import close_fds
from runner.child.steps import Stop
from runner.protocol import EVENT, EXCLUSIVE, GATE, GO, RELEASE, SHARED
from runner.result import RunResult

NOBODY = 65534
PR_SET_NO_NEW_PRIVS = 38
EXIT_WAIT_S = 5.0


def _others_can_reach(path: str, read: bool = True) -> bool:
    """Whether a user who owns nothing on the way can reach `path` (every folder above it searchable) and, when
    `read`, read it."""
    real = os.path.realpath(path)
    try:
        if read and not os.stat(real).st_mode & stat.S_IROTH:
            return False
        parent = os.path.dirname(real)
        while True:
            if not os.stat(parent).st_mode & stat.S_IXOTH:
                return False
            if parent == os.path.dirname(parent):
                return True
            parent = os.path.dirname(parent)
    except OSError:
        return False


def _runtime_paths() -> list[str]:
    """The interpreter and the folders of the packages the candidate imports, found without importing them: an
    import of torch here delayed the candidate's start, and so every job's, by the 4-5 s it takes on an H200."""
    folders = []
    for name in ("runner", "torch", "triton"):
        spec = importlib.util.find_spec(name)
        if spec is None or not spec.submodule_search_locations:
            raise ModuleNotFoundError(f"the candidate needs {name}, which is not installed")
        folders.append(list(spec.submodule_search_locations)[0])
    return [sys.executable, *folders]


def candidate_identity(work: Path, env: dict[str, str] | None = None) -> tuple[tuple[int, int] | None, str]:
    """((uid, gid) the candidate runs as, or None to keep the judge's; why). The judge's user is kept when it is
    not root, when `TLX_RUNNER_CANDIDATE_UID=same`, or when the interpreter, the packages it needs or the folder
    that holds the job folders (`work`'s grandparent; the judge opens the rest) are out of an unprivileged user's
    reach (a Python under /root, a work root under a private temp folder)."""
    raw = (os.environ if env is None else env).get(CANDIDATE_UID_ENV, "").strip().lower()
    if os.geteuid() != 0:
        return None, "the judge is not root: the candidate runs as the same user"
    if raw in ("same", "none"):
        return None, f"{CANDIDATE_UID_ENV}={raw}: the candidate runs as the judge's user"
    unreachable = [p for p in _runtime_paths() if not _others_can_reach(p)]
    unreachable += [] if _others_can_reach(str(work.parent.parent), read=False) else [str(work.parent.parent)]
    if unreachable:
        return None, f"{unreachable[0]} is out of an unprivileged user's reach: the candidate runs as root"
    uid = int(raw) if raw.isdigit() else NOBODY
    return (uid, uid), f"the candidate runs as uid {uid}"


def _no_new_privs() -> None:
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6", use_errno=True)
        libc.prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0)
    except (OSError, AttributeError):
        pass


def open_for(path: Path, identity: tuple[int, int] | None, replace: bool = False) -> None:
    """Let the candidate's user read `path` (a file, or a folder with all it holds) and write in its folders,
    whatever the runner's umask made them (on the H200 the runner's files were the owner's alone). Folders are
    sticky (the candidate cannot remove or replace the judge's files) unless `replace`: the job's Triton cache,
    seeded with the judge's copies of the program's entries, in which Triton replaces files (a sticky cache failed
    every warm re-run on the H200 with `PermissionError` in `os.replace`)."""
    if identity is None:
        return
    paths = [path] if path.is_file() else [path, *path.rglob("*")]
    folder_mode = 0o777 if replace else 0o1777
    for p in paths:
        try:
            if not p.is_symlink():
                os.chmod(p, folder_mode if p.is_dir() else 0o644)
        except OSError:
            pass


class CandidateProcess:
    def __init__(self, work: Path, lock_fds: list[int] | None = None) -> None:
        """Start the candidate's process in `work`; `lock_fds`: the GPU's host lock (main, intent) for its warm-up,
        handed over (closed here)."""
        lock_fds = list(lock_fds or [])
        self.warm_up_s: dict[str, float] = {}  # its warm-up's steps, once it has said it is ready (`ready`)
        self.identity, self.identity_note = candidate_identity(work)
        self.judge_private = False  # whether the judge made itself non-dumpable (`runner.child.separation`)
        self.capabilities = "not reported"  # what the candidate said of its capabilities at `finish`
        self.folder = work / "candidate"
        self.folder.mkdir(exist_ok=True)
        if self.identity is not None:
            for folder in (work.parent, work):  # traversable, not listable
                try:
                    os.chmod(folder, 0o711)
                except OSError:
                    pass
            open_for(self.folder, self.identity)
            _no_new_privs()
        judge_end, candidate_end = socket.socketpair()
        env = {**os.environ, "HOME": str(self.folder), "TMPDIR": str(self.folder), "TRITON_HOME": str(self.folder)}
        argv = ["--fd", str(candidate_end.fileno()), "--parent-pid", str(os.getpid()),
                "--gpu-lock-fds", ",".join(map(str, lock_fds))]
        try:
            self.proc = fork_candidate(candidate_main, argv, [candidate_end.fileno(), *lock_fds], self.identity,
                                       self.folder, env)
        finally:
            candidate_end.close()
            close_fds(lock_fds)
        self.stage = "starting"  # the judge's stage, named when the candidate dies
        self.given_back: str | None = None  # the gate mode the candidate gave back for a compile
        self.sock = judge_end
        self.rd, self.wr = judge_end.makefile("rb"), judge_end.makefile("wb")

    @property
    def uid(self) -> int:
        return self.identity[0] if self.identity else os.geteuid()

    def request(self, cmd: str, **fields: Any) -> dict[str, Any]:
        """Send one command and read its answer's header (`ask` then `answer`)."""
        self.ask(cmd, **fields)
        return self.answer()

    def ask(self, cmd: str, **fields: Any) -> None:
        """Send a command, with the gate mode the judge holds for it (the candidate may give it back)."""
        from runner.gpu.gate import current

        self.given_back = None
        try:
            send(self.wr, {"cmd": cmd, "held": current().held_mode, **fields})
        except OSError as exc:
            raise Stop(self.broken(exc)) from None

    def answer(self) -> dict[str, Any]:
        """The next answer's header; a failure the candidate reports raises Stop with it as the verdict, and so
        does a dead or broken candidate, with the crash as the verdict. While the command runs, the candidate may
        give the GPU gate back for a compile and ask for it again (`{"event": "gate", "mode": ...}`): the judge
        relays that to its own gate (`relay`) and answers `go` once the gate is held again."""
        try:
            header = receive(self.rd)
            while header.get(EVENT) == GATE:
                self._relay(header.get("mode"))
                header = receive(self.rd)
        except (LinkError, OSError) as exc:
            raise Stop(self.broken(exc)) from None
        if header.get("ok") is not True:
            raise Stop(_failure(header.get("failure")))
        return header

    def _relay(self, mode: Any) -> None:
        from runner.gpu.gate import current

        if mode == RELEASE:
            self.given_back = current().give_back() or self.given_back
            return
        if mode in (SHARED, EXCLUSIVE):
            current().take_again(self.given_back or mode)  # never more than the judge held
            self.wr.write(GO + b"\n")
            self.wr.flush()

    def outputs(self, header: dict[str, Any], device: str, max_bytes: int, ipc: bool = False) -> list[Any]:
        try:
            return decode_outputs(self.rd, header, device, max_bytes, ipc)
        except (LinkError, OSError) as exc:
            raise Stop(self.broken(exc)) from None

    def broken(self, exc: Exception) -> RunResult:
        """The verdict when the link broke: the candidate's death (by signal: `crashed`) or its protocol error."""
        code = self._exit_code()
        if code is not None and code < 0:
            try:
                name = signal.Signals(-code).name
            except ValueError:
                name = f"signal {-code}"
            error_type = ErrorType.TIMEOUT if -code == signal.SIGXCPU else ErrorType.CRASHED
            return RunResult.failed(error_type, f"the candidate process was killed by {name} during '{self.stage}'",
                                    exception=name, flags=["candidate_crashed"])
        if code is not None:
            return RunResult.failed(ErrorType.CRASHED, f"the candidate process exited with status {code} without a "
                                    f"verdict during '{self.stage}'", exception=f"exit {code}",
                                    flags=["candidate_crashed"])
        self.kill()
        return RunResult.failed(ErrorType.RUNTIME_ERROR, f"the candidate process broke the link: {exc}",
                                flags=["candidate_protocol_error"])

    def _exit_code(self) -> int | None:
        try:
            return self.proc.wait(EXIT_WAIT_S)
        except subprocess.TimeoutExpired:
            return None

    def kill(self) -> None:
        """End the candidate. In the job's isolation the judge may not signal another user's process (no
        CAP_KILL): closing the link ends it then (its answer loop reads end of file), and its parent-death signal
        and the job's PID namespace end it at the latest with the judge."""
        if self.proc.poll() is not None:
            return
        try:
            self.proc.kill()
        except PermissionError:
            self.sock.close()
        try:
            self.proc.wait(EXIT_WAIT_S)
        except subprocess.TimeoutExpired:
            pass

    def ready(self) -> None:
        """Wait until the candidate has warmed up; keep its warm-up's steps in wall seconds (`warmup.durations`,
        each key prefixed `candidate_`) in `warm_up_s`."""
        answer = self.request("ready", asked_at=time.time())
        steps = answer.get("warm_up_s") if isinstance(answer.get("warm_up_s"), dict) else {}
        self.warm_up_s = {f"candidate_{k}": float(v) for k, v in list(steps.items())[:8]
                          if isinstance(k, str) and isinstance(v, (int, float)) and not isinstance(v, bool)}

    def finish(self) -> tuple[list[str], dict[str, float]]:
        """Ask for the candidate's own flags and CPU seconds (warm-up, job), and end it."""
        try:
            answer = self.request("finish")
        except Stop:
            answer = {}
        self.kill()
        if isinstance(answer.get("capabilities"), str):
            self.capabilities = answer["capabilities"][:200]
        flags = answer.get("flags") if isinstance(answer.get("flags"), list) else []
        cpu = answer.get("cpu_s") if isinstance(answer.get("cpu_s"), dict) else {}
        cpu = {k: float(cpu[k]) for k in ("candidate_warm", "candidate_job")
               if isinstance(cpu.get(k), (int, float)) and not isinstance(cpu.get(k), bool)}
        return [str(f) for f in flags if isinstance(f, str)][:50], cpu


def _failure(raw: Any) -> RunResult:
    """A failure the candidate reported, as a verdict (only known error types; bounded texts)."""
    raw = raw if isinstance(raw, dict) else {}
    try:
        error_type = ErrorType(raw.get("error_type"))
    except ValueError:
        error_type = ErrorType.RUNTIME_ERROR
    if error_type is ErrorType.OK:
        error_type = ErrorType.RUNTIME_ERROR
    text = {k: str(raw[k])[:limit] if raw.get(k) is not None else None
            for k, limit in (("message", 4000), ("exception", 200), ("traceback", 8000))}
    return RunResult.failed(error_type, text["message"] or "the candidate failed", exception=text["exception"],
                            traceback=text["traceback"], flags=["harness_error"] if raw.get("harness") else [])
