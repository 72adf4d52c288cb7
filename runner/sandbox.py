"""`evaluate_in_sandbox`: the only way the project runs dataset code (design §4, "Isolation").

One fresh subprocess per call, in its own session (killed as a group), in a fresh temp dir that is its HOME,
cwd and TMPDIR, with a scrubbed environment, resource limits (set by the child itself), an RSS watchdog,
capped stdout/stderr and a wall-clock timeout. The verdict comes back over a private pipe, never from stdout.
Timeouts, crashes and memory kills are results; this function does not raise for a verdict."""

from __future__ import annotations

import datetime as dt
import hashlib
import json
import os
import shutil
import signal
import site
import subprocess
import sys
import tempfile
import threading
import time
from collections import deque
from pathlib import Path
from typing import Any

from runner.options import EvalOptions
from runner.result import ErrorType, RunResult
from runner.system import collect_system

REPO_ROOT = Path(__file__).resolve().parent.parent
POLL_S = 0.1
KEEP_ENV = ("PATH", "LD_LIBRARY_PATH", "CUDA_VISIBLE_DEVICES", "CUDA_HOME", "CUDA_PATH", "OMP_NUM_THREADS",
            "MKL_NUM_THREADS", "NVIDIA_VISIBLE_DEVICES", "NVIDIA_DRIVER_CAPABILITIES")
KEEP_PREFIXES = ("TRITON_", "NCCL_", "TORCH_", "PYTORCH_")
SET_BY_US = ("TRITON_INTERPRET", "TRITON_CACHE_DIR", "TRITON_HOME")
TAIL_CHARS = 3000
STACKS_SIGNAL = signal.SIGUSR1  # runner.child registers faulthandler on it
STACKS_WAIT_S = 0.5


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


class _Channel(threading.Thread):
    """Reads the child's JSON-lines result channel: last stage seen and the final result."""

    def __init__(self, fd: int) -> None:
        super().__init__(daemon=True)
        self.file = os.fdopen(fd, "rb")
        self.stage = "starting"
        self.result: dict[str, Any] | None = None

    def run(self) -> None:
        for line in self.file:
            try:
                event = json.loads(line)
            except ValueError:
                continue
            if event.get("event") == "stage":
                self.stage = str(event.get("stage"))
            elif event.get("event") == "result" and isinstance(event.get("result"), dict):
                self.result = event["result"]
        self.file.close()


def _group_rss_bytes(pgid: int) -> int:
    total = 0
    for pid in os.listdir("/proc"):
        if not pid.isdigit():
            continue
        try:
            with open(f"/proc/{pid}/stat") as fh:
                fields = fh.read().rsplit(")", 1)[1].split()
            if int(fields[2]) != pgid:  # fields after "(comm)": state ppid pgrp ...
                continue
            with open(f"/proc/{pid}/statm") as fh:
                total += int(fh.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
        except (OSError, IndexError, ValueError):
            continue
    return total


def _child_env(work: Path, options: EvalOptions, cache_dir: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k in KEEP_ENV or k.startswith(KEEP_PREFIXES)}
    for k in SET_BY_US:
        env.pop(k, None)
    env.update(
        HOME=str(work), TMPDIR=str(work), LANG="C.UTF-8", PYTHONHASHSEED="0", PYTHONDONTWRITEBYTECODE="1",
        PYTHONUSERBASE=site.getuserbase(), PYTHONPATH=str(REPO_ROOT), PYTHONUNBUFFERED="1",
        TRITON_CACHE_DIR=str(cache_dir), TRITON_HOME=str(work),
    )
    env.setdefault("PATH", os.defpath)
    if options.visible_devices is not None:
        env["CUDA_VISIBLE_DEVICES"] = options.visible_devices
    if options.device == "cpu":
        env["TRITON_INTERPRET"] = "1"
        env["CUDA_VISIBLE_DEVICES"] = ""
    return env


def _kill_group(pgid: int) -> None:
    try:
        os.killpg(pgid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass


def _dump_stacks(proc: subprocess.Popen) -> None:
    """Ask a hung child for its Python stacks (faulthandler writes them to stderr) before the kill."""
    try:
        proc.send_signal(STACKS_SIGNAL)
        proc.wait(timeout=STACKS_WAIT_S)
    except (OSError, subprocess.TimeoutExpired):
        pass


def _signal_name(num: int) -> str:
    try:
        return signal.Signals(num).name
    except ValueError:
        return f"signal {num}"


def evaluate_in_sandbox(program: str, options: EvalOptions, *, result_id: str, row_id: str | None = None) -> RunResult:
    """Evaluate `program` (the text of one dataset row) in a fresh sandboxed subprocess."""
    started = time.monotonic()
    sha = hashlib.sha256(program.encode("utf-8", errors="surrogatepass")).hexdigest()
    root = Path(tempfile.mkdtemp(prefix="tlx-run-", dir=options.work_root))
    try:
        work = root / "work"
        work.mkdir()
        path = work / "program.py"
        path.write_text(program, encoding="utf-8", errors="surrogatepass")
        if options.triton_cache_dir:
            cache_dir = Path(options.triton_cache_dir) / sha[:16]
        else:
            cache_dir = root / "triton-cache"
        cache_dir.mkdir(parents=True, exist_ok=True)
        verdict = _run_child(path, options, _child_env(work, options, cache_dir), work)
    except OSError as exc:  # the sandbox itself could not be set up (disk full, no fork): still a verdict
        verdict = {"status": "failed", "error_type": ErrorType.CRASHED.value, "flags": ["sandbox_error"],
                   "message": f"could not start the sandbox: {exc}", "exception": type(exc).__name__}
    finally:
        shutil.rmtree(root, ignore_errors=True)
    verdict.setdefault("trials", options.trials)
    verdict.setdefault("device", {"cpu": "cpu-interpreter"}.get(options.device, options.device))
    if not verdict.get("system"):
        verdict["system"] = collect_system(probe_gpu=False)
    fields = RunResult.__dataclass_fields__
    return RunResult.from_dict({
        **{k: v for k, v in verdict.items() if k in fields},
        "id": result_id, "row_id": row_id, "program_sha256": sha,
        "duration_s": round(time.monotonic() - started, 3),
        "finished_at": dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
    })


def _run_child(path: Path, options: EvalOptions, env: dict[str, str], work: Path) -> dict[str, Any]:
    read_fd, write_fd = os.pipe()
    cmd = [sys.executable, "-P", "-m", "runner.child", "--program", str(path),
           "--options", json.dumps(options.to_dict()), "--result-fd", str(write_fd)]
    try:
        proc = subprocess.Popen(cmd, cwd=work, env=env, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, pass_fds=(write_fd,), start_new_session=True)
    except OSError:
        os.close(read_fd)
        raise
    finally:
        os.close(write_fd)
    channel = _Channel(read_fd)
    out, err = (_Capture(proc.stdout, options.output_cap_bytes), _Capture(proc.stderr, options.output_cap_bytes))
    for t in (channel, out, err):
        t.start()
    deadline = time.monotonic() + options.timeout_s
    killed_for: str | None = None
    peak_rss = 0
    while proc.poll() is None:
        if time.monotonic() > deadline:
            killed_for = "timeout"
        else:
            peak_rss = max(peak_rss, _group_rss_bytes(proc.pid))
            if peak_rss > options.memory_limit_bytes:
                killed_for = "memory"
        if killed_for:
            if killed_for == "timeout":
                _dump_stacks(proc)
            _kill_group(proc.pid)
            proc.wait()
            break
        time.sleep(POLL_S)
    _kill_group(proc.pid)  # whatever the program left running in its session goes too
    for t in (channel, out, err):
        t.join(timeout=5)
    return _verdict(proc.returncode, killed_for, channel, err, options, peak_rss)


def _verdict(code: int, killed_for: str | None, channel: _Channel, err: _Capture, options: EvalOptions,
             peak_rss: int) -> dict[str, Any]:
    stderr_tail = err.text_tail() or None
    if channel.result is not None and killed_for is None:
        return channel.result
    stage = channel.stage
    if killed_for == "timeout":
        return {"status": "failed", "error_type": ErrorType.TIMEOUT.value, "traceback": stderr_tail,
                "message": f"no verdict after {options.timeout_s:g} s; killed during '{stage}'"}
    if killed_for == "memory":
        return {"status": "failed", "error_type": ErrorType.OUT_OF_MEMORY.value, "traceback": stderr_tail,
                "message": f"host memory {peak_rss / 2**20:.0f} MiB over the limit of "
                           f"{options.memory_limit_bytes / 2**20:.0f} MiB; killed during '{stage}'"}
    if code < 0:
        sig = _signal_name(-code)
        error_type = ErrorType.TIMEOUT if -code == signal.SIGXCPU else ErrorType.CRASHED
        hint = " (possibly the kernel's OOM killer)" if -code == signal.SIGKILL else ""
        return {"status": "failed", "error_type": error_type.value, "exception": sig, "traceback": stderr_tail,
                "message": f"killed by {sig}{hint} during '{stage}'"}
    return {"status": "failed", "error_type": ErrorType.CRASHED.value, "traceback": stderr_tail,
            "exception": f"exit {code}", "message": f"exited with status {code} without a verdict during '{stage}'"}
