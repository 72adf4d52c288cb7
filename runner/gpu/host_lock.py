"""One GPU's gate across the processes of a host: a service and a `runner bulk` (or two bulk runs) on one GPU must
not time beside each other's jobs, and each process has its own `GpuGate`.

`HostLock` is a readers-writer lock on files per GPU in `TLX_RUNNER_LOCK_DIR` (default `<tmp>/tlx-gpu-locks`),
with `flock`: `main` is held shared while any job of this process holds its gate shared, and exclusive while one
times; `intent` makes it prefer writers as the in-process gate does: a writer takes `intent` exclusive before it
waits for `main`, a process's first reader passes through `intent` shared before it takes `main`, and the other
readers of a process that already holds `main` wait too while another process's writer waits (`defer_reader`),
so no new reader of any process starts while a writer waits.

`priority` serves the service's re-runs (issue 22: an interactive re-run beside a bulk run should wait for at most
the steps in flight, once, not for a queue of bulk jobs nor for a new bulk step between each of its own): a
process made with `priority=True` (`prefer_this_process`, called by `runner serve`) holds that file shared while
any of its jobs claims the GPU (`claim`: from the job's first request for the gate to its end, and during any
wait), and then its readers skip `intent`; the other processes take no new hold, shared or exclusive, while it is
held. flock locks go with the process: a killed runner holds nothing.

Children hold it too while they touch the GPU outside a job's steps (`child_descriptors`): a spare creating its
CUDA context and warming up, as a reader, so that no timing stage runs beside it."""

from __future__ import annotations

import fcntl
import os
import re
import threading
import time
from pathlib import Path

from common.settings import lock_dir

POLL_S = 0.01
_preferred = False  # this process's host locks take priority (`prefer_this_process`)


def lock_paths(directory: Path, gpu: str) -> tuple[Path, Path, Path]:
    """A GPU's `main`, `intent` and `priority` files, in `directory` (made, shared by the host's users)."""
    directory.mkdir(parents=True, exist_ok=True)
    try:
        os.chmod(directory, 0o1777)  # runners of other users share it; each keeps its own files
    except OSError:
        pass
    name = re.sub(r"[^A-Za-z0-9_.-]", "_", gpu or "default")
    main, intent, priority = (directory / f"gpu-{name}.{kind}" for kind in ("main", "intent", "priority"))
    return main, intent, priority


class HostLock:
    def __init__(self, directory: Path, gpu: str, priority: bool = False) -> None:
        self.paths = lock_paths(directory, gpu)
        self._main, self._intent, self._priority = (os.open(p, os.O_RDWR | os.O_CREAT, 0o666) for p in self.paths)
        # separate open files to look at the others' locks with (flock on a held descriptor would convert ours)
        self._intent_probe, self._priority_probe = (os.open(p, os.O_RDWR) for p in self.paths[1:])
        self.priority = priority
        self._claims = 0
        self._claims_lock = threading.Lock()

    @staticmethod
    def _take(fd: int, kind: int, abort: threading.Event | None) -> bool:
        while True:
            try:
                fcntl.flock(fd, kind | fcntl.LOCK_NB)
                return True
            except BlockingIOError:
                if abort is not None and abort.is_set():
                    return False
                time.sleep(POLL_S)

    @staticmethod
    def _held_against(probe: int, kind: int) -> bool:
        """Whether some other open file holds a lock that `kind` conflicts with."""
        try:
            fcntl.flock(probe, kind | fcntl.LOCK_NB)
        except BlockingIOError:
            return True
        fcntl.flock(probe, fcntl.LOCK_UN)
        return False

    def priority_claimed(self) -> bool:
        """A priority process (not this one) has a job that claims the GPU (`claim`)."""
        return not self.priority and self._held_against(self._priority_probe, fcntl.LOCK_EX)

    def defer_reader(self) -> bool:
        """A new reader of this process should wait although this process holds `main`: another process's writer
        waits (this one's own writers are seen by the in-process gate first), or a priority process's job does."""
        return self.priority_claimed() or (not self.priority and self._held_against(self._intent_probe, fcntl.LOCK_SH))

    def claim(self, on: bool) -> None:
        """A job of this process starts (`on`) or ends a claim on the GPU (claims nest: a wait for the gate is one,
        a job from its first request to its end another); a priority process tells the others through its
        `priority` file while any claim of its jobs lasts."""
        if not self.priority:
            return
        with self._claims_lock:
            self._claims += 1 if on else -1
            if on and self._claims == 1:
                fcntl.flock(self._priority, fcntl.LOCK_SH)
            elif not on and self._claims == 0:
                fcntl.flock(self._priority, fcntl.LOCK_UN)

    def _after_priority(self, abort: threading.Event | None) -> bool:
        while self.priority_claimed():
            if abort is not None and abort.is_set():
                return False
            time.sleep(POLL_S)
        return True

    def _through_intent(self, kind: int, abort: threading.Event | None) -> bool:
        """`main` in `kind`, passing through `intent` in the same kind (a writer keeps it while it waits)."""
        if not self._after_priority(abort) or not self._take(self._intent, kind, abort):
            return False
        try:
            return self._take(self._main, kind, abort)
        finally:
            fcntl.flock(self._intent, fcntl.LOCK_UN)

    def acquire_shared(self, abort: threading.Event | None = None) -> bool:
        if self.priority:
            return self._take(self._main, fcntl.LOCK_SH, abort)
        return self._through_intent(fcntl.LOCK_SH, abort)

    def acquire_exclusive(self, abort: threading.Event | None = None) -> bool:
        return self._through_intent(fcntl.LOCK_EX, abort)

    def release(self) -> None:
        fcntl.flock(self._main, fcntl.LOCK_UN)


def child_descriptors(gpu: str, pairs: int) -> list[int]:
    """`pairs` fresh (main, intent) descriptor pairs of a GPU's lock files for a child's processes to hold the GPU
    shared with (`runner.child.warmup.gpu_held`), each pair its own open files (a flock belongs to the open file, so
    a process must not share one with another); [] where the lock folder cannot be made. The caller closes them
    once the child has them."""
    fds: list[int] = []
    try:
        paths = lock_paths(lock_dir(), gpu)[:2]
        for _ in range(pairs):
            fds += [os.open(path, os.O_RDWR | os.O_CREAT, 0o666) for path in paths]
    except OSError:
        for fd in fds:
            os.close(fd)
        return []
    return fds


def prefer_this_process() -> None:
    """This process's GPU gates made from now on take priority over other processes' (the service's re-runs)."""
    global _preferred
    _preferred = True


def host_lock_for(gpu: str) -> HostLock | None:
    """The host-wide lock of a GPU, or None where the lock folder cannot be made (the gate is then this
    process's alone, as before)."""
    try:
        return HostLock(lock_dir(), gpu, priority=_preferred)
    except OSError:
        return None
