""""Re-run both" on the Compare page: one pair job of the runner service (`runner/service/pairs.py`) times the two
rows back to back on one GPU under one profile, each in its own sandbox; the page polls it until done, then shows
both verdicts and times side by side and the speedup of one over the other measured in that same job.

A runner that predates pair jobs (its `/health` lists no `pair` under `job_kinds`) is named, and no button is
shown: two separate jobs would not make a same-machine comparison.
"""

from __future__ import annotations

from datetime import UTC, datetime

import streamlit as st

from ui import compare, context, rerun, runner_job, runner_state
from ui.text import md, md_code

SIDES = {"a": "A", "b": "B"}  # the pair job's members -> the page's columns
NOTE = ("**Re-run both** queues one pair job: the runner times A, then B, back to back on one GPU under this "
        "profile, each program in its own sandbox, so their times compare same-machine.")
OLD_RUNNER = ("The runner at {url} runs one program per job: it does not know pair jobs (an older runner), so it "
              "cannot time these two in one job. Update the runner (`python -m runner serve` from this checkout) "
              "to **Re-run both**.")


def _key(a: str, b: str) -> str:
    return f"rerun_pair::{a}::{b}"


def rerun_both_panel(a: str, b: str, cfg) -> dict[str, dict]:
    """The controls; returns the finished runs of this session's "Re-run both" by side ("A", "B": flat run rows,
    with the pair job's id in `pair_job`), after saying what the pair job measured."""
    from runner.service.client import runs_pair_jobs

    if cfg.read_only:
        return {}
    client = rerun.client_of(cfg)
    state = runner_state.check(cfg, context.store_path(), client)
    runner_state.explain(state, cfg)
    if not state.usable:
        return {}
    if not runs_pair_jobs(state.health):
        st.warning(OLD_RUNNER.format(url=md_code(cfg.runner_url)))
        return {}
    key = _key(a, b)
    pending = runner_job.pending(key)
    with st.container(border=True):
        if pending:  # the runner's line and the job's state, both asked for again on every poll
            runner_job.poll(client, key, "pair job", _progress, lambda health: rerun.runner_summary(cfg.runner_url, health))
        else:
            st.caption(rerun.runner_summary(cfg.runner_url, state.health))
        fields = rerun.profile_fields(f"compare::{a}::{b}")
        st.caption(NOTE)
        if st.button("Re-run both", key=f"rerun_both::{a}::{b}", type="primary"):
            runner_job.submit(client, key, "pair job", lambda: client.submit_pair({"row_id": a}, {"row_id": b},
                                                                                 force=True, **fields))
            return {}
        job = runner_job.current(key)
        if not job or pending:
            return {}
        if not job.get("result"):
            st.warning(f"Pair job {md_code(job['id'])} was cancelled.")
            return {}
        from common.results_log import flatten_result

        runs = {SIDES[label]: flatten_result(record, "(this session)", 0)
                for label, record in job["result"]["runs"].items()}
        st.success(pair_summary(job["result"], runs))
    return runs


def _clock(epoch: float | None) -> str:
    return datetime.fromtimestamp(float(epoch), UTC).strftime("%H:%M:%S UTC") if epoch is not None else "?"


def _time(run: dict) -> str:
    median = run.get("median_ms")
    return f"{median:.4g} ms" if median is not None else "no timing"


def pair_summary(result: dict, runs: dict[str, dict]) -> str:
    """What one finished pair job measured, as Markdown: each side's verdict and median, the speedup of B over A
    measured in that job, and what makes the two comparable (or what differs)."""
    sides = " · ".join(f"**{side}** {md(compare.verdict_text(run))}, {md(_time(run))}" for side, run in runs.items())
    speedup = result.get("b_speedup_over_a")
    if speedup is None:
        measured = md(result.get("speedup_note") or "no speedup")
    elif speedup >= 1:
        measured = f"**B is {speedup:.3g}× faster than A**"
    else:
        measured = f"**A is {1 / speedup:.3g}× faster than B** (B's speedup over A: {speedup:.3g}×)"
    order = ", then ".join(f"{SIDES[label]} at {_clock(result['started_at'].get(label))}" for label in result["order"])
    where = md(" · ".join(str(p) for p in (result.get("gpu") or result.get("device"), result.get("slot")) if p))
    same = (f"measured in the same job, back to back on {where}, profile {md_code(result.get('profile'))}: {md(order)}"
            if not result.get("differences") else
            f"one job, but not same-machine ({md('; '.join(result['differences']))})")
    return f"Pair job {md_code(result.get('job_id'))}: {sides} · {measured} · {same}"


def _progress(job: dict) -> str:
    """A pair job on its way: its state and each member's own."""
    members = " · ".join(f"{SIDES.get(m.get('label'), '?')} {md_code(m.get('row_id'))} {md(m.get('state'))}"
                         for m in job.get("members") or [])
    return f"Pair job {md_code(job['id'])} is {md(job['state'])}: {members} …"
