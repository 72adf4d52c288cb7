"""Joining a job's isolation from outside it, after a fork (issue 43: the fork server, `runner.sandbox.zygote`).

The job's isolation is built exactly as for a started child (`runner.sandbox.isolation`: bubblewrap or `unshare`
with `runner.sandbox.jail`, in its cgroup), around a door: a process that only waits (`DOOR`). A process forked
from the fork server then becomes a member of it:
1. `grab_fds`: the door's descriptors (stdio, the spec and result pipes, the GPU lock's) are duplicated from it
   (`pidfd_getfd`: the same open files, so its locks are the same locks) onto the same numbers, every other
   descriptor closed;
2. `join`: the door's cgroups (`cgroup.procs` files named by the runner), then every namespace of the door that
   differs from this process's (cgroup, IPC, UTS, network, PID for the children to come, mount last: it sets
   the root to the job's view), then the door's folder;
3. after the fork that puts it in the PID namespace, `drop_privileges`: the capabilities the isolation keeps
   (bounding set, effective, permitted; inheritable and ambient emptied) and no_new_privs, as bubblewrap and
   the jail leave an exec'd child; the door's environment.
Linux only, as root (joining namespaces needs CAP_SYS_ADMIN)."""

from __future__ import annotations

import ctypes
import os
import time

from runner.child.separation import limit_capabilities
from runner.procfs import stat_fields
from runner.sandbox.isolation import KEPT_CAPS
from runner.sandbox.jail import CAP_NAMES, PR_SET_NO_NEW_PRIVS

# the door: waits until the job ends (its isolation's init takes every member with it); the stacks signal is not
# for it
DOOR_MARK = "tlx-door"
DOOR = (f"import signal  # {DOOR_MARK}\nsignal.signal(signal.SIGUSR1, signal.SIG_IGN)\n"
        "signal.signal(signal.SIGUSR2, signal.SIG_IGN)\nwhile True:\n    signal.pause()\n")
NAMESPACES = (("cgroup", 0x02000000), ("ipc", 0x08000000), ("uts", 0x04000000), ("net", 0x40000000),
              ("pid", 0x20000000), ("mnt", 0x00020000))  # the mount namespace last: it changes the root
SYS_PIDFD_GETFD = 438  # the same on every architecture (Linux >= 5.6)
FIND_DOOR_S = 20.0
HIGH_FD = 1000  # grabbed descriptors wait here until the others are closed

_libc = ctypes.CDLL("libc.so.6", use_errno=True)


def _check(result: int, what: str) -> int:
    if result < 0:
        err = ctypes.get_errno()
        raise OSError(err, f"{what}: {os.strerror(err)}")
    return result


def find_door(outer_pid: int, depth: int) -> int:
    """The door's pid: `depth` generations below the isolation's outer process (bubblewrap, unshare), once it
    runs the door's code (its view is then complete)."""
    end = time.monotonic() + FIND_DOOR_S
    while time.monotonic() < end:
        if _ended(outer_pid):
            raise OSError(f"the job's isolation (pid {outer_pid}) ended before its door started")
        pid = outer_pid
        try:
            for _ in range(depth):
                with open(f"/proc/{pid}/task/{pid}/children") as fh:
                    pid = int(fh.read().split()[0])
            with open(f"/proc/{pid}/cmdline", "rb") as fh:
                if DOOR_MARK.encode() in fh.read():
                    return pid
        except (OSError, IndexError, ValueError):
            pass
        time.sleep(0.005)
    raise OSError(f"the job's door did not start under pid {outer_pid} within {FIND_DOOR_S:g} s")


def _ended(pid: int) -> bool:
    """Whether `pid` has exited (a zombie, or reaped)."""
    try:
        return stat_fields(pid)[0] in ("Z", "X")
    except (OSError, IndexError):
        return True


def grab_fds(door: int, numbers: list[int], keep: list[int]) -> list[int]:
    """The door's descriptors `numbers` (0, 1 and 2 too) onto the same numbers here, every descriptor but those
    and `keep` closed; returns `keep`'s new numbers (moved above the door's)."""
    pidfd = os.pidfd_open(door)
    try:
        grabbed = {n: _check(_libc.syscall(SYS_PIDFD_GETFD, pidfd, n, 0), f"taking descriptor {n} of the door")
                   for n in sorted({0, 1, 2, *numbers})}
    finally:
        os.close(pidfd)
    moved = {n: os.dup2(fd, HIGH_FD + i) for i, (n, fd) in enumerate(grabbed.items())}
    kept = [os.dup2(fd, HIGH_FD + len(moved) + i) for i, fd in enumerate(keep)]
    for name in os.listdir("/proc/self/fd"):
        fd = int(name)
        if fd not in moved.values() and fd not in kept:
            try:
                os.close(fd)
            except OSError:
                pass
    for n, fd in moved.items():
        os.dup2(fd, n, inheritable=n <= 2)
        os.close(fd)
    return kept


def join(door: int, procs_files: list[str]) -> None:
    """Enter the door's cgroups, namespaces and folder (see the module's text)."""
    me = os.getpid()
    for path in procs_files:
        with open(path, "w") as fh:
            fh.write(str(me))
    cwd = os.open(f"/proc/{door}/cwd", os.O_PATH | os.O_DIRECTORY)
    targets = []
    for name, flag in NAMESPACES:
        theirs = f"/proc/{door}/ns/{name}"
        if os.path.exists(theirs) and os.stat(theirs).st_ino != os.stat(f"/proc/self/ns/{name}").st_ino:
            targets.append((os.open(theirs, os.O_RDONLY), flag, name))
    for fd, flag, name in targets:
        try:
            _check(_libc.setns(fd, flag), f"joining the job's {name} namespace")
        finally:
            os.close(fd)
    os.fchdir(cwd)
    os.close(cwd)


def drop_privileges(keep: tuple[str, ...] = KEPT_CAPS) -> None:
    limit_capabilities(frozenset(CAP_NAMES[c] for c in keep))
    _check(_libc.prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0), "setting no_new_privs")


def door_environment(door: int) -> dict[str, str]:
    with open(f"/proc/{door}/environ", "rb") as fh:
        pairs = [item.split(b"=", 1) for item in fh.read().split(b"\0") if b"=" in item]
    return {k.decode(errors="surrogateescape"): v.decode(errors="surrogateescape") for k, v in pairs}
