"""The re-run controls of the Kernel page: pick an evaluation profile, submit to the runner service, poll the
job, hand back the finished result (as a flat run row, like the results log's).

Hidden in read-only mode. The explorer never runs the program itself: the runner service does, in its sandbox.
Profiles (docs/runner.md): `kernelbench` (default: torch's flags untouched, atol = rtol = 1e-2),
`kernelbench-strict` (fp32 1e-4, TF32 off), or custom atol/rtol.
"""

from __future__ import annotations

import streamlit as st

from runner import profiles
from ui import context, runner_state
from ui.text import md, md_code

_POLL_S = 1.0
PROFILES = {**{name: f"{name} ({p.summary})" for name, p in profiles.PROFILES.items()},
            profiles.CUSTOM: "custom tolerance"}


def client_of(cfg):
    from runner.service.client import resolve_token

    token = cfg.runner_token or resolve_token(cfg.runs_dir)
    return context.runner_client(cfg.runner_url, token)


def _job_key(row_id: str) -> str:
    return f"rerun_job::{row_id}"


def profile_options(row_id: str) -> dict:
    """The profile picker; returns the job options it means (none for the default, so any runner accepts it)."""
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
    job = st.session_state.get(key)
    pending = bool(job) and job["state"] not in ("done", "cancelled")
    with st.container(border=True):
        if pending:  # the runner's line and the job's state, both asked for again on every poll
            _poll(client, row_id, cfg.runner_url)
        else:
            st.caption(runner_summary(cfg.runner_url, state.health))
        options = profile_options(row_id)
        cols = st.columns([2, 1, 3])  # wide enough for the whole label at 1400 px
        if cols[0].button("Re-run this program", key=f"rerun::{row_id}", type="primary"):
            try:
                job = client.submit(row_id=row_id, **options)
            except (RunnerError, RunnerUnavailable) as error:
                st.error(f"Could not submit the job: {md(error)}")
                return None
            record = {"id": job["id"], "state": job.get("state", "queued"), "result": job.get("result")}
            if record["state"] in ("done", "cancelled") and record["result"] is None:
                record = _finished(client, record)  # a job the runner had already run for this row and settings
            st.session_state[key] = record
            st.rerun()  # the runner's line above was drawn before this job: draw it again, polling
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


def _finished(client, record: dict) -> dict:
    """A finished job's record with its result, asked of the runner (the submit's answer holds none)."""
    from runner.service.client import RunnerError, RunnerUnavailable

    try:
        return client.job(record["id"])
    except (RunnerError, RunnerUnavailable) as error:
        st.error(f"Could not read job {md_code(record['id'])}: {md(error)}")
        return record


@st.fragment(run_every=_POLL_S)
def _poll(client, row_id: str, url: str) -> None:
    """Ask the service for the job's state and its queue once per run (so the runner's line is as fresh as the
    job's: issue 46 saw "0 queued, 0 running" above "Job … is running"); on a final state rerun the page to show
    the verdict."""
    from runner.service.client import RunnerError, RunnerUnavailable

    key = _job_key(row_id)
    job = st.session_state.get(key)
    if not job:
        return
    try:
        latest = client.job(job["id"])
        health = client.health()
    except (RunnerError, RunnerUnavailable) as error:
        st.warning(f"Lost contact with the runner while polling job {md_code(job['id'])}: {md(error)}")
        return
    st.session_state[key] = latest
    if latest["state"] in ("done", "cancelled"):
        st.rerun(scope="app")
    st.caption(runner_summary(url, health))
    st.status(f"Job {md_code(latest['id'])} is {md(latest['state'])}…", state="running")


def runner_summary(url: str, health: dict) -> str:
    """One line about a runner service from its `/health` answer."""
    parts = [f"Runner at {md_code(url)}", md(health.get("device") or "")]
    if health.get("gpus"):
        parts.append(md(", ".join(map(str, health["gpus"]))))
    parts.append(f"{health.get('queue_length', 0)} queued, {health.get('running', 0)} running")
    return " · ".join(p for p in parts if p)
