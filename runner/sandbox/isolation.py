"""Operating-system isolation around each sandbox child (design §4, "Isolation"; issue 27), the first layer under
the in-process guard (`runner.child.guard`).

`wrap(cmd, job_root, hide)` turns the child's command into one that runs it, with every process it starts:
- in its own network namespace (nothing reachable, not even 127.0.0.1), IPC and PID namespace (the child is pid 2
  under an init; when the init dies the kernel kills every process left in the namespace, whatever its session,
  process group or open pipes);
- on a view of the host built from what the child needs, not from a list of folders to hide (issue 45: folders
  given to `runner serve` by flag were in view): an empty read-only root with the system's folders (/usr, /etc,
  /sys, ...), the interpreter and its packages and the repository's code packages bound back read-only (`plan`);
  only the job's folder (`job_root`, see `runner.sandbox.jobdirs`) is writable and `job_root/tmp` is /tmp. The
  runner's folders (runs dir with its token file, store, other jobs, shared caches), home folders, /run, /var
  (the host's service sockets) are thus out of view however they were named; files in /etc others may not read
  (the judge is root and reads what root owns) are /dev/null; a runner folder inside a bound one (`hide`,
  `keep_private`) is an empty read-only tmpfs;
- with a minimal /dev (null, zero, full, random, urandom, tty, a private /dev/shm) plus the GPU devices
  (/dev/nvidia*, /dev/dri);
- as root with only CAP_SETUID and CAP_SETGID left (the judge hands the candidate an unprivileged uid) and no way
  to gain privileges back (PR_SET_NO_NEW_PRIVS), so that it can neither remount nor unmount anything.
No user namespace: on the H200 one breaks CUDA (error 304).

Modes, picked once per process (`current()`), forced with TLX_RUNNER_ISOLATION=bwrap|unshare|none:
- `bwrap`: bubblewrap from TLX_RUNNER_BWRAP, else the copy `scripts/fetch_bwrap.sh` unpacks into
  `.tools/bubblewrap/`, else `bwrap` on PATH, if a trial run works;
- `unshare`: util-linux `unshare` (root only; util-linux's `setpriv` ties it to the runner's life) with
  `runner.sandbox.jail` as the namespace's init doing the mounts and the pivot to the new root;
- `none`: the host refuses namespaces; every result then carries the flag `not_isolated` and /health says why.
The child's parent inside the namespace is pid 1 (passed as its --parent-pid); a signal that kills the child
comes back as exit status 128 + signal (`returncode`)."""

from __future__ import annotations

import ast
import functools
import json
import os
import shutil
import stat
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

from runner.sandbox import cgroup, jail, jobdirs, scratch
from runner.sandbox.jail import PROC_COVERED

REPO_ROOT = Path(__file__).resolve().parent.parent.parent
ISOLATION_ENV, BWRAP_ENV = "TLX_RUNNER_ISOLATION", "TLX_RUNNER_BWRAP"
SHIPPED_BWRAP = REPO_ROOT / ".tools" / "bubblewrap" / "usr" / "bin" / "bwrap"
MODES = ("bwrap", "unshare", "none")
NOT_ISOLATED = "not_isolated"
INNER_PARENT_PID = 1  # the child's parent inside the PID namespace: bwrap's init, or runner.sandbox.jail
KEPT_CAPS = ("CAP_SETUID", "CAP_SETGID")
BASIC_DEVICES = ("/dev/null", "/dev/zero", "/dev/full", "/dev/random", "/dev/urandom", "/dev/tty")
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


SYSTEM_PATHS = ("/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32", "/etc", "/sys")
CODE_PACKAGES = ("runner", "common")  # the repository's code the child imports (`python -P -m runner.child.main`)
PATH_ENV = ("LD_LIBRARY_PATH", "CUDA_HOME", "CUDA_PATH", "TRITON_PTXAS_PATH", "TRITON_CUOBJDUMP_PATH",
            "TRITON_NVDISASM_PATH", "TRITON_LIBCUDA_PATH", "TRITON_LIBDEVICE_PATH", "TRITON_CUDART_PATH")
PROC, SCRATCH = "/proc", "/tmp"  # SCRATCH: where the job's own tmp folder is mounted
_private: set[str] = set()  # folders this process named private (`keep_private`), beside the settings' ones


def keep_private(*paths: str | os.PathLike) -> None:
    """Name folders no job may see, wherever they lie (a service's `--runs-dir` and `--store`): where one lies
    inside a folder the job's view shows, it is covered by an empty one."""
    _private.update(_real(p) for p in paths if p)


def private_paths() -> set[str]:
    return set(_private)


@functools.lru_cache(maxsize=1)
def _child_sys_path() -> tuple[str, ...]:
    """The import path of the child's interpreter (its site packages' .pth files included), without the
    repository (its code packages are bound alone)."""
    import site

    env = {"PATH": os.defpath, "PYTHONPATH": str(REPO_ROOT), "PYTHONUSERBASE": site.getuserbase()}
    try:
        done = subprocess.run([sys.executable, "-P", "-c", "import sys; print(repr(sys.path))"], env=env, cwd="/",
                              capture_output=True, text=True, timeout=PROBE_TIMEOUT_S, check=True)
        found = ast.literal_eval(done.stdout.strip())
    except (OSError, subprocess.SubprocessError, ValueError, SyntaxError):
        found = sys.path
    return tuple(p for p in found if os.path.isabs(p) and not _under(str(REPO_ROOT), _real(p)))


def _needed_paths() -> list[str]:
    """What the child reads, as this process names it: the system's programs, libraries and settings, the
    interpreter and its packages, the repository's code packages, and the library folders the environment names;
    never / or a folder holding the job's scratch."""
    import site

    env = [v for k in PATH_ENV for v in os.environ.get(k, "").split(os.pathsep)]
    interpreter = {sys.prefix, sys.base_prefix, sys.exec_prefix, site.getusersitepackages()}
    paths = [*SYSTEM_PATHS, *interpreter, os.path.dirname(sys.executable), *(REPO_ROOT / p for p in CODE_PACKAGES),
             *_child_sys_path(), *env]
    paths = [os.path.normpath(os.fspath(p)) for p in paths if p and os.path.isabs(os.fspath(p))]
    return [p for p in paths if not _under(SCRATCH, _real(p))]


def _first_link(path: str) -> str | None:
    """The shallowest folder on `path` (or `path` itself) that is a symbolic link."""
    parts = path.strip("/").split("/")
    for i in range(1, len(parts) + 1):
        head = "/" + "/".join(parts[:i])
        if os.path.islink(head):
            return head
    return None


def _resolve(paths: list[str]) -> tuple[set[str], dict[str, str]]:
    """The real folders to bind and the links to recreate on the way to them, so that each path reads in the
    job's view as it reads here (`.venv -> /work/main/.venv` stays a link, its target is bound)."""
    binds, links, queue = set(), {}, list(paths)
    while queue:
        path = queue.pop()
        if not os.path.lexists(path):
            continue
        link = _first_link(path)
        if link is None:
            binds.add(path)
        elif link not in links:
            links[link] = os.readlink(link)
            queue += [_real(link) + path[len(link):], _real(link)]
        else:
            queue.append(_real(link) + path[len(link):])
    binds = {p for p in binds if not any(_under(p, q) and p != q for q in binds)}
    links = {k: v for k, v in links.items() if not any(_under(k, q) for q in binds)}
    return binds, links


@functools.lru_cache(maxsize=1)
def _unreadable_in(folder: str) -> tuple[list[str], list[str]]:
    """Under `folder`: (files, folders) others may not read (root's 0600 keys: the judge runs as root, and without
    capabilities root still reads what it owns) and sockets and pipes (a service listening there): in the view they
    are /dev/null and empty."""
    files, dirs = [], []
    for top, subdirs, names in os.walk(folder):
        for d in list(subdirs):
            path = os.path.join(top, d)
            mode = os.lstat(path).st_mode
            if not stat.S_ISLNK(mode) and (mode & 0o005) != 0o005:
                dirs.append(path)
                subdirs.remove(d)
        for name in names:
            path = os.path.join(top, name)
            try:
                mode = os.lstat(path).st_mode
            except OSError:
                continue
            if not stat.S_ISLNK(mode) and (not stat.S_ISREG(mode) or not mode & stat.S_IROTH):
                files.append(path)
    return files, dirs


def plan(job_root: Path, private: list[str], writable: tuple[str, ...] = ()) -> list[Mount]:
    """The job's view of the host, shallowest first (a deeper mount lies on top of the folders it sits in): an empty
    read-only root with only what the child needs (`_needed_paths`) bound back read-only, a minimal /dev, its own
    /proc, the job's folder writable and its `tmp` as /tmp, and `writable` (`EvalOptions.write_roots`). A folder
    the runner keeps (runs folder with its token, store, caches, other jobs) is thus out of view wherever it lies
    and however it was named; `private` ones (and `keep_private`'s) that lie inside a bound folder are covered."""
    root = _real(job_root)
    binds, links = _resolve(_needed_paths())
    mounts = [Mount("dev", "/dev", devices=(*BASIC_DEVICES, *gpu_devices())), Mount("proc", PROC),
              Mount("rw", SCRATCH, f"{root}/tmp")]
    mounts += [Mount("symlink", dest, target) for dest, target in links.items()]
    mounts += [Mount("ro", p, p) for p in binds if not _under(p, "/dev") and not _under(p, PROC)]
    files, dirs = _unreadable_in(_real("/etc")) if "/etc" in binds else ([], [])
    mounts += [Mount("ro", p, os.devnull) for p in files] + [Mount("tmpfs", p) for p in dirs]
    hidden = {_real(p) for p in (*private, *_private) if p} - {root}
    mounts += [Mount("tmpfs", p) for p in hidden if os.path.isdir(p) and any(_under(p, b) for b in binds)]
    mounts += [Mount("rw", p, p) for p in map(_real, (root, *writable)) if os.path.isdir(p)]
    return sorted(dict.fromkeys(mounts), key=lambda m: m.dest.count("/") if m.dest != "/" else 0)


def _folders_on_the_way(mounts: list[Mount]) -> list[str]:
    """The folders of the empty root that lead to the mounts (`/work` on the way to `/work/repo/runner`)."""
    dests = {m.dest for m in mounts}
    ways = {os.path.dirname(d.rstrip("/")) for d in dests}
    found = set()
    for way in ways:
        while way not in ("/", "") and not any(_under(way, d) for d in dests):
            found.add(way)
            way = os.path.dirname(way)
    return sorted(found, key=lambda p: p.count("/"))


def bwrap_args(mounts: list[Mount], caps: tuple[str, ...] = KEPT_CAPS) -> list[str]:
    args = ["--unshare-net", "--unshare-pid", "--unshare-ipc", "--die-with-parent", "--cap-drop", "ALL"]
    for cap in caps:
        args += ["--cap-add", cap]
    for folder in _folders_on_the_way(mounts):  # bubblewrap would make them 0700: out of the candidate's reach
        args += ["--perms", "0755", "--dir", folder]
    for m in mounts:
        if m.kind == "dev":
            args += ["--tmpfs", "/dev", "--tmpfs", "/dev/shm", "--symlink", "/proc/self/fd", "/dev/fd"]
            for dev in m.devices:
                if os.path.exists(dev):
                    args += ["--dev-bind", dev, dev]
        elif m.kind == "proc":
            args += ["--proc", m.dest]
            for path in filter(os.path.exists, PROC_COVERED):  # the kernel's knobs: root without capabilities may
                args += ["--ro-bind", path, path]  # still write most sysctls (kernel.core_pattern: a host root shell)
        elif m.kind == "symlink":
            args += ["--symlink", m.src, m.dest]
        elif m.kind == "tmpfs":
            args += ["--tmpfs", m.dest]
        elif m.kind in ("ro", "rw"):
            args += ["--ro-bind" if m.kind == "ro" else "--bind", m.src, m.dest]
    for m in mounts:
        if m.kind == "tmpfs" or m.kind == "dev":
            args += ["--remount-ro", m.dest]
    return [*args, "--remount-ro", "/"]


@dataclass(frozen=True)
class Isolation:
    mode: str
    tool: str | None  # the bwrap or unshare binary
    reason: str  # why this mode (what was tried)
    cgroups: cgroup.Hierarchy | None

    @property
    def isolated(self) -> bool:
        return self.mode != "none"

    def wrap(self, cmd: list[str], job_root: Path, hide: list[str], writable: tuple[str, ...] = (),
             caps: tuple[str, ...] = KEPT_CAPS) -> list[str]:
        """`cmd` run inside this isolation (unchanged in mode `none`), keeping only the capabilities `caps`."""
        mounts = plan(job_root, hide, writable)
        if self.mode == "bwrap":
            return [str(self.tool), *bwrap_args(mounts, caps), "--", *cmd]
        if self.mode == "unshare":
            layout = json.dumps([m.__dict__ for m in mounts])
            return [shutil.which("setpriv") or "setpriv", "--pdeathsig", "KILL", str(self.tool), "--net", "--pid",
                    "--ipc", "--mount", "--fork", "--kill-child", "--mount-proc", "--", sys.executable, "-I", "-S", jail.__file__, layout, ",".join(caps), "--", *cmd]
        return cmd

    def returncode(self, code: int) -> int:
        """The child's exit status as subprocess reports it: negative for a signal."""
        return -(code - 128) if self.isolated and 128 < code < 128 + 65 else code

    def describe(self) -> dict[str, object]:
        """For /health: the mode, what it rests on, and whether memory is capped by a cgroup."""
        return {"mode": self.mode, "isolated": self.isolated, "tool": self.tool, "reason": self.reason,
                "memory": f"cgroup v{self.cgroups.version} ({self.cgroups.parent})" if self.cgroups
                else "RSS watchdog (no writable memory cgroup)", "disk": scratch.state()}


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
        scratch.remove(job)
    reason = "; ".join(tried) or "forced off"
    return Isolation("none", None, f"{reason} ({ISOLATION_ENV}={forced})" if forced else reason, hierarchy)


@functools.lru_cache(maxsize=1)
def current() -> Isolation:
    forced = os.environ.get(ISOLATION_ENV, "").strip().lower()
    if forced not in ("", "auto", *MODES):
        raise ValueError(f"{ISOLATION_ENV} must be auto, bwrap, unshare or none, got {forced!r}")
    return detect("" if forced == "auto" else forced)
