"""One GPU's gate across the processes of a host: a service and a `runner bulk` (or two bulk runs) on one GPU must
not time beside each other's jobs, and each process has its own `GpuGate`.

`HostLock` is a readers-writer lock on two files per GPU in `TLX_RUNNER_LOCK_DIR` (default
`<tmp>/tlx-gpu-locks`), with `flock`: `main` is held shared while any job of this process holds its gate shared,
and exclusive while one times; `intent` makes it prefer writers as the in-process gate does: a writer takes
`intent` exclusive before it waits for `main`, and a reader passes through `intent` shared before it takes
`main`, so no new reader of any process starts while a writer waits. The `GpuGate` of a process calls it only
on its own transitions (first reader in, last reader out, writer in and out), so within a process nothing
changes. flock locks go with the process: a killed runner holds nothing."""

from __future__ import annotations

import fcntl
import os
import re
import threading
import time
from pathlib import Path

from common.settings import lock_dir

POLL_S = 0.01


class HostLock:
    def __init__(self, directory: Path, gpu: str) -> None:
        directory.mkdir(parents=True, exist_ok=True)
        try:
            os.chmod(directory, 0o1777)  # runners of other users share it; each keeps its own files
        except OSError:
            pass
        name = re.sub(r"[^A-Za-z0-9_.-]", "_", gpu or "default")
        self.paths = (directory / f"gpu-{name}.main", directory / f"gpu-{name}.intent")
        self._main, self._intent = (os.open(p, os.O_RDWR | os.O_CREAT, 0o666) for p in self.paths)

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

    def _through_intent(self, kind: int, abort: threading.Event | None) -> bool:
        """`main` in `kind`, passing through `intent` in the same kind (a writer keeps it while it waits)."""
        if not self._take(self._intent, kind, abort):
            return False
        try:
            return self._take(self._main, kind, abort)
        finally:
            fcntl.flock(self._intent, fcntl.LOCK_UN)

    def acquire_shared(self, abort: threading.Event | None = None) -> bool:
        return self._through_intent(fcntl.LOCK_SH, abort)

    def acquire_exclusive(self, abort: threading.Event | None = None) -> bool:
        return self._through_intent(fcntl.LOCK_EX, abort)

    def release(self) -> None:
        fcntl.flock(self._main, fcntl.LOCK_UN)


def host_lock_for(gpu: str) -> HostLock | None:
    """The host-wide lock of a GPU, or None where the lock folder cannot be made (the gate is then this
    process's alone, as before)."""
    try:
        return HostLock(lock_dir(), gpu)
    except OSError:
        return None

