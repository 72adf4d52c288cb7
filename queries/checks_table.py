"""common/checks.py's table as Arrow, for DuckDB (`checks`: the filters' hack list, the console) and the pages."""

from __future__ import annotations

import pyarrow as pa

from common.checks import CHECKS


def checks_table() -> pa.Table:
    """One row per check or flag: name, kind, label, meaning, hack."""
    return pa.table({
        "name": [c.name for c in CHECKS], "kind": [c.kind for c in CHECKS], "label": [c.label for c in CHECKS],
        "meaning": [c.meaning for c in CHECKS], "hack": pa.array([c.hack for c in CHECKS], pa.bool_()),
    })
