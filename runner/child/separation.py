"""What keeps the judge's memory out of its candidate's reach when both run as the same user (issue 42: with
Python under /root, the candidate ran as root and read the verdict channel's key from `/proc/<judge>/mem`).

- The judge makes itself non-dumpable (`PR_SET_DUMPABLE` 0, `non_dumpable`) before it reads its job spec:
  the kernel then refuses `/proc/<judge>/mem`, `maps`, `environ`, `fd/*` and ptrace to a process of the same
  user that lacks `CAP_SYS_PTRACE`. So does the runner's process that makes the keys (`runner.sandbox.run`),
  before its first job: without a PID namespace, the candidate sees it too.
- The candidate, where it runs as root (the judge's user, when an unprivileged one cannot reach the interpreter),
  drops every capability before it imports anything of the program (`drop_capabilities`: the bounding set, then
  effective, permitted and inheritable): root without `CAP_SYS_PTRACE` is refused like any other user.

The judge's result carries `candidate_same_user` when the candidate ran as its user, and
`method.judge.candidate_kept_from_judge` says what held. Linux only; elsewhere both report that nothing was done."""

from __future__ import annotations

import ctypes
import ctypes.util
import os

PR_SET_DUMPABLE, PR_GET_DUMPABLE, PR_CAPBSET_DROP = 4, 3, 24
PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL = 47, 4
CAPABILITY_VERSION_3 = 0x20080522
LAST_CAP_FILE = "/proc/sys/kernel/cap_last_cap"


def _libc() -> ctypes.CDLL | None:
    try:
        return ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6", use_errno=True)
    except OSError:
        return None


def non_dumpable() -> bool:
    """Make this process non-dumpable; True when the kernel says it is."""
    return set_dumpable(False)


def set_dumpable(on: bool) -> bool:
    """Make this process dumpable or not (a forked candidate that changed its user is made dumpable again, as a
    program started as that user would be: `runner.child.fork`); True when the kernel says it is so."""
    libc = _libc()
    if libc is None:
        return False
    libc.prctl(PR_SET_DUMPABLE, int(on), 0, 0, 0)
    return libc.prctl(PR_GET_DUMPABLE, 0, 0, 0, 0) == int(on)


class _CapHeader(ctypes.Structure):
    _fields_ = [("version", ctypes.c_uint32), ("pid", ctypes.c_int)]


class _CapData(ctypes.Structure):
    _fields_ = [("effective", ctypes.c_uint32), ("permitted", ctypes.c_uint32), ("inheritable", ctypes.c_uint32)]


def limit_capabilities(keep: frozenset[int] = frozenset()) -> None:
    """Keep only the capabilities numbered `keep`: the bounding set (where this process may), then effective and
    permitted; inheritable and ambient emptied. OSError where the kernel refuses capset."""
    libc = _libc()
    if libc is None:
        raise OSError("no libc")
    try:
        with open(LAST_CAP_FILE) as fh:
            last = int(fh.read())
    except (OSError, ValueError):
        last = 63
    for cap in range(last + 1):  # refused without CAP_SETPCAP (a root candidate whose isolation took it): then
        if cap not in keep:  # no_new_privs keeps an exec from gaining what the bounding set still names
            libc.prctl(PR_CAPBSET_DROP, cap, 0, 0, 0)
    libc.prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0)
    mask = sum(1 << cap for cap in keep)
    header, data = _CapHeader(CAPABILITY_VERSION_3, 0), (_CapData * 2)(_CapData(mask, mask, 0), _CapData(0, 0, 0))
    if libc.capset(ctypes.byref(header), data) != 0:
        raise OSError(ctypes.get_errno(), "capset refused")


def drop_capabilities() -> str:
    """Drop every capability of this process (as root); what was done, in words."""
    if os.geteuid() != 0:
        return "not root: no capabilities to drop"
    try:
        limit_capabilities()
    except OSError as exc:
        return f"{exc}: capabilities kept"
    return "root without capabilities"
