"""What one source file contributed to stage 1: its rejects, and its index rows spilled to the build folder.

A file's rows are kept apart until the file is done, so that a failed fast read can be undone (the file is then
read again by the Python reader). Holding them in memory cost memory linear in the file (its index rows, with
every batch's `program_fields` future); instead each batch's rows, once its per-program fields are in, are
appended to an Arrow IPC file of the file's own in the build folder, and at most `max_pending` batches wait in
memory for their fields. Undoing the file deletes that spill file; at the end the index is built from the spill
files, read a batch at a time.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Iterator
from concurrent.futures import Future
from pathlib import Path

import pyarrow as pa


class FileRows:
    def __init__(self, spill: Path, max_pending: int):
        self.spill, self.max_pending = spill, max_pending
        self.pending: deque[tuple[pa.Table, Future]] = deque()  # index rows, and their `program_fields` to come
        self.rejects: list[tuple[int, str, str]] = []
        self.rows_read = 0
        self._sink: pa.OSFile | None = None
        self._writer: pa.ipc.RecordBatchFileWriter | None = None
        self.schema: pa.Schema | None = None  # of the spilled rows, once one batch is written

    def add(self, table: pa.Table, fields: Future) -> None:
        """Index rows of one batch, whose `program_fields` the future brings."""
        self.pending.append((table, fields))
        while self.pending and (len(self.pending) > self.max_pending or self.pending[0][1].done()):
            self._write(*self.pending.popleft())

    def finish(self) -> bool:
        """Write the batches still waiting for their fields; whether the file has index rows (in `spill`)."""
        while self.pending:
            self._write(*self.pending.popleft())
        if self._writer is None:
            return False
        self._close()
        return True

    def index(self) -> pa.Table | None:
        """The file's index rows (memory-mapped), once every batch's fields are in; None when it has none."""
        return pa.ipc.open_file(pa.memory_map(str(self.spill))).read_all() if self.finish() else None

    def batches(self) -> Iterator[pa.RecordBatch]:
        """The file's index rows, once `finish`ed, read a batch at a time: not mapped, so that a batch's memory
        goes with it (mapped, every page read stays in the process's memory until the end)."""
        with pa.OSFile(str(self.spill)) as source:
            reader = pa.ipc.open_file(source)
            for i in range(reader.num_record_batches):
                yield reader.get_batch(i)

    def discard(self) -> None:
        """Forget the file's rows (its fast read failed): the spill file goes."""
        self.pending.clear()
        self._close()
        self.spill.unlink(missing_ok=True)

    def _write(self, table: pa.Table, fields: Future) -> None:
        for name, column in fields.result().items():
            table = table.append_column(name, column)
        if self._writer is None:
            self.spill.parent.mkdir(exist_ok=True)
            self._sink = pa.OSFile(str(self.spill), "wb")
            self.schema = table.schema
            self._writer = pa.ipc.new_file(self._sink, table.schema)
        self._writer.write_table(table if table.schema == self.schema else table.cast(self.schema))

    def _close(self) -> None:
        if self._writer is not None:
            self._writer.close()
            self._sink.close()
            self._writer = self._sink = None
