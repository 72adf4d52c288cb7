"""Frozen settings read from `TLX_*` environment variables (see README, Configuration)."""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from runner.config import RunnerConfig

REPO_ROOT = Path(__file__).resolve().parent.parent
SAMPLE_DIR = REPO_ROOT / "data" / "sample"

_TRUE = {"1", "true", "yes", "on"}


@dataclass(frozen=True)
class Settings:
    store: Path
    store_is_sample: bool
    cache_dir: Path
    runs_dir: Path
    read_only: bool
    runner_url: str
    runner_token: str | None
    label_unit: str
    duckdb_threads: int
    duckdb_memory: str
    query_timeout_s: float


def _flag(env: Mapping[str, str], name: str) -> bool:
    return env.get(name, "").strip().lower() in _TRUE


def load_settings(env: Mapping[str, str] | None = None) -> Settings:
    env = os.environ if env is None else env
    cache_dir = Path(env.get("TLX_CACHE_DIR") or Path.home() / ".cache" / "tlx").expanduser()
    store_var = env.get("TLX_STORE", "").strip()
    runner = RunnerConfig.from_env(env)  # the TLX_RUNNER_* variables have one owner
    return Settings(
        store=Path(store_var).expanduser() if store_var else cache_dir / "sample-store",
        store_is_sample=not store_var,
        cache_dir=cache_dir,
        runs_dir=Path(env.get("TLX_RUNS_DIR") or cache_dir / "runs").expanduser(),
        read_only=_flag(env, "TLX_READ_ONLY"),
        runner_url=runner.url,
        runner_token=runner.token,
        label_unit=env.get("TLX_LABEL_UNIT", "ms"),
        duckdb_threads=int(env.get("TLX_DUCKDB_THREADS", "2")),
        duckdb_memory=env.get("TLX_DUCKDB_MEMORY", "2GB"),
        query_timeout_s=float(env.get("TLX_QUERY_TIMEOUT_S", "10")),
    )
