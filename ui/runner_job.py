"""One runner job followed by a page's panel: submitted, kept in the session, polled until it is final. The two
re-run panels use it: the Kernel page's (`ui/rerun.py`, a job) and the Compare page's (`ui/rerun_pair.py`, a pair
job)."""

from __future__ import annotations

from collections.abc import Callable

import streamlit as st

from ui.text import md, md_code

POLL_S = 1.0
FINAL_STATES = ("done", "cancelled")


def submit(client, key: str, what: str, send: Callable[[], dict]) -> None:
    """Submit a job with `send` (a `RunnerClient` call), keep it in the session under `key` and draw the page again
    (the runner's line above was drawn before this job: it is drawn again, polled); says so, and returns, when the
    runner refused it or did not answer. `what` names the job in messages ("job", "pair job")."""
    from runner.service.client import RunnerError, RunnerUnavailable

    try:
        job = send()
    except (RunnerError, RunnerUnavailable) as error:
        st.error(f"Could not submit the {what}: {md(error)}")
        return
    record = {"id": job["id"], "state": job.get("state", "queued"), "result": job.get("result")}
    if is_final(record) and record["result"] is None:  # a job the runner had already run for these settings
        try:
            record = client.job(record["id"])
        except (RunnerError, RunnerUnavailable) as error:
            st.error(f"Could not read {what} {md_code(record['id'])}: {md(error)}")
    st.session_state[key] = record
    st.rerun()


def current(key: str) -> dict | None:
    """The session's job under `key` as last seen (None before a submit)."""
    return st.session_state.get(key)


def is_final(job: dict) -> bool:
    return job["state"] in FINAL_STATES


def pending(key: str) -> bool:
    """Whether the session's job under `key` is still queued or running."""
    job = current(key)
    return bool(job) and not is_final(job)


@st.fragment(run_every=POLL_S)
def poll(client, key: str, what: str, describe: Callable[[dict], str], summary: Callable[[dict], str]) -> None:
    """Ask the service for the job's state and its queue once per run (so the runner's line, `summary(health)`, is
    as fresh as the job's: issue 46 saw "0 queued, 0 running" above "Job … is running"); on a final state rerun the
    page to show the verdict, else show `describe(job)`."""
    from runner.service.client import RunnerError, RunnerUnavailable

    job = current(key)
    if not job:
        return
    try:
        latest = client.job(job["id"])
        health = client.health()
    except (RunnerError, RunnerUnavailable) as error:
        st.warning(f"Lost contact with the runner while polling {what} {md_code(job['id'])}: {md(error)}")
        return
    st.session_state[key] = latest
    if is_final(latest):
        st.rerun(scope="app")
    st.caption(summary(health))
    st.status(describe(latest), state="running")
