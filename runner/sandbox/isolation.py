"""Operating-system isolation around each sandbox child (design §4, "Isolation"; issue 27), the first layer under
the in-process guard (`runner.child.guard`).

`wrap(cmd, job_root, hide)` turns the child's command into one that runs it, with every process it starts:
- in its own network namespace (nothing reachable, not even 127.0.0.1), IPC and PID namespace (the child is pid 2
  under an init; when the init dies the kernel kills every process left in the namespace, whatever its session,
  process group or open pipes);
- on a read-only view of the host's filesystem in which only the job's folder (`job_root`, see
  `runner.sandbox.jobdirs`) is writable and `job_root/tmp` is /tmp; home folders, /run (the host's service sockets),
  the runner's folders (runs dir with its token file, store, other jobs, shared caches: `hide`) are empty
  read-only tmpfs (the password hashes in /etc: /dev/null), with the Python install and the repository shown
  again read-only where they lie under them;
- with a minimal /dev (null, zero, full, random, urandom, tty, a private /dev/shm) plus the GPU devices
  (/dev/nvidia*, /dev/dri);
- as root with only CAP_SETUID and CAP_SETGID left (the judge hands the candidate an unprivileged uid) and no way
  to gain privileges back (PR_SET_NO_NEW_PRIVS), so that it can neither remount nor unmount anything.
No user namespace: on the H200 one breaks CUDA (error 304).

Modes, picked once per process (`current()`), forced with TLX_RUNNER_ISOLATION=bwrap|unshare|none:
- `bwrap`: bubblewrap from TLX_RUNNER_BWRAP, else the copy `scripts/fetch_bwrap.sh` unpacks into
  `.tools/bubblewrap/`, else `bwrap` on PATH, if a trial run works;
- `unshare`: util-linux `unshare` (root only; util-linux's `setpriv` ties it to the runner's life) with
  `runner.sandbox.jail` as the namespace's init doing the mounts;
- `none`: the host refuses namespaces; every result then carries the flag `not_isolated` and /health says why.
The child's parent inside the namespace is pid 1 (passed as its --parent-pid); a signal that kills the child
comes back as exit status 128 + signal (`returncode`)."""

from __future__ import annotations

import functools
import json
import os
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

from runner.sandbox import cgroup, jail, jobdirs
from runner.sandbox.jail import PROC_COVERED

REPO_ROOT = Path(__file__).resolve().parent.parent.parent
ISOLATION_ENV, BWRAP_ENV = "TLX_RUNNER_ISOLATION", "TLX_RUNNER_BWRAP"
SHIPPED_BWRAP = REPO_ROOT / ".tools" / "bubblewrap" / "usr" / "bin" / "bwrap"
MODES = ("bwrap", "unshare", "none")
NOT_ISOLATED = "not_isolated"
INNER_PARENT_PID = 1  # the child's parent inside the PID namespace: bwrap's init, or runner.sandbox.jail
KEPT_CAPS = ("CAP_SETUID", "CAP_SETGID")
BASIC_DEVICES = ("/dev/null", "/dev/zero", "/dev/full", "/dev/random", "/dev/urandom", "/dev/tty")
SCRATCH = "/tmp"  # where the job's own tmp folder is mounted
ALWAYS_HIDDEN = ("/root", "/home", "/run")
HIDDEN_FILES = ("/etc/shadow", "/etc/gshadow", "/etc/shadow-", "/etc/gshadow-")  # root may read them by owner
PROBE_TIMEOUT_S = 20


@dataclass(frozen=True)
class Mount:
    """One step of the job's filesystem view, applied in order: `tmpfs` (an empty read-only folder over `dest`),
    `ro` / `rw` (bind `src` at `dest`), `dev` (a minimal /dev with the devices in `devices`)."""

    kind: str
    dest: str
    src: str = ""
    devices: tuple[str, ...] = ()


def gpu_devices() -> tuple[str, ...]:
    found = sorted(str(p) for p in Path("/dev").glob("nvidia*"))
    return (*found, "/dev/dri") if os.path.isdir("/dev/dri") else tuple(found)


def _real(path: str | os.PathLike) -> str:
    return os.path.realpath(os.path.expanduser(os.fspath(path)))


def _under(path: str, parent: str) -> bool:
    return path == parent or path.startswith(parent.rstrip("/") + "/")


def _readable_roots() -> list[str]:
    """What the child needs to read that may lie under a hidden folder: the interpreter, its packages, the repo."""
    import site

    paths = [REPO_ROOT, sys.prefix, sys.base_prefix, os.path.dirname(_real(sys.executable)), site.getuserbase(),
             *(p for p in sys.path if os.path.isabs(p))]
    real = sorted({_real(p) for p in paths if os.path.isdir(p)})
    return [p for p in real if not any(_under(p, q) and p != q for q in real)]


def plan(job_root: Path, hide: list[str], writable: tuple[str, ...] = ()) -> list[Mount]:
    """The job's mounts, shallowest first (a deeper mount lies on top of the folders it sits in); `writable`:
    folders besides the job's own that stay writable (`EvalOptions.write_roots`)."""
    root = _real(job_root)
    scratch = _real(SCRATCH)
    hidden = {_real(p) for p in (*ALWAYS_HIDDEN, os.path.expanduser("~"), *hide) if p}
    hidden = {p for p in hidden if os.path.isdir(p) and p != "/" and not _under(p, "/dev") and not _under(p, root)}
    mounts = [Mount("dev", "/dev", devices=(*BASIC_DEVICES, *gpu_devices())), Mount("rw", SCRATCH, f"{root}/tmp")]
    mounts += [Mount("tmpfs", p) for p in hidden if not _under(p, scratch)]  # the job's own /tmp covers the rest
    mounts += [Mount("ro", p, p) for p in _readable_roots() if any(_under(p, h) for h in hidden | {scratch})]
    # hidden folders inside what was bound back (a runs folder inside a repo that lies under /tmp) are hidden again
    mounts += [Mount("tmpfs", p) for p in hidden if any(_under(p, m.dest) for m in mounts if m.kind == "ro")]
    mounts += [Mount("rw", p, p) for p in map(_real, (root, *writable)) if os.path.isdir(p)]
    mounts += [Mount("ro", p, os.devnull) for p in HIDDEN_FILES if os.path.isfile(p)]
    return sorted(dict.fromkeys(mounts), key=lambda m: m.dest.count("/") if m.dest != "/" else 0)


def bwrap_args(mounts: list[Mount]) -> list[str]:
    args = ["--ro-bind", "/", "/", "--proc", "/proc", "--unshare-net", "--unshare-pid", "--unshare-ipc",
            "--die-with-parent", "--cap-drop", "ALL"]
    for path in filter(os.path.exists, PROC_COVERED):  # the kernel's knobs: root without capabilities may still
        args += ["--ro-bind", path, path]  # write most sysctls (kernel.core_pattern: a host root shell)
    for cap in KEPT_CAPS:
        args += ["--cap-add", cap]
    for m in mounts:
        if m.kind == "dev":
            args += ["--tmpfs", "/dev", "--tmpfs", "/dev/shm", "--symlink", "/proc/self/fd", "/dev/fd"]
            for dev in m.devices:
                if os.path.exists(dev):
                    args += ["--dev-bind", dev, dev]
        elif m.kind == "tmpfs":
            args += ["--tmpfs", m.dest]
        elif m.kind in ("ro", "rw"):
            args += ["--ro-bind" if m.kind == "ro" else "--bind", m.src, m.dest]
    for m in mounts:
        if m.kind == "tmpfs" or m.kind == "dev":
            args += ["--remount-ro", m.dest]
    return args


@dataclass(frozen=True)
class Isolation:
    mode: str
    tool: str | None  # the bwrap or unshare binary
    reason: str  # why this mode (what was tried)
    cgroups: cgroup.Hierarchy | None

    @property
    def isolated(self) -> bool:
        return self.mode != "none"

    def wrap(self, cmd: list[str], job_root: Path, hide: list[str], writable: tuple[str, ...] = ()) -> list[str]:
        """`cmd` run inside this isolation (unchanged in mode `none`)."""
        mounts = plan(job_root, hide, writable)
        if self.mode == "bwrap":
            return [str(self.tool), *bwrap_args(mounts), "--", *cmd]
        if self.mode == "unshare":
            layout = json.dumps([m.__dict__ for m in mounts])
            return [shutil.which("setpriv") or "setpriv", "--pdeathsig", "KILL", str(self.tool), "--net", "--pid",
                    "--ipc", "--mount", "--fork", "--kill-child", "--mount-proc", "--", sys.executable, "-I", "-S", jail.__file__, layout, ",".join(KEPT_CAPS), "--", *cmd]
        return cmd

    def returncode(self, code: int) -> int:
        """The child's exit status as subprocess reports it: negative for a signal."""
        return -(code - 128) if self.isolated and 128 < code < 128 + 65 else code

    def describe(self) -> dict[str, object]:
        """For /health: the mode, what it rests on, and whether memory is capped by a cgroup."""
        return {"mode": self.mode, "isolated": self.isolated, "tool": self.tool, "reason": self.reason,
                "memory": f"cgroup v{self.cgroups.version} ({self.cgroups.parent})" if self.cgroups
                else "RSS watchdog (no writable memory cgroup)"}


def bwrap_binary() -> str | None:
    for candidate in (os.environ.get(BWRAP_ENV), SHIPPED_BWRAP, shutil.which("bwrap")):
        if candidate and os.access(candidate, os.X_OK):
            return str(candidate)
    return None


def _works(cmd: list[str]) -> str | None:
    """None if `cmd` (a trial of the isolation) exits 0, else what went wrong."""
    try:
        done = subprocess.run(cmd, capture_output=True, timeout=PROBE_TIMEOUT_S, env={"PATH": os.defpath},
                              stdin=subprocess.DEVNULL)
    except (OSError, subprocess.TimeoutExpired) as exc:
        return str(exc)
    return None if done.returncode == 0 else (done.stderr.decode(errors="replace").strip()[-300:]
                                              or f"exit {done.returncode}")


def detect(forced: str = "") -> Isolation:
    """Try the modes in order (or only `forced`) and return the first that works here."""
    hierarchy = cgroup.find_hierarchy()
    cgroup.remove_stale(hierarchy)
    tried = []
    job = jobdirs.make_job_dir(None)  # under this process's parent: swept by a later runner if this one is killed
    try:
        for mode in ([forced] if forced else MODES):
            if mode == "none":
                break
            tool = bwrap_binary() if mode == "bwrap" else shutil.which("unshare")
            if mode == "unshare" and not shutil.which("setpriv"):
                tool = None
            if tool is None or (mode == "unshare" and os.geteuid() != 0):
                tried.append(f"{mode}: not available" + (" (needs root)" if tool else ""))
                continue
            iso = Isolation(mode, tool, "", hierarchy)
            error = _works(iso.wrap(["/bin/sh", "-c", "exit 0"], job, []))
            if error is None:
                return Isolation(mode, tool, "; ".join([*tried, f"{mode}: works"]), hierarchy)
            tried.append(f"{mode}: {error}")
    finally:
        shutil.rmtree(job, ignore_errors=True)
    reason = "; ".join(tried) or "forced off"
    return Isolation("none", None, f"{reason} ({ISOLATION_ENV}={forced})" if forced else reason, hierarchy)


@functools.lru_cache(maxsize=1)
def current() -> Isolation:
    forced = os.environ.get(ISOLATION_ENV, "").strip().lower()
    if forced not in ("", "auto", *MODES):
        raise ValueError(f"{ISOLATION_ENV} must be auto, bwrap, unshare or none, got {forced!r}")
    return detect("" if forced == "auto" else forced)
