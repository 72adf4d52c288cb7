"""A memory cgroup per job, where the host lets the runner make one (cgroup v2 `memory.max`, else v1
`memory.limit_in_bytes`), so that an allocation past the job's cap is stopped by the kernel and read back as
`out_of_memory` (`memory.events` / `memory.oom_control`: `oom_kill N`); with it, where the host has the `pids`
controller (v2: enabled beside memory; v1: its own hierarchy), a cap on the job's tasks, threads included
(`set_task_limit`; `pids.events` says when the kernel refused one: `too_many_processes`).

The cgroup is a child of the runner's own memory cgroup (v2: or of a `tlx-jobs` cgroup beside it), named
`tlx-<pid>-<start time>-<n>`; a started job enters it before it runs anything (`enter_command`: `sh` writes its
own pid to `cgroup.procs`, then execs the job). The cap is written when the job is handed out (`set_limit`): a spare is started before its job's options are
known. `remove_stale` removes those of dead runners. Without a writable memory cgroup `JobCgroup.create` returns
None and the sandbox's RSS watchdog is the limit (both at `job_memory_cap`)."""

from __future__ import annotations

import itertools
import os
import time
from dataclasses import dataclass
from pathlib import Path

from runner.sandbox.jobdirs import start_time

CGROUP_ROOT = Path("/sys/fs/cgroup")
HOST_MEMORY_SHARE = 0.5  # of the host's RAM, at most, per job (a job at the cap must leave the host usable)
_counter = itertools.count()


def host_memory_bytes() -> int:
    return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")


def job_memory_cap(limit_bytes: int) -> int:
    """A job's memory cap: its option (`EvalOptions.memory_limit_bytes`), at most a share of the host's RAM (the
    issue's `bytearray` loop reached 16.5 GB under a 16 GiB limit on a 23 GiB host: swapping, then `timeout`)."""
    return min(limit_bytes, int(host_memory_bytes() * HOST_MEMORY_SHARE))


@dataclass(frozen=True)
class Hierarchy:
    """Where job cgroups go and which files they use."""

    parent: Path
    limit_file: str  # memory.max (v2) | memory.limit_in_bytes (v1)
    events_file: str  # memory.events (v2) | memory.oom_control (v1)
    version: int
    pids_parent: Path | None = None  # where the jobs' `pids` cgroups go (v2: `parent` itself), None: no such


def _own_cgroups() -> dict[str, str]:
    """controller (or "" for v2) -> path of this process's cgroup."""
    found = {}
    try:
        with open("/proc/self/cgroup") as fh:
            for line in fh:
                _, controllers, path = line.rstrip("\n").split(":", 2)
                for c in controllers.split(",") if controllers else [""]:
                    found[c] = path
    except (OSError, ValueError):
        pass
    return found


def _usable(parent: Path, probe_file: str) -> bool:
    """Whether a child cgroup with `probe_file` can be made under `parent`."""
    probe = parent / f"tlx-probe-{os.getpid()}"
    try:
        probe.mkdir()
    except OSError:
        return False
    try:
        return (probe / probe_file).exists()
    finally:
        try:
            probe.rmdir()
        except OSError:
            pass


def _v2_parent(mount: Path, own: Path) -> Path | None:
    """Where v2 job cgroups can go: under the runner's own cgroup if it may give them the memory controller, else
    under a `tlx-jobs` cgroup beside it (a cgroup holding processes cannot enable controllers for children, the
    "no internal processes" rule: the runner's usually holds others too)."""
    for parent in (own, own.parent / "tlx-jobs") if own != mount else (own,):
        try:
            parent.mkdir(exist_ok=True)
            if "memory" not in (parent / "cgroup.subtree_control").read_text().split():
                (parent / "cgroup.subtree_control").write_text("+memory")
        except OSError:
            continue
        if _usable(parent, "memory.max"):
            return parent
    return None


def find_hierarchy() -> Hierarchy | None:
    """The memory cgroup hierarchy job cgroups can be made in, or None."""
    own = _own_cgroups()
    for mount in (CGROUP_ROOT, CGROUP_ROOT / "unified"):
        if "" in own and (mount / "cgroup.controllers").exists():
            parent = _v2_parent(mount, mount / own[""].lstrip("/"))
            if parent is not None:
                return Hierarchy(parent, "memory.max", "memory.events", 2, _v2_pids(parent))
    if "memory" in own:
        parent = CGROUP_ROOT / "memory" / own["memory"].lstrip("/")
        if _usable(parent, "memory.limit_in_bytes"):
            pids = CGROUP_ROOT / "pids" / own.get("pids", "/").lstrip("/")
            return Hierarchy(parent, "memory.limit_in_bytes", "memory.oom_control", 1,
                             pids if "pids" in own and _usable(pids, "pids.max") else None)
    return None


def _v2_pids(parent: Path) -> Path | None:
    """`parent` if its children can have the `pids` controller (enabled here when it is not yet)."""
    try:
        if "pids" not in (parent / "cgroup.subtree_control").read_text().split():
            (parent / "cgroup.subtree_control").write_text("+pids")
    except OSError:
        return None
    return parent if _usable(parent, "pids.max") else None


def _oom_kills(text: str) -> int:
    for line in text.splitlines():
        key, _, value = line.partition(" ")
        if key == "oom_kill":
            return int(value)
    return 0


class JobCgroup:
    def __init__(self, path: Path, hierarchy: Hierarchy, pids: Path | None = None) -> None:
        self.path, self.hierarchy, self.pids = path, hierarchy, pids  # pids: the job's `pids` cgroup

    @classmethod
    def create(cls, hierarchy: Hierarchy | None) -> JobCgroup | None:
        if hierarchy is None:
            return None
        pid = os.getpid()
        name = f"tlx-{pid}-{start_time(pid) or 0}-{next(_counter)}"
        path = hierarchy.parent / name
        try:
            path.mkdir()
        except OSError:
            return None
        pids = None
        if hierarchy.pids_parent == hierarchy.parent:
            pids = path
        elif hierarchy.pids_parent is not None:
            try:
                (hierarchy.pids_parent / name).mkdir()
                pids = hierarchy.pids_parent / name
            except OSError:
                pass
        return cls(path, hierarchy, pids)

    def procs_files(self) -> list[str]:
        """The `cgroup.procs` files a process writes its pid to to enter this cgroup (and its `pids` cgroup, v1)."""
        return [str(self.path / "cgroup.procs"), *([str(self.pids / "cgroup.procs")]
                                                    if self.pids not in (None, self.path) else [])]

    def enter_command(self, cmd: list[str]) -> list[str]:
        """`cmd`, run inside this cgroup (and its `pids` cgroup, v1) from its first instruction on."""
        files = self.procs_files()
        return ["/bin/sh", "-c", 'echo $$ > "$0" && { [ -z "$1" ] || echo $$ > "$1"; } && shift && exec "$@"',
                files[0], files[1] if len(files) > 1 else "", *cmd]

    def set_task_limit(self, tasks: int) -> None:
        """Cap the job's tasks (processes and threads: the kernel refuses a fork or a thread past it)."""
        if self.pids is not None:
            (self.pids / "pids.max").write_text(str(tasks))

    def tasks_refused(self) -> bool:
        """Whether the kernel refused the job a task at its cap (`pids.events`: `max N`)."""
        try:
            return self.pids is not None and any(
                line.split()[:1] == ["max"] and int(line.split()[1]) > 0
                for line in (self.pids / "pids.events").read_text().splitlines())
        except (OSError, ValueError, IndexError):
            return False

    def set_limit(self, limit_bytes: int) -> None:
        (self.path / self.hierarchy.limit_file).write_text(str(limit_bytes))
        if self.hierarchy.version == 2:  # no swap: past the cap is out of memory, not slow
            try:
                (self.path / "memory.swap.max").write_text("0")
            except OSError:
                pass

    def oom_killed(self) -> bool:
        try:
            return _oom_kills((self.path / self.hierarchy.events_file).read_text()) > 0
        except (OSError, ValueError):
            return False

    def remove(self) -> None:
        """Remove the cgroup (and its `pids` one) once its processes are gone (they may take a moment to be
        reaped)."""
        for path in dict.fromkeys(p for p in (self.path, self.pids) if p is not None):
            for _ in range(50):
                try:
                    path.rmdir()
                    break
                except FileNotFoundError:
                    break
                except OSError:
                    time.sleep(0.02)


def remove_stale(hierarchy: Hierarchy | None) -> None:
    """Remove the (empty) job cgroups of runner processes that are gone."""
    if hierarchy is None:
        return
    parents = dict.fromkeys(p for p in (hierarchy.parent, hierarchy.pids_parent) if p is not None)
    for entry in (e for parent in parents for e in parent.glob("tlx-*-*-*")):
        try:
            _, pid, started, _ = entry.name.split("-")
            if start_time(int(pid)) != int(started):
                entry.rmdir()
        except (OSError, ValueError):
            continue
