"""Agreement of re-runs with the dataset's labels, per evaluation profile (issue 12, helper contract 3).

The labels' harness is unknown: a profile whose verdicts match the labels (label present ⇔ re-run correct) and
whose measured/label ratios are tight is the one that reproduces them. `agreement()` answers per profile;
`format_table()` prints it for `python -m queries agreement`.
"""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa

from common.settings import Settings
from queries.db import connect
from queries.filters import NO_FILTERS, Filters

COLUMNS = (
    ("profile", "profile"), ("rows", "rows"), ("label_ok_measured_ok", "label+ok"),
    ("label_ok_measured_failed", "label+failed"), ("label_null_measured_ok", "null+ok"),
    ("label_null_measured_failed", "null+failed"), ("agreement", "agree"), ("ratio_p10", "ratio p10"),
    ("ratio_median", "ratio p50"), ("ratio_p90", "ratio p90"),
)


def agreement(store: Path | str, settings: Settings, f: Filters = NO_FILTERS,
              profile: str | None = None) -> pa.Table:
    """One row per profile: rows re-run under it, the label × verdict cross counts, `agreement` (share where
    they say the same) and quantiles of measured median / label (see `sql/agreement.sql`)."""
    return connect(store, settings).execute("agreement", {**f.params(), "profile": profile})


def _cell(value) -> str:
    if value is None:
        return "—"
    if isinstance(value, float):
        return f"{value:.3g}"
    return str(value)


def format_table(table: pa.Table) -> str:
    """A plain-text table of `agreement()`'s answer (`agree` as a percentage)."""
    if table.num_rows == 0:
        return "no re-run of a store row yet (python -m runner bulk --store DIR ... --profile NAME runs some)"
    rows = [[label for _, label in COLUMNS]]
    for record in table.to_pylist():
        cells = [_cell(record[name]) for name, _ in COLUMNS]
        cells[6] = f"{record['agreement']:.1%}"
        rows.append(cells)
    widths = [max(len(r[i]) for r in rows) for i in range(len(COLUMNS))]
    lines = ["  ".join(c.ljust(w) if i == 0 else c.rjust(w) for i, (c, w) in enumerate(zip(r, widths, strict=True)))
             for r in rows]
    return "\n".join(lines)
