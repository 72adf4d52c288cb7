"""The re-run controls of the Kernel page: pick an evaluation profile, submit to the runner service, poll the
job, hand back the finished result (as a flat run row, like the results log's).

Hidden in read-only mode. The explorer never runs the program itself: the runner service does, in its sandbox.
Profiles (docs/runner.md): `kernelbench` (default: torch's flags untouched, atol = rtol = 1e-2),
`kernelbench-strict` (fp32 1e-4, TF32 off), or custom atol/rtol.
"""

from __future__ import annotations

import streamlit as st

from runner import profiles
from ui import context, runner_job, runner_state
from ui.text import md, md_code

PROFILES = {**{name: f"{name} ({p.summary})" for name, p in profiles.PROFILES.items()},
            profiles.CUSTOM: "custom tolerance"}


def client_of(cfg):
    from runner.service.client import resolve_token

    token = resolve_token(cfg)
    return context.runner_client(cfg.runner_url, token)


def _job_key(row_id: str) -> str:
    return f"rerun_job::{row_id}"


def profile_fields(row_id: str) -> dict:
    """The profile picker; returns the job's body fields it means (none for the default, so any runner accepts it)."""
    cols = st.columns([2, 1, 1])
    profile = cols[0].selectbox("Evaluation profile", list(PROFILES), format_func=PROFILES.get,
                                key=f"rerun_profile::{row_id}")
    if profile == "custom":
        atol = cols[1].number_input("atol", min_value=0.0, value=1e-2, format="%g", key=f"rerun_atol::{row_id}")
        rtol = cols[2].number_input("rtol", min_value=0.0, value=1e-2, format="%g", key=f"rerun_rtol::{row_id}")
        return {"profile": "custom", "atol": atol, "rtol": rtol}
    return {} if profile == "kernelbench" else {"profile": profile}


def rerun_panel(row_id: str, cfg) -> dict | None:
    """Profile, Re-run button → job id in session state → polling fragment. Returns the finished job's result as
    a flat run row (None while nothing finished in this session)."""
    from runner.service.client import RunnerError, RunnerUnavailable

    if cfg.read_only:
        return None
    client = client_of(cfg)
    state = runner_state.check(cfg, context.store_path(), client)
    runner_state.explain(state, cfg)
    if not state.usable:
        return None
    key = _job_key(row_id)
    pending = runner_job.pending(key)
    with st.container(border=True):
        if pending:  # the runner's line and the job's state, both asked for again on every poll
            runner_job.poll(client, key, "job", lambda latest: f"Job {md_code(latest['id'])} is {md(latest['state'])}…",
                            lambda health: runner_summary(cfg.runner_url, health))
        else:
            st.caption(runner_summary(cfg.runner_url, state.health))
        fields = profile_fields(row_id)
        cols = st.columns([2, 1, 3])  # wide enough for the whole label at 1400 px
        if cols[0].button("Re-run this program", key=f"rerun::{row_id}", type="primary"):
            runner_job.submit(client, key, "job", lambda: client.submit(row_id=row_id, **fields))
            return None
        job = runner_job.current(key)
        if not job:
            return None
        if pending:
            if cols[1].button("Cancel", key=f"cancel::{row_id}"):
                try:
                    st.session_state[key] = client.cancel(job["id"]) | {"id": job["id"]}
                except (RunnerError, RunnerUnavailable) as error:
                    st.error(f"Could not cancel job {md_code(job['id'])}: {md(error)}")
                st.rerun()
            return None
        if job.get("state") == "cancelled" and not job.get("result"):
            st.warning(f"Job {md_code(job['id'])} was cancelled.")
            return None
    from common.results_log import flatten_result

    return flatten_result(job.get("result") or {}, "(this session)", 0) | {"job_id": job["id"]}


def runner_summary(url: str, health: dict) -> str:
    """One line about a runner service from its `/health` answer."""
    parts = [f"Runner at {md_code(url)}", md(health.get("device") or "")]
    if health.get("gpus"):
        parts.append(md(", ".join(map(str, health["gpus"]))))
    parts.append(f"{health.get('queue_length', 0)} queued, {health.get('running', 0)} running")
    return " · ".join(p for p in parts if p)
