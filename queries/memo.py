"""Remembered answers shared by the sessions of one process: least recently used first out, bounded by bytes,
and one computation per key at a time: callers asking for a key being computed wait for its answer."""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable
from typing import Any


class Memo:
    """Answers by key, at most `limit_bytes` in all and `largest_bytes` each."""

    def __init__(self, limit_bytes: int, largest_bytes: int | None = None):
        self.limit, self.largest, self.used = limit_bytes, largest_bytes or limit_bytes, 0
        self.items: OrderedDict[tuple, tuple[Any, int]] = OrderedDict()
        self.computing: dict[tuple, threading.Event] = {}
        self.lock = threading.Lock()

    def get_or_compute(self, key: tuple, compute: Callable[[], tuple[Any, int | None]]) -> tuple[Any, bool]:
        """(answer, whether it was remembered or computed by another caller). `compute()` gives the answer and
        its size in bytes, or None for an answer not to keep. While one caller computes a key, the others wait
        for it: concurrent sessions asking the same question make one computation, not one each. When that one
        ends without an answer to keep (an error, an incomplete answer), each waiter computes its own."""
        with self.lock:
            remembered = self._get(key)
            if remembered is not None:
                return remembered[0], True
            computing = self.computing.get(key)
            if computing is None:
                mine = self.computing[key] = threading.Event()
        if computing is not None:
            computing.wait()
            with self.lock:
                remembered = self._get(key)
            return (remembered[0], True) if remembered is not None else (compute()[0], False)
        try:
            value, size = compute()
            if size is not None:
                self._put(key, value, size)
            return value, False
        finally:
            with self.lock:
                del self.computing[key]
            mine.set()

    def clear(self) -> None:
        """Forget every answer (computations under way go on and may keep theirs)."""
        with self.lock:
            self.items.clear()
            self.used = 0

    def _get(self, key: tuple) -> tuple[Any, int] | None:
        if key in self.items:
            self.items.move_to_end(key)
            return self.items[key]
        return None

    def _put(self, key: tuple, value: Any, size: int) -> None:
        with self.lock:
            if size > self.largest or key in self.items:
                return
            self.items[key] = (value, size)
            self.used += size
            while self.used > self.limit:
                _, (_, dropped) = self.items.popitem(last=False)
                self.used -= dropped
