"""Cached query results the pages share: small, code-free tables keyed by the store's version
(`queries.store.store_version`: a rebuild or the syntax check changes it) and filters; the settings passed down
from the page ride along unhashed (`_settings`: one process, one environment).

`st.cache_data` entries live for `TTL_S` seconds so new run results show up soon; program text is never cached
here (the row page fetches it per view through `queries.api.row`).
"""

from __future__ import annotations

from dataclasses import astuple

import streamlit as st

from common.settings import Settings
from queries import api
from queries.filters import Filters

TTL_S = 60


@st.cache_data(show_spinner=False, max_entries=16, ttl=TTL_S)
def _holdout_groups(store: str, version: int, _settings: Settings) -> list[str]:
    groups = api.overview(store, _settings).groups.column("holdout_group").to_pylist()
    return sorted({g for g in groups if g})


def holdout_groups(info, cfg: Settings) -> list[str]:
    """Holdout groups present in the store described by `info` (a `ui.context.StoreInfo`)."""
    return _holdout_groups(str(info.path), info.version, cfg)


@st.cache_data(show_spinner=False, max_entries=64, ttl=TTL_S)
def _overview(store: str, version: int, filters: tuple, _settings: Settings) -> api.Overview:
    return api.overview(store, _settings, Filters(*filters))


def overview(info, cfg: Settings, f: Filters) -> api.Overview:
    return _overview(str(info.path), info.version, astuple(f), cfg)


@st.cache_data(show_spinner="Scoring the predictions…", max_entries=4, ttl=TTL_S)
def _scored(store: str, version: int, data: bytes, name: str, _settings: Settings):
    from queries.scoring.metrics import score_predictions
    from queries.scoring.predictions import read_predictions

    return score_predictions(store, _settings, read_predictions(data, name))


def scored(info, cfg: Settings, data: bytes, name: str):
    """(metrics table, ids the store lacks) of a predictions file's bytes; raises `PredictionsError`."""
    return _scored(str(info.path), info.version, data, name, cfg)
