"""Starting sandbox children, with pre-warmed spares per launch configuration (design §4, "Isolation").

A child is `python -P -m runner.child.main`, started in its own session, inside the host's operating-system isolation
(`runner.sandbox.isolation`: namespaces, a read-only filesystem but for its job folder, capabilities dropped) and its
own memory cgroup where one can be made (`runner.sandbox.cgroup`), with an environment built from an allow-list
(`ENV_ALLOWED`: no token, no cloud key reaches it) and a fresh job folder (`runner.sandbox.jobdirs`; `root/work` is
HOME, cwd and TMPDIR). A spare's folder is made when it starts and becomes its job's. It imports torch and
triton (without touching CUDA), then waits for its job spec on a private pipe; it runs exactly one job and exits.
`ChildPool.take` hands out the oldest spare started for the same configuration (isolation mode, environment,
device mode, visible devices, work root, shared cache, write roots) or starts a child, and then starts
replacements in the background (`EvalOptions.spares` per configuration: 2, or one per job sharing the GPU), so the
next job skips process start, imports and CUDA warm-up. All children are started by one long-lived spawner
thread: the child's parent-death signal fires when the thread that started it ends. Spares are killed, and their
job folders removed, by `close_spares()` (registered with atexit)."""

from __future__ import annotations

import atexit
import json
import os
import signal
import site
import subprocess
import sys
import threading
from collections import OrderedDict
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from common.settings import CHILD_ENV
from runner.gpu.cpu_plan import plan_for
from runner.gpu.host_lock import child_descriptors
from runner.options import EvalOptions
from runner.sandbox import isolation, jobdirs, scratch, zygote_client
from runner.sandbox.cgroup import JobCgroup
from runner.sandbox.enter import DOOR
from runner.sandbox.isolation import REPO_ROOT
from runner.sandbox.zygote_client import ForkedJudge, ForkServer

# the child's environment is built from these names only (a prefix such as TORCH_ would pass TORCH_HUB_TOKEN)
ENV_ALLOWED = ("PATH", "LD_LIBRARY_PATH", "CUDA_VISIBLE_DEVICES", "CUDA_HOME", "CUDA_PATH", "OMP_NUM_THREADS",
               *CHILD_ENV, "MKL_NUM_THREADS", "NVIDIA_VISIBLE_DEVICES", "NVIDIA_DRIVER_CAPABILITIES",
               "TRITON_PTXAS_PATH", "TRITON_CUOBJDUMP_PATH", "TRITON_NVDISASM_PATH", "TRITON_LIBCUDA_PATH",
               "TRITON_LIBDEVICE_PATH", "TRITON_CUDART_PATH", "TRITON_PRINT_AUTOTUNING", "TORCH_CUDA_ARCH_LIST",
               "PYTORCH_CUDA_ALLOC_CONF", "PYTORCH_NVML_BASED_CUDA_CHECK", "CUDA_MODULE_LOADING",
               "CUDA_DEVICE_ORDER", "OPENBLAS_NUM_THREADS")
MAX_CONFIGS = 16  # configurations kept warm at once (one per GPU slot is typical); the oldest goes first


def base_env(options: EvalOptions) -> dict[str, str]:
    """The child's environment without its per-child paths: the part that decides which spare fits."""
    env = {k: v for k, v in os.environ.items() if k in ENV_ALLOWED}
    env.update(LANG="C.UTF-8", PYTHONHASHSEED="0", PYTHONDONTWRITEBYTECODE="1", PYTHONUSERBASE=site.getuserbase(),
               PYTHONPATH=str(REPO_ROOT), PYTHONUNBUFFERED="1")
    env.setdefault("PATH", os.defpath)
    # numpy's OpenBLAS starts a thread per core when torch imports it, and they spin: on an H200's 16 cores that
    # was 2 of the 4.8 CPU-s of `import torch` in every process, two processes a job (the jobs use torch, not
    # numpy's BLAS)
    env.setdefault("OPENBLAS_NUM_THREADS", "1")
    if options.visible_devices is not None:
        env["CUDA_VISIBLE_DEVICES"] = options.visible_devices
    if options.device == "cpu":
        env["TRITON_INTERPRET"] = "1"
        env["CUDA_VISIBLE_DEVICES"] = ""
    return env


def hidden_paths(options: EvalOptions) -> list[str]:
    """The runner's folders named by its settings (`options.hidden_roots`: runs dir with the service's token
    file, store, cache dir), the shared Triton cache and the folder of all job folders: out of the job's view, which
    shows only what the child needs (`isolation.plan`), and covered where they lie inside what it shows."""
    return [str(p) for p in (*options.hidden_roots, options.triton_cache_dir, options.work_root) if p]


@dataclass
class Child:
    """A started child waiting for its spec; `root` (and its cgroup) are removed after its job by `discard`."""

    proc: subprocess.Popen  # the isolation's outer process (the child itself when not isolated)
    root: Path
    work: Path
    spec_fd: int  # write end of the spec pipe
    result_fd: int  # read end of the result channel
    iso: isolation.Isolation
    cgroup: JobCgroup | None

    judge: ForkedJudge | None = None  # the judge, where forked from the fork server into the isolation's door

    def poll(self) -> int | None:
        """The child's exit status once it has ended (the judge's, where forked), else None."""
        if self.judge is not None and self.judge.ended.is_set():
            return self.returncode()
        return self.proc.poll()

    def returncode(self) -> int:
        """The child's exit status (negative: the signal that ended it), once it has ended."""
        if self.judge is not None and self.judge.exit_code is not None:
            return self.judge.exit_code
        return self.iso.returncode(self.proc.returncode)

    def job_pid(self) -> int:
        """The child's pid as the runner sees it (under the isolation's init when isolated; the forked judge's)."""
        if self.judge is not None and self.judge.pid is not None:
            return self.judge.pid
        pid = self.proc.pid
        for _ in range(2 if self.iso.isolated else 0):
            try:
                with open(f"/proc/{pid}/task/{pid}/children") as fh:
                    pid = int(fh.read().split()[0])
            except (OSError, IndexError, ValueError):
                break
        return pid

    def send_spec(self, spec: dict[str, Any], keep_open: bool = False) -> None:
        """Hand the child its job (a dead child just never reads it). The spec pipe is closed afterwards unless
        `keep_open` (it then carries the GPU gate's answers, `runner.gpu.gate`, until `discard`)."""
        data = (json.dumps(spec) + "\n").encode()
        try:
            while data:
                data = data[os.write(self.spec_fd, data):]
        except OSError:
            pass
        finally:
            if not keep_open:
                self._close_spec()

    def _close_spec(self) -> None:
        if self.spec_fd >= 0:
            os.close(self.spec_fd)
            self.spec_fd = -1

    def discard(self) -> None:
        """Kill the child's process group, reap it and remove its temp dir (its result fd belongs to the reader)."""
        self._close_spec()
        kill_group(self.proc.pid)
        self.proc.wait()
        for stream in (self.proc.stdout, self.proc.stderr):
            if stream is not None and not stream.closed:
                stream.close()
        if self.result_fd >= 0:
            os.close(self.result_fd)
            self.result_fd = -1
        scratch.remove(self.root)
        if self.cgroup is not None:
            self.cgroup.remove()


def kill_group(pgid: int) -> None:
    try:
        os.killpg(pgid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass


def start_child(options: EvalOptions, forked: bool = True) -> Child:
    """Start one child (call from the spawner thread: its parent-death signal is tied to that thread)."""
    iso = isolation.current()
    root = jobdirs.make_job_dir(options.work_root)
    work = root / "work"
    job_cgroup = JobCgroup.create(iso.cgroups)
    spec_r = spec_w = result_r = result_w = -1
    lock_fds: list[int] = []
    try:
        env = {**base_env(options), "HOME": str(work), "TMPDIR": str(work), "TRITON_HOME": str(work)}
        spec_r, spec_w = os.pipe()
        result_r, result_w = os.pipe()
        server = fork_server(options, iso) if forked else None
        parent = isolation.INNER_PARENT_PID if iso.isolated else os.getpid()
        plan = plan_for(options.visible_devices, enabled=options.pin_timing) if options.device != "cpu" else None
        lock_fds = child_descriptors(options.visible_devices or "", 2) if options.device != "cpu" else []
        args = ["--spec-fd", str(spec_r), "--result-fd", str(result_w), "--parent-pid", str(parent),
                *(plan.argv() if plan else []), "--gpu-lock-fds", ",".join(map(str, lock_fds))]
        inner = [sys.executable, "-I", "-S", "-c", DOOR] if server else [sys.executable, "-P", "-m", "runner.child.main",
                                                                          *args]
        cmd = iso.wrap(inner, root, hidden_paths(options), options.write_roots)
        if job_cgroup is not None:
            cmd = job_cgroup.enter_command(cmd)
        proc = subprocess.Popen(cmd, cwd=work, env=env, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, pass_fds=(spec_r, result_w, *lock_fds), start_new_session=True,
                                umask=0o022)  # the folders bwrap makes on the way to the job's must be searchable)
        door_fds = [spec_r, result_w, *lock_fds]
    except BaseException:
        for fd in (spec_w, result_r):
            if fd >= 0:
                os.close(fd)
        scratch.remove(root)
        if job_cgroup is not None:
            job_cgroup.remove()
        raise
    finally:
        for fd in (spec_r, result_w, *lock_fds):
            if fd >= 0:
                os.close(fd)
    child = Child(proc, root, work, spec_w, result_r, iso, job_cgroup)
    if server is None:
        return child
    try:  # the judge's parent is outside the job's PID namespace: it sees parent pid 0
        args[args.index("--parent-pid") + 1] = "0"
        child.judge = server.fork_judge(proc.pid, 2, door_fds, job_cgroup.procs_files() if job_cgroup else [], args)
    except OSError:  # this job starts its judge as a program (and every job, where the server never worked)
        child.discard()
        return start_child(options, forked=False)
    except BaseException:
        child.discard()
        raise
    return child


_servers: dict[tuple, ForkServer] = {}


def fork_server(options: EvalOptions, iso: isolation.Isolation) -> ForkServer | None:
    """The fork server for this configuration (started here, on the spawner thread), None where judges start as
    programs (`zygote_client.wanted`) or the server broke."""
    if zygote_client.wanted(iso.isolated, options.forkserver) is not None:
        return None
    key = (iso.mode, tuple(sorted(base_env(options).items())))
    if key not in _servers:
        idle = [k for k, server in _servers.items() if server.idle()]
        for old in idle[:max(0, len(_servers) - MAX_CONFIGS + 1)]:  # the oldest idle ones go (a busy one's jobs
            _servers.pop(old).close()  # would die with it)
        _servers[key] = ForkServer(base_env(options))
    server = _servers[key]
    return None if server.broken else server


def fork_servers_state(enabled: bool) -> dict[str, object]:
    """For /health: whether judges are forked from a server (`enabled`: the setting), and any server's failure."""
    iso = isolation.current()
    why_not = zygote_client.wanted(iso.isolated, enabled)
    broken = [s.broken for s in _servers.values() if s.broken]
    return {"forked_judges": why_not is None and not broken, "why_not": why_not or (broken[0] if broken else None)}


class ChildPool:
    """Spare children by launch configuration (`EvalOptions.spares` each), started by one spawner thread."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._spares: OrderedDict[tuple, list[Child]] = OrderedDict()
        self._refilling: dict[tuple, int] = {}
        self._spawner = ThreadPoolExecutor(max_workers=1, thread_name_prefix="tlx-sandbox-spawner")
        self._closed = False

    @staticmethod
    def key(options: EvalOptions) -> tuple:
        return (isolation.current().mode, options.work_root, options.triton_cache_dir, options.write_roots,
                tuple(sorted(base_env(options).items())))

    def take(self, options: EvalOptions) -> Child:
        """A child for one job: the oldest live spare (the warmest), else a new one; refills when prewarming."""
        key = self.key(options)
        child = None
        while True:
            with self._lock:
                waiting = self._spares.get(key)
                child = waiting.pop(0) if waiting else None
            if child is None or child.poll() is None:
                break
            child.discard()  # it died while waiting (e.g. killed from outside)
        if child is None:
            try:
                child = self._spawner.submit(start_child, options).result()
            except RuntimeError:  # interpreter shutting down: no spawner thread any more
                child = start_child(options)
        if options.prewarm:
            self._refill(options, key)
        return child

    def warm(self, options: EvalOptions) -> bool:
        """Start this configuration's spares now, before any job takes one (when it keeps spares: `prewarm`)."""
        if options.prewarm:
            self._refill(options, self.key(options))
        return options.prewarm

    def _refill(self, options: EvalOptions, key: tuple) -> None:
        with self._lock:
            missing = options.spares - len(self._spares.get(key, ())) - self._refilling.get(key, 0)
            if self._closed or missing <= 0:
                return
            self._refilling[key] = self._refilling.get(key, 0) + missing

        def start() -> None:
            evicted: list[Child] = []
            try:
                child: Child | None = start_child(options)
            except OSError:
                child = None  # no spare this time; a later job starts its own child
            with self._lock:
                self._refilling[key] -= 1
                if not self._refilling[key]:
                    del self._refilling[key]
                if child is not None and (self._closed or len(self._spares.get(key, ())) >= options.spares):
                    evicted.append(child)
                elif child is not None:
                    self._spares.setdefault(key, []).append(child)
                    self._spares.move_to_end(key)
                    while len(self._spares) > MAX_CONFIGS:
                        evicted.extend(self._spares.popitem(last=False)[1])
            for c in evicted:
                c.discard()

        for _ in range(missing):
            try:
                self._spawner.submit(start)
            except RuntimeError:  # interpreter shutting down: no new threads
                with self._lock:
                    self._refilling.pop(key, None)
                return

    def spares(self) -> list[int]:
        """Process ids of the waiting spares."""
        with self._lock:
            return [c.proc.pid for children in self._spares.values() for c in children]

    def close(self) -> None:
        """Kill every spare (after any refill in progress); later `take` calls still work."""
        with self._lock:
            self._closed = True
        try:
            self._spawner.submit(lambda: None).result()  # a refill queued before this runs to its end first
        except RuntimeError:
            pass  # interpreter exit: the spawner has already run its queue and stopped
        with self._lock:
            spares = [c for children in self._spares.values() for c in children]
            self._spares.clear()
            self._closed = False
        for c in spares:
            c.discard()


POOL = ChildPool()
close_spares = POOL.close
atexit.register(close_spares)
