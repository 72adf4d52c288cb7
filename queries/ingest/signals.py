"""SIGTERM ends an ingest stage the way Ctrl-C (SIGINT) does: as a KeyboardInterrupt, so that the build folder is
removed, worker processes are stopped and the previous store stays (stage 1), or the stage-1 store stays as it
was (stage 2). Python runs signal handlers in the main thread only; called from another thread (the explorer
building its sample store), the stages leave SIGTERM alone."""

from __future__ import annotations

import functools
import signal
import threading
from collections.abc import Callable
from typing import TypeVar

F = TypeVar("F", bound=Callable)


def _interrupt(signum, frame):
    raise KeyboardInterrupt(f"signal {signal.Signals(signum).name}")


def sigterm_interrupts(function: F) -> F:
    """Run `function` with SIGTERM raising KeyboardInterrupt (the previous handler restored after)."""

    @functools.wraps(function)
    def wrapper(*args, **kwargs):
        if threading.current_thread() is not threading.main_thread():
            return function(*args, **kwargs)
        previous = signal.signal(signal.SIGTERM, _interrupt)
        try:
            return function(*args, **kwargs)
        finally:
            signal.signal(signal.SIGTERM, previous)

    return wrapper  # type: ignore[return-value]
