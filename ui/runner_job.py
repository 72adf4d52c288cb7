"""One runner job followed by a page's panel: submitted, kept in the session, polled until it is final. The two
re-run panels use it: the Kernel page's (`ui/rerun.py`, a job) and the Compare page's (`ui/rerun_pair.py`, a pair
job)."""

from __future__ import annotations

from collections.abc import Callable

import streamlit as st

from ui.text import md, md_code

POLL_S = 1.0
FINAL_STATES = ("done", "cancelled")


def submit(key: str, what: str, send: Callable[[], dict]) -> bool:
    """Submit a job with `send` (a `RunnerClient` call) and keep it in the session under `key`; False, saying so,
    when the runner refused it or did not answer. `what` names the job in messages ("job", "pair job")."""
    from runner.service.client import RunnerError, RunnerUnavailable

    try:
        job = send()
    except (RunnerError, RunnerUnavailable) as error:
        st.error(f"Could not submit the {what}: {md(error)}")
        return False
    st.session_state[key] = {"id": job["id"], "state": job.get("state", "queued"), "result": None}
    return True


def current(key: str) -> dict | None:
    """The session's job under `key` as last seen (None before a submit)."""
    return st.session_state.get(key)


def is_final(job: dict) -> bool:
    return job["state"] in FINAL_STATES


@st.fragment(run_every=POLL_S)
def poll(client, key: str, what: str, describe: Callable[[dict], str]) -> None:
    """Ask the service for the job's state once per run; on a final state rerun the page to show the verdict, else
    show `describe(job)`."""
    from runner.service.client import RunnerError, RunnerUnavailable

    job = current(key)
    if not job:
        return
    try:
        latest = client.job(job["id"])
    except (RunnerError, RunnerUnavailable) as error:
        st.warning(f"Lost contact with the runner while polling {what} {md_code(job['id'])}: {md(error)}")
        return
    st.session_state[key] = latest
    if is_final(latest):
        st.rerun(scope="app")
    st.status(describe(latest), state="running")
