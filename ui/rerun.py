"""The re-run panel of the row page: submit to the runner service, poll its progress, show the verdict.

Hidden in read-only mode. The explorer never runs the program itself: the runner service does, in its sandbox.
"""

from __future__ import annotations

import math

import streamlit as st

from ui import context

_POLL_S = 1.0


def client_of(cfg):
    from runner.client import resolve_token

    token = cfg.runner_token or resolve_token(cfg.runs_dir)
    return context.runner_client(cfg.runner_url, token)


def _job_key(row_id: str) -> str:
    return f"rerun_job::{row_id}"


def rerun_panel(row_id: str, label_y: float | None, cfg) -> None:
    """Re-run button → job id in session state → polling fragment → verdict."""
    from runner.client import RunnerError, RunnerUnavailable

    if cfg.read_only:
        return
    st.subheader("Re-run")
    client = client_of(cfg)
    try:
        health = client.health()
    except RunnerUnavailable as error:
        st.info(
            f"No runner service is reachable ({error}). Start one with `python -m runner serve` on a machine "
            "with a GPU (or CPU interpreter mode) and point the explorer at it with `TLX_RUNNER_URL` and "
            "`TLX_RUNNER_TOKEN`."
        )
        return
    except RunnerError as error:
        st.warning(f"The runner service at `{cfg.runner_url}` answered with an error: {error.message}")
        return
    st.caption(runner_summary(cfg.runner_url, health))
    key = _job_key(row_id)
    cols = st.columns([1, 1, 4])
    if cols[0].button("Re-run this program", key=f"rerun::{row_id}", type="primary"):
        try:
            job = client.submit(row_id=row_id)
        except (RunnerError, RunnerUnavailable) as error:
            st.error(f"Could not submit the job: {error}")
            return
        st.session_state[key] = {"id": job["id"], "state": job.get("state", "queued"), "result": None}
    job = st.session_state.get(key)
    if not job:
        return
    if job["state"] not in ("done", "cancelled"):
        if cols[1].button("Cancel", key=f"cancel::{row_id}"):
            try:
                st.session_state[key] = client.cancel(job["id"]) | {"id": job["id"]}
            except (RunnerError, RunnerUnavailable) as error:
                st.error(f"Could not cancel job {job['id']}: {error}")
            st.rerun()
        _poll(client, row_id)
        return
    show_verdict(job, label_y, cfg.label_unit)


@st.fragment(run_every=_POLL_S)
def _poll(client, row_id: str) -> None:
    """Ask the service for the job's state once per run; on a final state rerun the page to show the verdict."""
    from runner.client import RunnerError, RunnerUnavailable

    key = _job_key(row_id)
    job = st.session_state.get(key)
    if not job:
        return
    try:
        latest = client.job(job["id"])
    except (RunnerError, RunnerUnavailable) as error:
        st.warning(f"Lost contact with the runner while polling job {job['id']}: {error}")
        return
    st.session_state[key] = latest
    if latest["state"] in ("done", "cancelled"):
        st.rerun(scope="app")
    st.status(f"Job `{latest['id']}` is {latest['state']}…", state="running")


def runner_summary(url: str, health: dict) -> str:
    """One line about a runner service from its `/health` answer."""
    parts = [f"Runner at `{url}`", str(health.get("device") or "")]
    if health.get("gpus"):
        parts.append(", ".join(map(str, health["gpus"])))
    parts.append(f"{health.get('queue_length', 0)} queued, {health.get('running', 0)} running")
    return " · ".join(p for p in parts if p)


def _ms(timing: dict | None) -> str:
    if not timing or timing.get("median_ms") is None:
        return "—"
    text = f"{timing['median_ms']:.4g} ms"
    if timing.get("std_ms") is not None:
        text += f" ± {timing['std_ms']:.2g}"
    return text


def show_verdict(job: dict, label_y: float | None, unit: str) -> None:
    """The run result: correctness, timing with spread, speedup, environment, error with traceback."""
    result = job.get("result") or {}
    if job.get("state") == "cancelled" and not result:
        st.warning(f"Job `{job['id']}` was cancelled.")
        return
    ok = result.get("status") == "ok"
    headline = "correct" if ok else f"failed: {result.get('error_type') or 'unknown'}"
    (st.success if ok else st.error)(f"Verdict of job `{job['id']}`: **{headline}**")
    timing, ref = result.get("timing") or {}, result.get("ref_timing") or {}
    cols = st.columns(4)
    trials = result.get("trials")
    cols[0].metric("correct trials", f"{result.get('correct_trials', '—')} / {trials if trials is not None else '—'}")
    cols[1].metric("ModelNew median", _ms(timing))
    cols[2].metric("Model (eager) median", _ms(ref))
    speedup = result.get("speedup")
    cols[3].metric("speedup vs reference", "—" if speedup is None else f"{speedup:.3g}×")
    median = timing.get("median_ms")
    if median is not None and label_y is not None and not math.isnan(label_y) and label_y > 0:
        st.caption(
            f"measured / label = {median / label_y:.3g} (measured in ms; the label is taken as {unit}); "
            f"timing range {timing.get('min_ms', float('nan')):.4g}–{timing.get('max_ms', float('nan')):.4g} ms "
            f"over n={timing.get('n')}"
        )
    if result.get("device") == "cpu-interpreter":
        st.caption("Ran in the Triton CPU interpreter: correctness only, no timing.")
    if result.get("flags"):
        st.warning("Flags: " + ", ".join(map(str, result["flags"])))
    if "launch_bound" in (result.get("flags") or []):
        st.info("Launch-bound: the host needs about as long to launch this call as the GPU needs to run it, so the "
                "GPU waits for Python between kernels and this timing follows host load from run to run.")
    if result.get("max_abs_diff") is not None:
        st.caption(f"max abs diff {result['max_abs_diff']:.3g} · max rel diff {result.get('max_rel_diff') or 0:.3g}")
    if not ok:
        st.markdown(f"**{result.get('exception') or 'error'}**: {result.get('message') or ''}")
        if result.get("traceback"):
            st.code(result["traceback"], language=None)
    with st.expander("Environment and method"):
        st.json({"device": result.get("device"), "system": result.get("system"), "method": result.get("method"),
                 "duration_s": result.get("duration_s"), "phases_s": result.get("phases_s"),
                 "finished_at": result.get("finished_at")})


def runner_jobs(cfg, limit: int = 50) -> list[dict]:
    """Recent jobs of the configured runner (raises RunnerUnavailable / RunnerError)."""
    return client_of(cfg).jobs(limit=limit)
