"""Small cached lookups the pages share (no program text): filter choices that depend only on the store."""

from __future__ import annotations

import streamlit as st

from queries import api


@st.cache_data(show_spinner=False, max_entries=16)
def _holdout_groups(store: str, built_at: str | None) -> list[str]:
    groups = api.overview(store).groups.column("holdout_group").to_pylist()
    return sorted({g for g in groups if g})


def holdout_groups(info) -> list[str]:
    """Holdout groups present in the store described by `info` (a `ui.context.StoreInfo`), cached per build."""
    return _holdout_groups(str(info.path), info.built_at)
