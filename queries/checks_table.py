"""common/checks.py's table as Arrow, for DuckDB (`checks`: the filters' hack list, the console) and the pages; and
common/outcomes.py's error types with whether each holds on any device (`outcomes`, with the CPU interpreter's
device label in `outcome_labels`: the ranking rule of setup_runs.sql)."""

from __future__ import annotations

import pyarrow as pa

from common.checks import CHECKS
from common.hardware import CPU_LABEL
from common.outcomes import DEVICE_INDEPENDENT, ErrorType


def checks_table() -> pa.Table:
    """One row per check or flag: name, kind, label, meaning, hack."""
    return pa.table({
        "name": [c.name for c in CHECKS], "kind": [c.kind for c in CHECKS], "label": [c.label for c in CHECKS],
        "meaning": [c.meaning for c in CHECKS], "hack": pa.array([c.hack for c in CHECKS], pa.bool_()),
    })


def outcomes_table() -> pa.Table:
    """One row per measured error type: error_type, device_independent."""
    return pa.table({"error_type": [e.value for e in ErrorType],
                     "device_independent": pa.array([e in DEVICE_INDEPENDENT for e in ErrorType], pa.bool_())})


def outcome_labels_table() -> pa.Table:
    """The `device` a CPU interpreter run's result carries."""
    return pa.table({"cpu_label": [CPU_LABEL]})
