"""Worker processes for ingest (per-program fields, references, search index, syntax check), all started from one
forkserver, and made to end with the ingest that started them.

The forkserver imports the modules the workers run (pyarrow, numpy, the parser: ~0.7 CPU s) once, before any
worker starts; each worker is forked from it with them already imported, instead of importing them again itself.
A worker's parent is the forkserver, not the ingest process, so each worker watches the ingest process itself
(a pidfd, which a recycled pid cannot fool) and exits when it ends, whatever ended it (SIGKILL included); and it
asks the kernel for SIGKILL should the forkserver end first (PR_SET_PDEATHSIG). Each keeps the memory it frees
(`malloc.keep_freed_memory`).
"""

from __future__ import annotations

import ctypes
import multiprocessing
import os
import select
import signal
import sys
import threading
import types
from concurrent.futures import ProcessPoolExecutor

from queries.ingest.malloc import keep_freed_memory

# what the workers run; a forkserver already running (started earlier in this process) keeps what it has
PRELOAD = ["queries.ingest.program_fields", "queries.ingest.refs", "queries.ingest.search_build",
           "queries.ingest.program_checks", "queries.neardup.command"]
_PR_SET_PDEATHSIG = 1


class _Pool(ProcessPoolExecutor):
    """Starts each worker with a bare `__main__`: multiprocessing would otherwise have the worker run the parent's
    main script again (`__main__.__file__`), and a process that ran a Streamlit page as `__main__` (AppTest, the
    explorer building its sample store) would have every worker run that page, which starts an ingest of its own
    in the worker and breaks the pool (seen in a fresh clone's test run)."""

    def _spawn_process(self) -> None:  # ProcessPoolExecutor's own hook for starting one worker (3.9+)
        main = sys.modules.get("__main__")
        sys.modules["__main__"] = types.ModuleType("__main__")
        try:
            super()._spawn_process()
        finally:
            if main is not None:
                sys.modules["__main__"] = main


def process_pool(workers: int) -> ProcessPoolExecutor:
    context = multiprocessing.get_context("forkserver")
    context.set_forkserver_preload(PRELOAD)
    return _Pool(workers, mp_context=context, initializer=_start_worker, initargs=(os.getpid(),))


def _start_worker(owner: int) -> None:
    keep_freed_memory()
    die_with(owner)


def stop_pool(pool: ProcessPoolExecutor, finished: bool) -> None:
    """Shut `pool` down: after its work when `finished`, else at once, its workers killed: an interrupted ingest
    must not wait for the tasks already handed out (a syntax-check task is seconds of work)."""
    if not finished:
        for process in list((getattr(pool, "_processes", None) or {}).values()):  # no public way before 3.14
            process.kill()
    pool.shutdown(wait=finished, cancel_futures=not finished)


def die_with(owner: int) -> None:
    """In a worker: exit when process `owner` ends, or at once if it already has."""
    parent = os.getppid()
    if sys.platform.startswith("linux"):
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
        if os.getppid() != parent:  # the forkserver ended before the request took effect
            os._exit(1)
    try:
        handle = os.pidfd_open(owner)
    except ProcessLookupError:
        os._exit(1)
    except (AttributeError, OSError):  # no pidfd (old kernel, not Linux): the forkserver's end still ends us
        return
    threading.Thread(target=_exit_when_readable, args=(handle,), name="die-with-owner", daemon=True).start()


def _exit_when_readable(handle: int) -> None:
    select.select([handle], [], [])  # a pidfd becomes readable when its process ends
    os._exit(1)
