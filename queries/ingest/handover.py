"""Batches handed to worker processes through a few memory-mapped files, each written again and again (ingest,
stage 1).

A new file per batch cost the main thread a page-cache allocation and a copy through `write` for every batch (~2.7
CPU s over the 6.5 GB of programs of the realistic 601k corpus), and each worker its page faults and the file's
release. A slot file keeps its pages: writing a batch into it is a plain copy into memory the main process has mapped
already, and each worker keeps its own mapping of it between batches. A slot is written again only once the batch it
held has been read: the caller keeps at most `count` batches in flight (`FieldWorkers`).
"""

from __future__ import annotations

import mmap
from pathlib import Path

import pyarrow as pa

_MAPPED: dict[str, mmap.mmap] = {}  # in a worker process: the slot files it has mapped, kept between batches


class Slots:
    """`write(batch)` -> (path, size) of the slot the batch went to as an Arrow IPC file, the slots taken in turn.
    A mapping goes with its last reference (the caller removes `folder` at the end)."""

    def __init__(self, folder: Path, count: int):
        self.folder, self.count, self.written = folder, count, 0
        self.maps: list[mmap.mmap | None] = [None] * count

    def write(self, batch: pa.RecordBatch) -> tuple[str, int]:
        size = _ipc_size(batch)
        slot = self.written % self.count
        self.written += 1
        path = self.folder / f"slot-{slot}.arrow"
        mapped = self.maps[slot]
        if mapped is None or len(mapped) < size:
            with open(path, "a+b") as fh:  # grown, never truncated: a worker may still map the smaller file
                fh.truncate(size + size // 4)
                mapped = self.maps[slot] = mmap.mmap(fh.fileno(), 0)
        with pa.ipc.new_file(pa.FixedSizeBufferWriter(pa.py_buffer(mapped)), batch.schema) as writer:
            writer.write_batch(batch)
        return str(path), size


def read_slot(path: str, size: int) -> pa.RecordBatch:
    """In a worker process: the batch `Slots.write` put in `path` (zero-copy, valid until the slot is written again)."""
    mapped = _MAPPED.get(path)
    if mapped is None or len(mapped) < size:
        with open(path, "rb") as fh:
            mapped = _MAPPED[path] = mmap.mmap(fh.fileno(), 0, access=mmap.ACCESS_READ)
    return pa.ipc.open_file(pa.py_buffer(mapped)[:size]).get_batch(0)


def _ipc_size(batch: pa.RecordBatch) -> int:
    """Bytes of `batch` as an Arrow IPC file (counted, not written)."""
    sink = pa.MockOutputStream()
    with pa.ipc.new_file(sink, batch.schema) as writer:
        writer.write_batch(batch)
    return sink.size()
