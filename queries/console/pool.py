"""Child processes that run SQL-console statements with a time and a memory limit enforced from outside.

Each worker is `python -m queries.console.child` (see there for the protocol), started for one (store, runs dir,
store version): it loads the store, caps its own address space (`RLIMIT_AS`) at what that took plus
`MEMORY_HEADROOM_BYTES`, and answers one statement at a time. The parent (`run`) sends a statement and waits at
most its time limit plus `KILL_GRACE_S`; past that the worker is SIGKILLed, since DuckDB does not check for
interruption while building one huge list or string. A worker that dies (out of memory, a crash in the parser)
costs only the statement it was running; one that is left holding more than half of its headroom after a
statement (typically one that ran out of memory: DuckDB does not always hand memory back) is replaced. At most `MAX_WORKERS` run per store; a statement that finds them all busy for
`QUEUE_WAIT_S` is refused. Idle workers are kept (at most `MAX_IDLE` in all) so that the next statement does not pay
for loading the store again.
"""

from __future__ import annotations

import atexit
import json
import os
import select
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from collections import OrderedDict
from pathlib import Path
from typing import Any

from common.errors import TlxError
from common.settings import REPO_ROOT
from queries.store import StoreError, store_version

MAX_WORKERS = 2
MAX_IDLE = 4
KILL_GRACE_S = 1.0
QUEUE_WAIT_S = 20.0
STARTUP_TIMEOUT_S = 120.0
MEMORY_HEADROOM_BYTES = 2 * 1024**3
SCRATCH_FILE_BYTES = 1024**3  # RLIMIT_FSIZE of a worker: caps each file DuckDB spills to
DUCKDB_MEMORY = "1GB"  # DuckDB's own limit inside a worker: the first line, below the address-space cap
MAX_RESULT_BYTES = 64 * 1024 * 1024
HEADER_BYTES = 64 * 1024
DIED = "the console's worker process died (out of memory, or a crash in DuckDB); try a smaller statement"


class WorkerFailure(TlxError):
    """A worker could not answer: it ran past its time, died, was busy, or could not start."""


Key = tuple[str, str, int]  # (store path, runs dir, `queries.store.store_version`)


def _read_until(fd: int, buffer: bytearray, done, deadline: float) -> None:
    """Read from `fd` into `buffer` until `done(buffer)`; WorkerFailure on EOF, TimeoutError past `deadline`.
    (`poll`, not `select`: a busy explorer may hold descriptors above select's 1024.)"""
    poller = select.poll()
    poller.register(fd, select.POLLIN)
    while not done(buffer):
        left = deadline - time.monotonic()
        if left <= 0 or not poller.poll(left * 1000):
            raise TimeoutError
        chunk = os.read(fd, 1 << 20)
        if not chunk:
            raise WorkerFailure(DIED)
        buffer += chunk


class Worker:
    """One `queries.console.child` process and its pipes."""

    def __init__(self, key: Key):
        self.key = key
        self.scratch = tempfile.mkdtemp(prefix="tlx-console-")  # its cwd: where DuckDB spills (`.tmp/`)
        env = dict(os.environ, MALLOC_ARENA_MAX="2", TLX_DUCKDB_MEMORY=DUCKDB_MEMORY,
                   PYTHONPATH=os.pathsep.join(filter(None, [str(REPO_ROOT), os.environ.get("PYTHONPATH")])))
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "queries.console.child", key[0], key[1], str(MEMORY_HEADROOM_BYTES),
             str(SCRATCH_FILE_BYTES)],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, cwd=self.scratch, env=env)  # stderr: the explorer's log
        self._pending = bytearray()
        try:
            header, _ = self._reply(time.monotonic() + STARTUP_TIMEOUT_S)
        except TimeoutError:
            self.kill()
            raise WorkerFailure(f"the console's worker did not load the store in {STARTUP_TIMEOUT_S:g} s") from None
        except WorkerFailure:
            self.kill()
            raise
        self.startup_error: dict[str, Any] | None = header if "error" in header else None
        if self.startup_error is not None:
            self.kill()

    def _reply(self, deadline: float) -> tuple[dict[str, Any], bytes]:
        """One reply: a JSON header line, then `header["bytes"]` bytes of Arrow IPC stream."""
        fd, buffer = self.proc.stdout.fileno(), self._pending
        _read_until(fd, buffer, lambda b: b"\n" in b or len(b) > HEADER_BYTES, deadline)
        line, _, rest = bytes(buffer).partition(b"\n")
        try:
            header = json.loads(line)
            size = int(header.get("bytes", 0))
        except (ValueError, TypeError, AttributeError):
            raise WorkerFailure("the console's worker answered something unreadable") from None
        if not 0 <= size <= MAX_RESULT_BYTES:
            raise WorkerFailure("the console's worker answered something unreadable")
        body = bytearray(rest)
        _read_until(fd, body, lambda b: len(b) >= size, deadline)
        self._pending = body[size:]
        return header, bytes(body[:size])

    def ask(self, request: dict[str, Any], deadline: float) -> tuple[dict[str, Any], bytes]:
        """Send one request, return its reply; TimeoutError past `deadline`, WorkerFailure if the worker died."""
        try:
            self.proc.stdin.write(json.dumps(request).encode() + b"\n")
            self.proc.stdin.flush()
        except OSError:
            raise WorkerFailure(DIED) from None
        return self._reply(deadline)

    def kill(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.wait()
        for pipe in (self.proc.stdin, self.proc.stdout):
            try:
                pipe.close()
            except OSError:
                pass
        shutil.rmtree(self.scratch, ignore_errors=True)  # what a killed DuckDB left spilled


class Pool:
    """Workers by key: idle ones kept in LRU order, busy ones counted."""

    def __init__(self) -> None:
        self._cond = threading.Condition()
        self._idle: OrderedDict[int, Worker] = OrderedDict()
        self._busy: dict[Key, int] = {}

    def _take(self, key: Key, wait_s: float) -> Worker | None:
        """An idle worker of `key` (None: the caller starts one); WorkerFailure when all are busy too long."""
        deadline = time.monotonic() + wait_s
        with self._cond:
            for stale in [i for i, w in self._idle.items()
                          if (w.key[:2] == key[:2] and w.key != key) or w.proc.poll() is not None]:
                self._idle.pop(stale).kill()  # the store was rebuilt, or the worker died while idle
            while True:
                mine = next((i for i, w in self._idle.items() if w.key == key), None)
                if mine is not None:
                    self._busy[key] = self._busy.get(key, 0) + 1
                    return self._idle.pop(mine)
                if self._busy.get(key, 0) < MAX_WORKERS:
                    self._busy[key] = self._busy.get(key, 0) + 1
                    return None
                left = deadline - time.monotonic()
                if left <= 0:
                    raise WorkerFailure(f"the console is busy with {MAX_WORKERS} other statements; try again")
                self._cond.wait(left)

    def _give_back(self, key: Key, worker: Worker | None) -> None:
        with self._cond:
            self._busy[key] -= 1
            if worker is not None:
                self._idle[id(worker)] = worker
                while len(self._idle) > MAX_IDLE:
                    self._idle.popitem(last=False)[1].kill()
            self._cond.notify_all()

    def ask(self, key: Key, request: dict[str, Any], limit_s: float) -> tuple[dict[str, Any], bytes]:
        """The reply of a worker of `key` to `request`, with `limit_s` (+ grace) for the answer."""
        worker = self._take(key, QUEUE_WAIT_S)
        keep = None
        try:
            if worker is None:
                worker = Worker(key)
                if worker.startup_error is not None:
                    return worker.startup_error, b""
            try:
                header, payload = worker.ask(request, time.monotonic() + limit_s + KILL_GRACE_S)
            except TimeoutError:
                raise WorkerFailure(f"the statement stopped after its {limit_s:g} s time limit (its process was "
                                    "killed); narrow it down or add a LIMIT") from None
            if not header.get("recycle"):
                keep = worker
            return header, payload
        finally:
            if worker is not None and keep is None:
                worker.kill()
            self._give_back(key, keep)

    def close(self) -> None:
        with self._cond:
            while self._idle:
                self._idle.popitem()[1].kill()


_POOL = Pool()
atexit.register(_POOL.close)


def ask(store: Path, runs_dir: Path, request: dict[str, Any], limit_s: float) -> tuple[dict[str, Any], bytes]:
    """Run `request` in a worker for `store` (resolved) and `runs_dir`: (reply header, Arrow IPC bytes).

    The header is `{"error": message, "kind": "store"|"console"}` when the store cannot be opened or the statement
    was refused or failed; WorkerFailure when no worker answered in time or one died."""
    path = Path(store).expanduser().resolve()
    try:
        version = store_version(path)  # the key of every cache of a store
    except StoreError:
        version = -1  # the worker reports the missing store
    return _POOL.ask((str(path), str(Path(runs_dir).expanduser().resolve()), version), request, limit_s)
