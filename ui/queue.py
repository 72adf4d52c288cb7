"""The runner queue on the Runs page: counts from the service's own `/health`, recent jobs with readable times; a
pair job (two programs timed back to back in one job) is one line naming both programs and each one's state or
verdict."""

from __future__ import annotations

from datetime import UTC, datetime

import pandas as pd
import streamlit as st

from ui import rerun, runner_state


def _when(epoch: float | None) -> str | None:
    if epoch is None:
        return None
    return datetime.fromtimestamp(float(epoch), UTC).strftime("%Y-%m-%d %H:%M:%S UTC")


def _what(job: dict) -> str:
    """The row a job ran, or the program's hash for a job submitted as text; both members of a pair job."""
    if job.get("members"):
        return "pair: " + " · ".join(f"{m.get('label')} {_what(m)}" for m in job["members"])
    if job.get("row_id"):
        return str(job["row_id"])
    sha = job.get("program_sha256") or ""
    return f"program {sha[:12]}" if sha else "program"


def _verdict(job: dict) -> str | None:
    """A job's verdict; for a pair job each member's, or its state while it has none."""
    if job.get("members"):
        return " · ".join(f"{m.get('label')} {m.get('error_type') or m.get('status') or m.get('state')}"
                          for m in job["members"])
    result = job.get("result") or {}
    return result.get("error_type") or result.get("status")


def jobs_frame(jobs: list[dict]) -> pd.DataFrame:
    """One row per job: state, row (or program hash), verdict, profile and UTC times; the service's epoch
    floats become dates and a running job's duration counts up to now."""
    now = datetime.now(UTC).timestamp()
    rows = []
    for job in jobs:
        result = job.get("result") or {}
        started, finished = job.get("started_at"), job.get("finished_at")
        end = finished if finished is not None else (now if job.get("state") == "running" else None)
        method = result.get("method") if isinstance(result.get("method"), dict) else {"profile": result.get("profile")}
        rows.append({
            "job": job.get("id"), "state": job.get("state"), "row": _what(job),
            "verdict": _verdict(job),
            "profile": method.get("profile") or (job.get("options") or {}).get("profile"),
            "submitted": _when(job["created_at"] if job.get("created_at") is not None else job.get("submitted_at")),
            "started": _when(started), "finished": _when(finished),
            "duration_s": None if started is None or end is None else round(float(end) - float(started), 1),
        })
    return pd.DataFrame(rows)


def queue_panel(cfg, store) -> None:
    """Queued and running counts (the service's, not of the listed page of jobs) and the recent jobs."""
    state = runner_state.check(cfg, store, rerun.client_of(cfg))
    runner_state.explain(state, cfg)
    if not state.usable:
        return
    health, jobs = state.health, state.jobs
    st.caption(rerun.runner_summary(cfg.runner_url, health))
    if not jobs:
        st.caption("The runner has no jobs yet.")
        return
    st.dataframe(jobs_frame(jobs), hide_index=True, key="runner_jobs", column_config={
        "duration_s": st.column_config.NumberColumn("duration (s)", format="%.1f"),
    })
