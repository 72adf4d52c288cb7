"""The warm workers of a triage run: `TriagePool(workers, target, ...)`, each worker a `runner.triage.worker`
process inside the same operating-system isolation as a GPU job (`runner.sandbox.isolation`: no network, a
read-only host, the runner's folders hidden, only its job folder writable), with no GPU visible.

`pool.triage(program)` writes the program into a free worker's job folder, asks the worker, and returns its answer
with the worker's versions; a worker that died is replaced, and the program is answered `not_triaged` with the
flag `infrastructure` (the harness failed, not the program). Where the host allows no isolation, every result carries
`not_isolated`, as GPU jobs' do.
"""

from __future__ import annotations

import json
import os
import platform
import queue
import shutil
import subprocess
import sys
import threading
from dataclasses import dataclass

from runner.options import EvalOptions
from runner.sandbox import isolation, jobdirs
from runner.sandbox.spares import base_env, hidden_paths, kill_group

START_TIMEOUT_S = 180.0
# a GPU job's capabilities, and CAP_KILL: the worker ends its children (another user's) and what they leave, within
# its own PID namespace; each child drops every capability before the program loads
WORKER_CAPS = (*isolation.KEPT_CAPS, "CAP_KILL")
INFRASTRUCTURE = "infrastructure"


@dataclass(frozen=True)
class TriageSettings:
    target: str = "sm_90"
    timeout_s: float = 60.0  # one program
    memory_mb: float = 4096.0  # one program's resident memory
    hidden_roots: tuple[str, ...] = ()  # the runner's folders kept out of the workers' view (`Settings.job_placement`)


class WorkerDied(RuntimeError):
    pass


class Worker:
    """One warm worker process and its job folder."""

    def __init__(self, settings: TriageSettings):
        self.iso = isolation.current()
        self.root = jobdirs.make_job_dir(None)
        self.work = self.root / "work"
        self.count = 0
        options = EvalOptions(hidden_roots=settings.hidden_roots)
        env = {**base_env(options), "HOME": str(self.work), "TMPDIR": str(self.work), "TRITON_HOME": str(self.work),
               "TRITON_CACHE_DIR": str(self.root / "triton-cache"), "CUDA_VISIBLE_DEVICES": "",
               "PYTHONWARNINGS": "ignore"}
        cmd = [sys.executable, "-P", "-m", "runner.triage.worker", "--target", settings.target,
               "--timeout", str(settings.timeout_s), "--memory-mb", str(settings.memory_mb),
               *(["--isolated"] if self.iso.isolated else [])]
        try:
            wrapped = self.iso.wrap(cmd, self.root, hidden_paths(options), caps=WORKER_CAPS)
            self.proc = subprocess.Popen(wrapped, cwd=self.work, env=env,
                                         stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                                         start_new_session=True, umask=0o022, text=True)
            self.versions = self._ready()
        except BaseException:
            self.close()
            raise

    def _ready(self) -> dict:
        answer = self._answer(START_TIMEOUT_S)
        if not answer.get("ready"):
            raise WorkerDied(f"the triage worker did not start: {answer}")
        return {"torch": answer["torch"], "triton": answer["triton"], "python": platform.python_version()}

    def _answer(self, timeout_s: float) -> dict:
        lines: queue.Queue = queue.Queue()
        reader = threading.Thread(target=lambda: lines.put(self.proc.stdout.readline()), daemon=True)
        reader.start()
        try:
            line = lines.get(timeout=timeout_s)
        except queue.Empty:
            raise WorkerDied(f"the triage worker gave no answer in {timeout_s:g} s") from None
        if not line:
            raise WorkerDied(f"the triage worker ended (exit status {self.proc.wait()})")
        return json.loads(line)

    def triage(self, program: str, timeout_s: float) -> dict:
        self.count += 1
        path = self.work / f"program-{self.count}.py"
        path.write_text(program, encoding="utf-8")
        os.chmod(path, 0o644)
        try:
            self.proc.stdin.write(json.dumps({"path": str(path)}) + "\n")
            self.proc.stdin.flush()
            return self._answer(timeout_s + 30.0)
        except OSError as e:
            raise WorkerDied(f"the triage worker's pipe broke: {e}") from None
        finally:
            path.unlink(missing_ok=True)

    def close(self) -> None:
        proc = getattr(self, "proc", None)
        if proc is not None:
            kill_group(proc.pid)
            proc.wait()
        shutil.rmtree(self.root, ignore_errors=True)


class TriagePool:
    """`workers` warm workers; `triage(program)` is thread-safe (one program per worker at a time)."""

    def __init__(self, workers: int, settings: TriageSettings = TriageSettings()):
        self.settings = settings
        self._idle: queue.Queue[Worker] = queue.Queue()
        self._all: list[Worker] = []
        self._lock = threading.Lock()
        for _ in range(workers):
            self._add()

    def _add(self) -> None:
        worker = Worker(self.settings)
        with self._lock:
            self._all.append(worker)
        self._idle.put(worker)

    @property
    def versions(self) -> dict:
        return self._all[0].versions if self._all else {}

    @property
    def flags(self) -> list[str]:
        return [] if isolation.current().isolated else [isolation.NOT_ISOLATED]

    def triage(self, program: str) -> dict:
        worker = self._idle.get()
        try:
            result = worker.triage(program, self.settings.timeout_s)
        except WorkerDied as e:
            with self._lock:
                self._all.remove(worker)
            worker.close()
            self._add()
            return {"triage_status": "not_triaged", "error_type": None, "stage": None, "reason": str(e),
                    "versions": self.versions, "flags": [INFRASTRUCTURE, *self.flags]}
        self._idle.put(worker)
        return {**result, "versions": worker.versions, "flags": self.flags}

    def close(self) -> None:
        with self._lock:
            workers, self._all = self._all, []
        for worker in workers:
            worker.close()

    def __enter__(self) -> TriagePool:
        return self

    def __exit__(self, *exc) -> None:
        self.close()
