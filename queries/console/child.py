"""A SQL-console worker: `python -m queries.console.child STORE RUNS_DIR HEADROOM_BYTES FILE_BYTES` (started by
`queries.console.pool` in a scratch folder, never by hand; Linux: it reads its size from /proc).

It exits when its parent process goes, loads the store, then caps its own address space (`RLIMIT_AS`) at its size
after loading plus HEADROOM_BYTES and each file it writes (`RLIMIT_FSIZE`: DuckDB's spill files in the scratch
folder) at FILE_BYTES, and tells the parent it is ready. Then, per request line on stdin
(`{"sql", "max_rows", "timeout_s"}`), it answers on stdout with one JSON header line followed by `bytes` bytes:
`{"bytes": N}` + the result as an Arrow IPC stream, or `{"error": message, "kind": "console"|"store", "bytes": 0}`
(`"recycle": true` when the worker should not be used again: a statement, typically one that ran out of memory,
left more than half of the headroom mapped, which DuckDB's allocator does not always hand back). Anything a
library prints goes to stderr, never into the replies.
"""

from __future__ import annotations

import json
import os
import resource
import signal
import sys
import threading
import time
from dataclasses import replace
from pathlib import Path
from typing import BinaryIO

import pyarrow as pa

from common.settings import Settings, load_settings
from queries.console.pool import MAX_RESULT_BYTES
from queries.console.statements import MAX_ROWS_CAP, ConsoleError, statement_result
from queries.db import connect
from queries.store import StoreError


def _address_space() -> int:
    """This process's virtual memory size in bytes (VmSize)."""
    with open("/proc/self/status") as fh:
        for line in fh:
            if line.startswith("VmSize:"):
                return int(line.split()[1]) * 1024
    raise RuntimeError("no VmSize in /proc/self/status")


def _exit_when_orphaned(parent: int) -> None:
    """Leave as soon as the parent process is gone (re-parented), even in the middle of a statement. Not
    PR_SET_PDEATHSIG: that fires when the parent's *thread* that started us ends, and explorer sessions are
    threads that come and go."""
    while os.getppid() == parent:
        time.sleep(0.5)
    os._exit(1)


def _send(out: BinaryIO, header: dict, payload: bytes = b"") -> None:
    out.write(json.dumps(dict(header, bytes=len(payload))).encode() + b"\n" + payload)
    out.flush()


def _answer(store: Path, settings: Settings, request: dict) -> tuple[dict, bytes]:
    try:
        sql, max_rows, timeout_s = request["sql"], int(request["max_rows"]), float(request["timeout_s"])
        table = statement_result(connect(store, settings), sql, max(1, min(max_rows, MAX_ROWS_CAP)), timeout_s)
    except MemoryError:
        return {"error": "the statement needs more memory than the console allows; narrow it down or aggregate",
                "kind": "console"}, b""
    except ConsoleError as exc:
        return {"error": exc.user_message, "kind": "console"}, b""
    except StoreError as exc:
        return {"error": str(exc), "kind": "store", "recycle": True}, b""
    sink = pa.BufferOutputStream()
    with pa.ipc.new_stream(sink, table.schema) as writer:
        writer.write_table(table)
    payload = sink.getvalue().to_pybytes()
    if len(payload) > MAX_RESULT_BYTES:
        return {"error": f"the result takes {len(payload) / 2**20:.0f} MiB; the console returns at most "
                         f"{MAX_RESULT_BYTES // 2**20} MiB (select fewer or shorter columns)", "kind": "console"}, b""
    return {}, payload


def main(argv: list[str]) -> int:
    store, runs_dir, headroom, file_bytes = Path(argv[0]), Path(argv[1]), int(argv[2]), int(argv[3])
    settings = replace(load_settings(), runs_dir=runs_dir)  # once, at this process's entry
    threading.Thread(target=_exit_when_orphaned, args=(os.getppid(),), daemon=True).start()
    out = os.fdopen(os.dup(1), "wb")
    os.dup2(2, 1)  # stray prints from libraries go to stderr, never into a reply
    try:
        db = connect(store, settings)
        db.run("SELECT count(*) FROM programs")  # starts DuckDB's threads before the size is taken
    except StoreError as exc:
        _send(out, {"error": str(exc), "kind": "store"})
        return 0
    loaded = _address_space()
    resource.setrlimit(resource.RLIMIT_AS, (loaded + headroom, loaded + headroom))
    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # a write past the file limit fails (EFBIG) instead of killing
    resource.setrlimit(resource.RLIMIT_FSIZE, (file_bytes, file_bytes))
    _send(out, {"ready": True})
    for line in sys.stdin.buffer:
        try:
            request = json.loads(line)
        except ValueError:
            return 2
        header, payload = _answer(store, settings, request)
        if _address_space() > loaded + headroom // 2:
            header["recycle"] = True  # memory the statement left mapped would shrink the next one's share
        _send(out, header, payload)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
