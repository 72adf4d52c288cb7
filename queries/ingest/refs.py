"""Problem key and title of each distinct text before the cut, computed while stage 1 reads (`parse` needs
Python's parser, ~1 ms a reference).

References repeat across the many candidates of a problem, so there are few distinct ones; but a corpus of odd
programs can make every row its own. So texts are handed over in chunks as they appear, to worker processes once
there are enough of them, and only the results are kept: memory stays bounded either way.
"""

from __future__ import annotations

from collections import deque
from concurrent.futures import Future, ProcessPoolExecutor

import pyarrow as pa

from common.program.parse import reference_fields
from common.program.text_rules import arity_range, candidate_key, model_forward
from queries.ingest.processes import process_pool

CHUNK_TEXTS = 256  # texts per chunk handed over; the first full chunk starts the worker processes
CHUNK_CHARS = 16 << 20  # or fewer texts, when they are long

Key = tuple[int, int]  # (hash of the text before the cut, its length)


def reference_fields_or_digest(before_cut: str) -> tuple[int, str, str]:
    """`parse.reference_fields`, or, should it crash on some odd program, a key from the text alone: one odd
    reference must not end a long build."""
    try:
        return reference_fields(before_cut)
    except Exception:
        return len(before_cut), candidate_key(before_cut), ""


def _fields_of(texts: list[str]) -> list[tuple]:
    """(ref_chars, problem_key, title, fewest and most arguments of `Model.forward`) of each text."""
    return [reference_fields_or_digest(text) + arity_range(model_forward(text)) for text in texts]


class References:
    """`add(key, text)` each new text before the cut (`key in refs` says whether it is known); `table()` at
    the end gives ref_hash, cut_chars, ref_chars, problem_key, title, ref_forward_min/max for every key."""

    def __init__(self, workers: int):
        self.workers = workers
        self.known: set[Key] = set()
        self.fields: dict[Key, tuple] = {}
        self.pending: dict[Key, str] = {}
        self.pending_chars = 0
        self.running: deque[tuple[list[Key], Future]] = deque()
        self.pool: ProcessPoolExecutor | None = None

    def __contains__(self, key: Key) -> bool:
        return key in self.known

    def add(self, key: Key, text: str) -> None:
        self.known.add(key)
        self.pending[key] = text
        self.pending_chars += len(text)
        if len(self.pending) >= CHUNK_TEXTS or self.pending_chars >= CHUNK_CHARS:
            self._hand_over(full_chunk=True)

    def table(self) -> pa.Table:
        try:
            self._hand_over(full_chunk=False)
            while self.running:
                self._collect()
        finally:
            self.close()
        keys, fields = list(self.fields), list(self.fields.values())
        return pa.table({
            "ref_hash": pa.array([k[0] for k in keys], pa.uint64()),
            "cut_chars": pa.array([k[1] for k in keys], pa.int64()),
            "ref_chars": pa.array([f[0] for f in fields], pa.int64()),
            "problem_key": pa.array([f[1] for f in fields], pa.string()),
            "title": pa.array([f[2] for f in fields], pa.string()),
            "ref_forward_min": pa.array([f[3] for f in fields], pa.int32()),
            "ref_forward_max": pa.array([f[4] for f in fields], pa.int32()),
        })

    def close(self) -> None:
        if self.pool is not None:
            self.pool.shutdown(wait=True, cancel_futures=True)
            self.pool = None

    def _hand_over(self, full_chunk: bool) -> None:
        if not self.pending:
            return
        keys, texts = list(self.pending), list(self.pending.values())
        self.pending, self.pending_chars = {}, 0
        if self.pool is None and self.workers > 1 and full_chunk:
            self.pool = process_pool(self.workers)
        if self.pool is None:
            self.fields.update(zip(keys, _fields_of(texts), strict=True))
            return
        while len(self.running) >= 2 * self.workers:  # bounds the texts in flight
            self._collect()
        self.running.append((keys, self.pool.submit(_fields_of, texts)))

    def _collect(self) -> None:
        keys, future = self.running.popleft()
        self.fields.update(zip(keys, future.result(), strict=True))
