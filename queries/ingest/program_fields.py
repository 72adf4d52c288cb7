"""Ingest, stage 1: the index fields computed from each program's UTF-8 bytes in Python, in worker processes.

`program_fields` gives, per program, `program_sha256` (sha256 of the whole text, as the runner names programs),
`candidate_key` (`text_rules.candidate_bytes_key` of the part past the cut) and the fewest/most positional
arguments of `ModelNew.forward` (`new_forward_min/max`, for `forward_arity_mismatch`). At 60-100 us a program this
is about as much CPU as DuckDB's share of stage 1 and would hold the main thread (DuckDB would wait for it), so
`FieldWorkers` runs it on batches in worker processes while the main thread reads on; small builds compute it in
process. A batch goes to its worker as an Arrow IPC file in a slot file that both map (`handover.py`): pickled
through the pool's pipe (copies on both sides, 64 KB pipe writes), it cost ~2 CPU s more per 57k programs. The
same worker writes the batch's segments of the code search index (`index_segments.py`) while it holds the texts.
"""

from __future__ import annotations

import shutil
from collections import deque
from concurrent.futures import Future, wait
from pathlib import Path

import numpy as np
import pyarrow as pa

from common.program.text_rules import arity_range, candidate_bytes_key, model_new_forward
from common.program_hash import program_sha256
from queries.ingest.handover import Slots, read_slot
from queries.ingest.index_segments import write_segments
from queries.ingest.processes import process_pool

PARALLEL_MIN_ROWS = 20_000  # below this, starting worker processes costs more than it saves


def program_fields(texts: pa.Array, cut_bytes: pa.Array) -> dict[str, pa.Array]:
    """program_sha256 of each whole text; candidate_key and the fewest/most arguments of `ModelNew.forward` from
    the part past `cut_bytes`. Reads the UTF-8 bytes in place (hashlib releases the GIL on them)."""
    if texts.type != pa.string():
        texts = texts.cast(pa.string())
    offsets = np.frombuffer(texts.buffers()[1], np.int32)[texts.offset : texts.offset + len(texts) + 1]
    data = memoryview(texts.buffers()[2] or b"")
    shas, keys, fewest, most = [], [], [], []
    for start, end, cut in zip(offsets[:-1].tolist(), offsets[1:].tolist(), cut_bytes.to_pylist(), strict=True):
        shas.append(program_sha256(data[start:end]))
        key, without_comments = candidate_bytes_key(data[start + cut : end])
        keys.append(key)
        low, high = arity_range(model_new_forward(without_comments))
        fewest.append(low)
        most.append(high)
    return {"program_sha256": pa.array(shas, pa.string()), "candidate_key": pa.array(keys, pa.string()),
            "new_forward_min": pa.array(fewest, pa.int32()), "new_forward_max": pa.array(most, pa.int32())}


def batch_work(texts: pa.Array, cut_bytes: pa.Array, segments: list[tuple[int, int, str]]) -> dict[str, pa.Array]:
    """`program_fields` of a batch, once its search index segments (`index_segments.write_segments`) are written."""
    write_segments(texts, cut_bytes.to_numpy(), segments)
    return program_fields(texts, cut_bytes)


def batch_work_of_slot(path: str, size: int, segments: list[tuple[int, int, str]]) -> dict[str, pa.Array]:
    """`batch_work` on the batch (columns x, cut_bytes) in the slot file `path` (`handover.Slots`)."""
    batch = read_slot(path, size)
    return batch_work(batch.column("x"), batch.column("cut_bytes"), segments)


class FieldWorkers:
    """`submit(texts, cut_bytes, segments)` -> a Future of `batch_work`; at most 2 batches per worker in flight,
    handed over through as many slot files in `handover` (a folder in the build folder, removed by `close`)."""

    def __init__(self, workers: int, rows: int, handover: Path):
        self.pool = None
        self.handover = handover
        self.in_flight: deque[Future] = deque()
        self.limit = 2 * workers
        self.slots: Slots | None = None
        if workers > 1 and rows >= PARALLEL_MIN_ROWS:
            self.pool = process_pool(workers)
            handover.mkdir()
            self.slots = Slots(handover, self.limit)

    def submit(self, texts: pa.Array, cut_bytes: pa.Array, segments: list[tuple[int, int, str]]) -> Future:
        if self.pool is None:
            done: Future = Future()
            done.set_result(batch_work(texts, cut_bytes, segments))
            return done
        while len(self.in_flight) >= self.limit:  # so the slot about to be written again has been read
            self.in_flight.popleft().result()
        path, size = self.slots.write(pa.record_batch([texts, cut_bytes], names=["x", "cut_bytes"]))
        future = self.pool.submit(batch_work_of_slot, path, size, segments)
        self.in_flight.append(future)
        return future

    def settle(self) -> None:
        """Wait for every batch handed out (a failed one's error is its future's), so that no worker still
        writes a segment."""
        wait(self.in_flight)
        self.in_flight.clear()

    def close(self) -> None:
        if self.pool is not None:
            self.pool.shutdown(wait=True, cancel_futures=True)
            self.pool = None
            self.slots = None
            shutil.rmtree(self.handover, ignore_errors=True)
