"""One answer, on every page, to "can this explorer queue jobs on its runner?": not reachable, token rejected
(the service answers `/health` to anyone but refuses the explorer's token), another error, or usable; and,
when usable, whether the runner reads its rows from another store than the one shown here."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import streamlit as st

from queries import api
from ui.text import md, md_code

REACHABLE, UNREACHABLE, TOKEN_REJECTED, FAILED = "ok", "unreachable", "token rejected", "error"


@dataclass
class RunnerState:
    kind: str
    message: str = ""
    health: dict = field(default_factory=dict)
    jobs: list[dict] = field(default_factory=list)
    foreign_rows: list[str] = field(default_factory=list)  # rows it ran as other programs than this store's
    other_store: bool = False  # its /health names a store of another build than this explorer's

    @property
    def usable(self) -> bool:
        return self.kind == REACHABLE


def check(cfg, store: Path | str, client) -> RunnerState:
    """Ask the service for its health and (with the token) its recent jobs; never raises."""
    from runner.service.client import RunnerError, RunnerUnavailable

    try:
        health = client.health()
        jobs = client.jobs(limit=50)
    except RunnerUnavailable as error:
        return RunnerState(UNREACHABLE, str(error))
    except RunnerError as error:
        return RunnerState(TOKEN_REJECTED if error.status in (401, 403) else FAILED, error.message)
    served = (health.get("store") or {}).get("build_id") if isinstance(health, dict) else None
    other = bool(served) and served != api.store_build_id(store)
    return RunnerState(REACHABLE, health=health, jobs=jobs, foreign_rows=api.mismatched_rows(store, cfg, jobs),
                       other_store=other)


def explain(state: RunnerState, cfg) -> None:
    """What a page says about a runner it cannot use, or about one that serves another store."""
    url = md_code(cfg.runner_url)
    if state.kind == UNREACHABLE:
        st.info(f"No runner service is reachable at {url} ({md(state.message)}). Start one with "
                "`python -m runner serve` on a machine with a GPU (or CPU interpreter mode) and point the explorer "
                "at it with `TLX_RUNNER_URL` and `TLX_RUNNER_TOKEN`.")
    elif state.kind == TOKEN_REJECTED:
        st.error(f"The runner service at {url} answers, but **token rejected**: it refuses this explorer's "
                 f"`TLX_RUNNER_TOKEN` ({md(state.message)}). Give the explorer the token the service was started "
                 "with (or the one it wrote to `RUNS_DIR/runner.token`).")
    elif state.kind == FAILED:
        st.warning(f"The runner service at {url} answered with an error: {md(state.message)}")
    elif state.other_store:
        served = state.health.get("store") or {}
        st.warning(f"The runner at {url} serves **another store** (build {md_code(served.get('build_id'))} at "
                   f"{md_code(served.get('path'))}) than this explorer's: jobs queued from this page would time its "
                   "programs of those row ids. Start the runner with `--store` set to this explorer's store.")
    elif state.foreign_rows:
        rows = ", ".join(map(str, state.foreign_rows[:3])) + (" …" if len(state.foreign_rows) > 3 else "")
        st.warning(f"The runner at {url} serves **another store** than this explorer's: it ran {md(rows)} as other "
                   "programs than the ones shown here. Jobs queued from this page would time those programs; start "
                   "the runner with `--store` set to this explorer's store.")
