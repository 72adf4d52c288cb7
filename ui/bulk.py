"""Measuring the filtered rows that have no run result: the exact `runner bulk` command, and (with a runner
service reachable, not read-only) a button that queues them on it one job per row."""

from __future__ import annotations

import shlex
import sys
from pathlib import Path

import streamlit as st

from queries.filters import Filters
from ui import runner_state
from ui.labels import plural
from ui.text import md, md_code

MAX_SUBMIT = 200  # rows one click queues on the service; beyond that, the command line is the tool
CHECKOUT = Path(__file__).resolve().parent.parent


def python_command() -> str:
    """The interpreter the explorer runs under, as a path that works from the checkout (`.venv/bin/python` for
    `make run`, which activates no venv); an absolute path where it lives elsewhere."""
    exe = Path(sys.executable)
    try:
        return str(exe.relative_to(CHECKOUT))
    except ValueError:
        return str(exe)


def bulk_command(store: Path, f: Filters, is_sample: bool, status: str | None = "failed") -> str:
    """`python -m runner bulk` with the same filters as the page (same meaning: `queries.api.selected_rows`)."""
    parts = [python_command(), "-m", "runner", "bulk"]
    if not is_sample:
        parts += ["--store", str(store)]
    options = (("--split", f.split), ("--holdout", f.holdout_group), ("--problem", f.problem_key),
               ("--status", f.status or status), ("--error-type", f.error_type), ("--error-source", f.error_source),
               ("--triage-status", f.triage_status), ("--triage-error", f.triage_error))
    for flag, value in options:
        if value:
            parts += [flag, value]
    return shlex.join(parts)


def bulk_panel(ids: list[str], f: Filters, info, cfg, *, key: str) -> None:
    """Says how many filtered failed rows lack a measured cause; offers the command and a queueing button."""
    if not ids:
        return
    st.info(f"{plural(len(ids), 'failed row')} here {'has' if len(ids) == 1 else 'have'} no run result, so "
            "only a CPU triage (where one was run) or static findings explain them. Re-run them on a GPU to get "
            "measured causes (compile error, wrong output, …):")
    st.caption(f"From the checkout, {md_code(CHECKOUT)}:")
    st.code(bulk_command(info.path, f, info.is_sample), language="bash")
    if f.level is not None or f.flag is not None:  # not options of `runner bulk` (yet)
        st.caption("`runner bulk` has no level or flag option: this command selects the rows without those two "
                   "filters; the button below queues exactly the rows shown.")
    if cfg.read_only or len(ids) > MAX_SUBMIT:
        return
    from runner.service.client import RunnerError, RunnerUnavailable
    from ui.rerun import client_of

    state = runner_state.check(cfg, info.path, client_of(cfg))
    runner_state.explain(state, cfg)
    if not state.usable:
        return
    if not st.button(f"Queue these {plural(len(ids), 'row')} on the runner", key=key):
        return
    client = client_of(cfg)
    queued = 0
    try:
        for row_id in ids:
            client.submit(row_id=row_id)
            queued += 1
    except (RunnerError, RunnerUnavailable) as error:
        st.error(f"Queued {queued} of {len(ids)} before the runner refused: {md(error)}")
        return
    st.success(f"Queued {plural(queued, 'job')}; results appear here as they finish (Runs page: the queue).")
