"""The row id: `<split>/<row>`, the row number within its split zero-padded to six digits (more past 999,999),
e.g. `train/000123`, `test/1234567`.

`ROW_ID_FORMAT` is the one spelling of the form: Python formats with it (`format_row_id`) and ingest binds it
into its SQL's `printf` (`queries/sql/ingest_fields.sql`), whose `%`-syntax is the same. `parse_row_id` reads an
id back, accepting only what `format_row_id` writes (ASCII digits, no extra leading zeros, at most 18 digits:
rows are int64), so one row has one id; the store reads any split (a split is a source file's name),
`check_row_id` (what the runner service accepts from a client) only the dataset's `SPLITS`.
Standard library only.
"""

from __future__ import annotations

import re
from typing import Any

from common.errors import TlxError

ROW_ID_FORMAT = "%s/%06d"
SPLITS = ("train", "test")
_ROW_NUMBER = re.compile(r"[0-9]{6}|[1-9][0-9]{6,17}", re.ASCII)


class BadRowId(TlxError, ValueError):
    """A row id that is not of the form `format_row_id` writes."""


def format_row_id(split: str, row: int) -> str:
    """The id of row `row` (0-based) of `split`."""
    return ROW_ID_FORMAT % (split, row)


def parse_row_id(row_id: Any) -> tuple[str, int]:
    """(split, row) of a row id in the form `format_row_id` writes; BadRowId otherwise."""
    split, sep, row = row_id.rpartition("/") if isinstance(row_id, str) else ("", "", "")
    if not sep or not split or not _ROW_NUMBER.fullmatch(row):
        raise BadRowId(f"bad row id {row_id!r:.80}: expected '<split>/<row>', the row number in ASCII digits "
                       f"zero-padded to six, e.g. 'train/000123' or 'test/1234567'")
    return split, int(row)


def check_row_id(row_id: Any) -> str:
    """`row_id` if it is a row id of the dataset's splits (`SPLITS`) in canonical form; BadRowId otherwise."""
    split, _ = parse_row_id(row_id)
    if split not in SPLITS:
        raise BadRowId(f"bad row id {row_id!r:.80}: the split must be {' or '.join(SPLITS)}")
    return row_id
