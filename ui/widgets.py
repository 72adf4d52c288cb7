"""Widgets shared by pages: the store sidebar, filters bound to query parameters, linked tables."""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

import streamlit as st

from ui import columns, context, links
from ui.labels import error_name
from ui.text import md

if TYPE_CHECKING:  # pandas loads on the first table, not with every page (cold start)
    import pandas as pd

ALL = "(all)"


def page_menu(pages: Sequence[st.Page]) -> None:
    """The sidebar menu (the automatic one is off in .streamlit/config.toml, see there)."""
    with st.sidebar:
        for page in pages:
            st.page_link(page)
        st.divider()


def store_sidebar(info, cfg) -> None:
    """Which store is loaded, how big, when built; read-only and runner state."""
    with st.sidebar:
        st.caption("Store")
        name = "embedded sample" if info.is_sample else str(info.path)
        st.markdown(f"**{md(name)}**  \n{info.rows:,} rows" + (f"  \nbuilt {md(info.built_at)}" if info.built_at else ""))
        if cfg.read_only:
            st.caption(":material/lock: read-only: re-runs and writes are off")
        st.caption(f"label unit: {cfg.label_unit} (undocumented in the dataset; set `TLX_LABEL_UNIT`)")


def _follow_url(key: str, name: str, widget_value) -> None:
    """When the URL's parameter changed since this widget last wrote it (a link, back/forward), move the widget
    to the URL's value; otherwise the widget's own state wins (the user just changed it)."""
    seen_key = f"_url_seen::{key}"
    current = links.param(name)
    if seen_key in st.session_state and st.session_state[seen_key] != current and key in st.session_state:
        st.session_state[key] = widget_value
    st.session_state[seen_key] = current


def _remember(key: str, name: str) -> None:
    st.session_state[f"_url_seen::{key}"] = links.param(name)


def choice(
    label: str,
    options: Sequence[str],
    name: str,
    *,
    key: str,
    allow_all: bool = True,
    closed: bool = False,
    format_func: Callable[[str], str] = str,
    container=st,
) -> str | None:
    """A selectbox whose value lives in the query parameter `name`; `(all)` maps to None. With `closed` (implied
    without `allow_all`) the options are all there is (sort orders, label states): a URL value outside them
    falls back to the first option instead of being kept."""
    values = [ALL, *options] if allow_all else list(options)
    current = links.param(name)
    if current is not None and current not in values and allow_all and not closed:
        values.append(current)  # keep a linked value visible even if this store lacks it (it matches no rows)
    index = values.index(current) if current in values else 0
    _follow_url(key, name, values[index])
    picked = container.selectbox(
        label, values, index=index, key=key, format_func=lambda v: v if v == ALL else format_func(v)
    )
    value = None if picked == ALL else picked
    links.sync_params(**{name: value})
    _remember(key, name)
    return value


def text_param(label: str, name: str, *, key: str, placeholder: str = "", container=st) -> str:
    """A text input whose value lives in the query parameter `name`."""
    initial = links.param(name, "") or ""
    _follow_url(key, name, initial)
    value = container.text_input(label, value=initial, key=key, placeholder=placeholder)
    links.sync_params(**{name: value.strip() or None})
    _remember(key, name)
    return value.strip()


def linked_table(
    df: pd.DataFrame,
    *,
    key: str,
    target: str,
    id_column: str,
    param: str,
    column_config: dict | None = None,
    height: int | str = "auto",
) -> None:
    """A dataframe with an "open" link per row; selecting a row switches to `target` with `param=<id>`. Columns
    are named and formatted by `ui.columns` (hashes hidden, title and metrics first) unless `column_config`
    says otherwise."""
    if df.empty:
        st.info("No rows match.")
        return
    df = columns.front(df.copy())
    for name in ("static_error", "measured_error", "error_type", "triage_error", "cause"):
        if name in df.columns:
            df[name] = df[name].map(lambda v: error_name(v) if isinstance(v, str) else v)
    df.insert(0, "open", [links.href(target, **{param: v}) for v in df[id_column]])
    config = columns.standard(context.settings().label_unit)
    config["open"] = st.column_config.LinkColumn("open", display_text="open", width="small")
    config.update(column_config or {})
    event = st.dataframe(
        df, key=key, hide_index=True, column_config=config, on_select="rerun", selection_mode="single-row",
        height=height,
    )
    rows = event.selection.rows if event is not None and hasattr(event, "selection") else []
    if rows:
        st.switch_page(links.page_file(target), query_params={param: str(df.iloc[rows[0]][id_column])})


def fmt_label(value, unit: str) -> str:
    """A label value with its unit, or a dash for a failed row."""
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "—"
    return f"{value:.4g} {unit}"
