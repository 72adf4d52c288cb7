"""Run results (`ROOT/results/*.jsonl`, read and flattened by `common.results_log`) as one flat Arrow table.

The roots are the runner's `RUNS_DIR` and the store itself (runs published with a store, e.g. the sample's).
Lines that are not JSON objects are skipped; a missing folder gives an empty table with the same columns.
"""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa

from common.results_log import RUN_COLUMNS, flat_results

ARROW_TYPES = {"string": pa.string(), "int64": pa.int64(), "float64": pa.float64(), "bool": pa.bool_(),
          "list<string>": pa.list_(pa.string())}
RUNS_SCHEMA = pa.schema([(name, ARROW_TYPES[kind]) for name, kind in RUN_COLUMNS])


def load_run_results(*roots: Path | None) -> pa.Table:
    """All results under `ROOT/results/` → a table of `RUNS_SCHEMA`."""
    return pa.Table.from_pylist(flat_results(*roots), schema=RUNS_SCHEMA)
