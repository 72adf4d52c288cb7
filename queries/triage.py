"""CPU triage results (`ROOT/triage/*.jsonl`, read and flattened by `common.triage_log`) as one flat Arrow table.

The roots are the runner's `RUNS_DIR` and the store itself (triage published with a store). Lines that are not
JSON objects are skipped; a missing folder gives an empty table with the same columns.
"""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa

from common.triage_log import TRIAGE_COLUMNS, flat_triage
from queries.results import ARROW_TYPES

TRIAGE_SCHEMA = pa.schema([(name, ARROW_TYPES[kind]) for name, kind in TRIAGE_COLUMNS])


def load_triage(*roots: Path | None) -> pa.Table:
    """All triage results under `ROOT/triage/` → a table of `TRIAGE_SCHEMA`."""
    return pa.Table.from_pylist(flat_triage(*roots), schema=TRIAGE_SCHEMA)
