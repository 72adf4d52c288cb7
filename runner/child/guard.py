"""Inside the child only: a Python audit hook that refuses network use and file writes outside the job's folders.

Installed just before the program is loaded (`install`), it raises `PermissionError` for
- `socket.connect`/`socket.sendto`/`socket.bind` on any address family but AF_UNIX (no dataset program needs the
  network, and loopback services such as the runner itself must not be reachable from a job);
- opening a file for writing, and removing/renaming/truncating/chmod-ing paths, outside the allowed roots (the
  job's temp dir, the Triton cache dir, /dev/null);
- sending a signal (`os.kill`, `os.killpg`) to a process outside the job's own process group (the job runs in
  its own session: this keeps it from killing the runner that started it, or the runner's group); in the
  candidate's process, also to its judge or to the group they share.
Every refusal is recorded; `refused()` lists them (the child turns them into result flags). Audit hooks cannot be
removed from Python, but code that calls libc directly (ctypes, C extensions) is not seen: this stops accidents
and naive abuse, it is not a security boundary (RELIABILITY.md says what is)."""

from __future__ import annotations

import os
import socket
import sys
from typing import Any

_WRITE_FLAGS = os.O_WRONLY | os.O_RDWR | os.O_CREAT | os.O_APPEND | os.O_TRUNC
_PATH_EVENTS = {"os.remove": 0, "os.rmdir": 0, "os.rename": 1, "os.truncate": 0, "os.chmod": 0, "os.chown": 0,
                "shutil.rmtree": 0, "os.symlink": 1, "os.link": 1, "os.mkdir": 0}
_refused: list[str] = []
_roots: tuple[str, ...] = ()
_protected: frozenset[int] = frozenset()  # pids never signalled (the candidate's judge)


def refused() -> list[str]:
    return list(_refused)


def _allowed(path: Any) -> bool:
    if isinstance(path, int):  # an open descriptor: checked when it was opened
        return True
    try:
        real = os.path.realpath(os.fsdecode(path))
    except (TypeError, ValueError):
        return False
    return real == os.devnull or any(real == r or real.startswith(r + os.sep) for r in _roots)


def _refuse(what: str) -> None:
    if len(_refused) < 20:
        _refused.append(what)
    raise PermissionError(f"refused by the sandbox: {what}")


def _in_job(pid: int, group: bool) -> bool:
    """Whether `pid` (a pgid if `group`) belongs to this job's process group; 0 and -1 mean "mine" / "all".
    Where pids are protected (the candidate's judge shares the group), no group signal is allowed."""
    own = os.getpgrp()
    if _protected and (group or pid <= 0 or pid in _protected):
        return False
    if group or pid < 0:
        return abs(pid) == own or pid == 0
    if pid == 0:
        return True
    try:
        return os.getpgid(pid) == own
    except OSError:
        return True  # no such process: the call fails on its own


def _hook(event: str, args: tuple) -> None:
    if event in ("socket.connect", "socket.sendto", "socket.bind"):
        sock = args[0]
        if getattr(sock, "family", None) != socket.AF_UNIX:
            _refuse(f"network {event.split('.')[1]} {args[1]!r}"[:200])
    elif event == "open":
        path, mode, flags = args
        writing = (isinstance(mode, str) and any(c in mode for c in "wax+")) or (
            isinstance(flags, int) and flags & _WRITE_FLAGS)
        if writing and path is not None and not _allowed(path):
            _refuse(f"write {os.fsdecode(path) if not isinstance(path, int) else path}"[:200])
    elif event in ("os.kill", "os.killpg"):
        if not _in_job(int(args[0]), event == "os.killpg") or int(args[0]) == -1:
            _refuse(f"signal {args[1]} to {'group' if event == 'os.killpg' else 'pid'} {args[0]}")
    elif event in _PATH_EVENTS:
        path = args[_PATH_EVENTS[event]] if len(args) > _PATH_EVENTS[event] else None
        if path is not None and not _allowed(path):
            _refuse(f"{event} {os.fsdecode(path) if not isinstance(path, int) else path}"[:200])


def install(roots: list[str], protected: tuple[int, ...] = ()) -> None:
    """Allow writes only under `roots` (resolved now) from here on, and no signal to the `protected` pids or to
    the process group they share."""
    global _roots, _protected
    _roots = tuple(os.path.realpath(r) for r in roots if r)
    _protected = frozenset(protected)
    sys.addaudithook(_hook)
