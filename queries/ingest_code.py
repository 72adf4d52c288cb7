"""Write program texts into code shards (`code/part-NNNNN.parquet`: id, x; zstd; small row groups; page index).

Each split starts a new part, and rows arrive in id order, so every part is sorted by id. `add` returns where
each row landed (part number, row group), which the index keeps so that one program is one row-group read.
"""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

CODE_SCHEMA = pa.schema([("id", pa.string()), ("x", pa.large_string())])


class CodeWriter:
    def __init__(self, folder: Path, group_rows: int, shard_rows: int):
        if group_rows < 1 or shard_rows < group_rows:
            raise ValueError("need 1 <= group_rows <= shard_rows")
        self.folder, self.group_rows = folder, group_rows
        self.shard_rows = shard_rows - shard_rows % group_rows  # parts end on a row-group boundary
        self.part = -1
        self.split: str | None = None
        self.rows_in_part = 0
        self.writer: pq.ParquetWriter | None = None
        self.ids: list[str] = []
        self.texts: list[str] = []

    def start_split(self, split: str) -> None:
        if self.split != split:
            self._next_part()
        self.split = split

    def add(self, ids: list[str], texts: list[str]) -> tuple[list[int], list[int]]:
        shards, groups = [], []
        for row_id, text in zip(ids, texts, strict=True):
            if self.rows_in_part == self.shard_rows:
                self._next_part()
            shards.append(self.part)
            groups.append(self.rows_in_part // self.group_rows)
            self.ids.append(row_id)
            self.texts.append(text)
            self.rows_in_part += 1
            if len(self.ids) == self.group_rows:
                self._flush()
        return shards, groups

    def close(self) -> None:
        self._flush()
        if self.writer is not None:
            self.writer.close()
            self.writer = None

    def _next_part(self) -> None:
        self.close()
        self.part += 1
        self.rows_in_part = 0
        self.writer = pq.ParquetWriter(
            self.folder / f"part-{self.part:05d}.parquet",
            CODE_SCHEMA,
            compression="zstd",
            write_page_index=True,
            write_statistics=["id"],
        )

    def _flush(self) -> None:
        if self.ids:
            table = pa.table({"id": self.ids, "x": pa.array(self.texts, pa.large_string())}, schema=CODE_SCHEMA)
            self.writer.write_table(table, row_group_size=self.group_rows)
            self.ids, self.texts = [], []
