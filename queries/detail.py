"""`row()`: one program with its index row, parsed parts, run results and neighbours in its problem's ranking."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import pyarrow as pa

from common.program.parse import ParsedProgram, parse_program
from common.settings import Settings
from queries.db import connect
from queries.store import StoreError


@dataclass(frozen=True)
class RowDetail:
    """`meta`: the index row; `program`: the full text; `parsed`: reference/candidate/kernels; `prev_id` /
    `next_id`: neighbours in the problem's ranking (y ascending, failures last, ties by id), `position` of
    `problem_rows` in it; `runs`: this row's run results, newest first; `latest_run`: its latest verdict
    (`runs_latest`, the definition every page shares), None when never run; `latest_triage`: its latest CPU triage
    (`triage_latest`, with `basis`: "triaged on CPU (torch X, sm_90)"), None when never triaged. When the store cannot give the program
    (a missing or damaged code part), `program` is empty and `program_error` says why; the rest still shows."""

    meta: dict
    program: str
    parsed: ParsedProgram
    prev_id: str | None
    next_id: str | None
    position: int
    problem_rows: int
    runs: pa.Table
    latest_run: dict | None = None
    latest_triage: dict | None = None
    program_error: str | None = None


def row(store: Path | str, settings: Settings, row_id: str) -> RowDetail | None:
    """The detail of `row_id`, or None when the store holds no such row."""
    db = connect(store, settings)
    params = {"row_id": str(row_id)}
    metas = db.execute("row_meta", params).to_pylist()
    if not metas:
        return None
    place = db.execute("row_neighbours", params).to_pylist()[0]
    latest = db.execute("row_latest_run", params).to_pylist()
    triaged = db.execute("row_latest_triage", params).to_pylist()
    program, program_error = "", None
    try:
        program = db.store.program(str(row_id))
    except StoreError as exc:
        program_error = str(exc)
    return RowDetail(
        meta=metas[0],
        program=program,
        parsed=parse_program(program),
        prev_id=place["prev_id"],
        next_id=place["next_id"],
        position=place["position"],
        problem_rows=place["problem_rows"],
        runs=db.execute("row_runs", params),
        latest_run=latest[0] if latest else None,
        latest_triage=triaged[0] if triaged else None,
        program_error=program_error,
    )
