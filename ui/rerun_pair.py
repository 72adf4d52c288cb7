""""Re-run both" on the Compare page: the two rows queued one right after the other under one profile, polled
until both have a verdict, which the page then shows side by side.

The runner service has no job that times two programs back to back in one process (design §3b: a job is one row
or one program). So this submits two jobs with the same options, `force`d so both are measured now, and says so:
each job's timing holds its GPU alone (runner/gate.py), but another job may run between the two, and on a
service with several GPUs they may land on different ones (the result names the GPU).
"""

from __future__ import annotations

import streamlit as st

from ui import context, rerun, runner_state
from ui.text import md, md_code

_POLL_S = 1.0
NOTE = ("The runner has no two-program job yet, so **Re-run both** queues two jobs with the same profile, one right "
        "after the other (each timed with the GPU to itself; another job may run between them, and a runner with "
        "several GPUs may put them on different ones: the table names the GPU of each).")


def _key(a: str, b: str) -> str:
    return f"rerun_pair::{a}::{b}"


def rerun_both_panel(a: str, b: str, cfg) -> dict[str, dict]:
    """The controls; returns the finished results of this session's "Re-run both" by row id (flat run rows)."""
    from runner.service.client import RunnerError, RunnerUnavailable

    if cfg.read_only:
        return {}
    client = rerun.client_of(cfg)
    state = runner_state.check(cfg, context.store_path(), client)
    runner_state.explain(state, cfg)
    if not state.usable:
        return {}
    key = _key(a, b)
    with st.container(border=True):
        st.caption(rerun.runner_summary(cfg.runner_url, state.health))
        options = rerun.profile_options(f"compare::{a}::{b}")
        st.caption(NOTE)
        if st.button("Re-run both", key=f"rerun_both::{a}::{b}", type="primary"):
            jobs = {}
            try:
                for row_id in (a, b):
                    job = client.submit(row_id=row_id, force=True, **options)
                    jobs[row_id] = {"id": job["id"], "state": job.get("state", "queued"), "result": None}
            except (RunnerError, RunnerUnavailable) as error:
                st.error(f"Could not submit {md_code(row_id)}: {md(error)}")
                return {}
            st.session_state[key] = jobs
        jobs = st.session_state.get(key) or {}
        if any(job["state"] not in ("done", "cancelled") for job in jobs.values()):
            _poll(client, a, b)
            return {}
    from common.results_log import flatten_result

    return {row_id: flatten_result(job["result"], "(this session)", 0) | {"job_id": job["id"]}
            for row_id, job in jobs.items() if job.get("result")}


@st.fragment(run_every=_POLL_S)
def _poll(client, a: str, b: str) -> None:
    """Both jobs' states once per run; when both are final, rerun the page to show the verdicts."""
    from runner.service.client import RunnerError, RunnerUnavailable

    key = _key(a, b)
    jobs = dict(st.session_state.get(key) or {})
    try:
        for row_id, job in jobs.items():
            if job["state"] not in ("done", "cancelled"):
                jobs[row_id] = client.job(job["id"])
    except (RunnerError, RunnerUnavailable) as error:
        st.warning(f"Lost contact with the runner while polling: {md(error)}")
        return
    st.session_state[key] = jobs
    if all(job["state"] in ("done", "cancelled") for job in jobs.values()):
        st.rerun(scope="app")
    st.status(" · ".join(f"{md_code(row_id)} {md(job['state'])}" for row_id, job in jobs.items()) + " …",
              state="running")
