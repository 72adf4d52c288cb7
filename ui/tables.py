"""Any Arrow table as something `st.dataframe` can show, within a size budget (the SQL page's results).

DuckDB answers with types pandas has no equivalent for (unions), values past pandas' and Python's ranges
(`'infinity'::DATE`, year 5881580) and cells of tens of megabytes. `preview` shows such columns as text, cuts long
text cells and says what it changed; `download_bytes` keeps the whole result for a download.
"""

from __future__ import annotations

import io
from dataclasses import dataclass, field

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import streamlit as st

from ui.labels import plural
from ui.text import md

CELL_CHARS = 2_000  # characters of one text cell in the preview
PREVIEW_BYTES = 8 * 2**20  # a preview larger than this (Arrow bytes) is cut to fewer rows


@dataclass
class Preview:
    frame: object  # pandas.DataFrame
    rows_shown: int
    as_text: list[str] = field(default_factory=list)  # columns shown as text (no pandas equivalent)
    cut_cells: int = 0  # text cells cut to CELL_CHARS

    @property
    def complete(self) -> bool:
        return not self.cut_cells and not self.as_text


def _as_text(column: pa.ChunkedArray) -> pa.ChunkedArray:
    """A column as strings: Arrow's cast where it has one, else each value's Python text, else its Arrow text."""
    try:
        return pc.cast(column, pa.string())
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
        pass
    values = []
    for scalar in column:
        try:
            value = scalar.as_py()
            values.append(None if value is None else str(value))
        except (ValueError, OverflowError, TypeError, pa.ArrowException):
            values.append(f"{scalar.type} value (no Python equivalent)")
    return pa.chunked_array([pa.array(values, pa.string())])


def _cut(column: pa.ChunkedArray) -> tuple[pa.ChunkedArray, int]:
    """Text cells longer than CELL_CHARS cut to that many characters plus a note; how many were cut."""
    if not pa.types.is_string(column.type) and not pa.types.is_large_string(column.type):
        return column, 0
    long = pc.greater(pc.utf8_length(column), CELL_CHARS)
    n = pc.sum(long).as_py() or 0
    if not n:
        return column, 0
    head = pc.utf8_slice_codeunits(column, 0, CELL_CHARS)
    marked = pc.binary_join_element_wise(head, pa.scalar("… (cut)", column.type), "")
    return pc.if_else(long, marked, column), n


def preview(table: pa.Table) -> Preview:
    """The table as a pandas frame: unconvertible columns as text, long text cut, at most PREVIEW_BYTES."""
    as_text, cut_cells, columns = [], 0, []
    for name, column in zip(table.column_names, table.columns, strict=True):
        try:
            column.to_pandas()
        except (pa.ArrowException, ValueError, OverflowError, TypeError):
            column = _as_text(column)
            as_text.append(name)
        column, n = _cut(column)
        cut_cells += n
        columns.append(column)
    shown = pa.table(columns, names=table.column_names)
    rows = shown.num_rows
    while rows > 1 and shown.slice(0, rows).nbytes > PREVIEW_BYTES:
        rows //= 2
    return Preview(shown.slice(0, rows).to_pandas(), rows, as_text, cut_cells)


def download_bytes(table: pa.Table) -> bytes:
    """The whole result as Parquet (columns Parquet cannot hold, such as unions, as text)."""
    sink = io.BytesIO()
    try:
        pq.write_table(table, sink)
    except (pa.ArrowException, ValueError):
        sink = io.BytesIO()
        columns = [c if _parquet_holds(c) else _as_text(c) for c in table.columns]
        pq.write_table(pa.table(columns, names=table.column_names), sink)
    return sink.getvalue()


def _parquet_holds(column: pa.ChunkedArray) -> bool:
    try:
        pq.write_table(pa.table([column.slice(0, 1)], names=["c"]), io.BytesIO())
    except (pa.ArrowException, ValueError):
        return False
    return True


def show(table: pa.Table, *, key: str) -> None:
    """The preview with a caption saying what it changed, and the whole result as a download when it differs."""
    shown = preview(table)
    notes = [plural(table.num_rows, "row")]
    if shown.rows_shown < table.num_rows:
        notes.append(f"the first {plural(shown.rows_shown, 'row')} shown")
    if shown.as_text:
        notes.append("shown as text (no table equivalent): " + md(", ".join(shown.as_text)))
    if shown.cut_cells:
        notes.append(f"{plural(shown.cut_cells, 'cell')} cut to {CELL_CHARS:,} characters")
    st.caption(" · ".join(notes))
    st.dataframe(shown.frame, hide_index=True, key=key)
    if not shown.complete or shown.rows_shown < table.num_rows:
        st.download_button("Download the whole result (Parquet)", download_bytes(table), file_name="result.parquet",
                           mime="application/octet-stream", key=f"{key}_download", on_click="ignore")
