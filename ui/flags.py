"""Flags on pages: the candidate filter's toggles, the flag filter, counts per flag and legends, all reading the
one table of checks (common/checks.py) for labels and meanings."""

from __future__ import annotations

from collections.abc import Iterable

import streamlit as st

from common import checks
from queries.filters import Candidates
from ui import links, widgets
from ui.labels import flag_help, flag_label

REVIEW_NOTE = ("A flag means *review*, not *reject*: it marks a pattern worth a look (KernelBench-style static "
               "checks at ingest, the runner's checks on a re-run).")


def candidate_toggles(key: str, container=st) -> Candidates:
    """The two toggles of the candidate filter, in the URL as `with_no_triton=1` / `with_flagged=1`."""
    no_triton = container.toggle(
        "Include candidates without a Triton kernel", value=links.param("with_no_triton") == "1",
        key=f"{key}_no_triton", help="By default only rows that define a `@triton.jit` kernel are ranked.")
    flagged = container.toggle(
        "Include flagged candidates", value=links.param("with_flagged") == "1", key=f"{key}_flagged",
        help="By default rows with a hack flag (" + ", ".join(checks.HACK_FLAGS) + ") are not ranked. " + REVIEW_NOTE)
    links.sync_params(with_no_triton="1" if no_triton else None, with_flagged="1" if flagged else None)
    return Candidates(with_no_triton=no_triton, with_flagged=flagged)


def flag_choice(key: str, container=st) -> str | None:
    """A select box of every flag (static and run), bound to the URL's `flag`."""
    return widgets.choice("Flag", list(checks.FLAGS), "flag", key=key, container=container, closed=True,
                          format_func=lambda v: f"{flag_label(v)} ({v})")


def level_choice(key: str, container=st) -> int | None:
    """KernelBench's level (L1/L2/L3), bound to the URL's `level`."""
    picked = widgets.choice("Level", ["1", "2", "3"], "level", key=key, container=container, closed=True,
                            format_func=lambda v: f"L{v}")
    return int(picked) if picked else None


def flag_counts_table(counts, key: str) -> None:
    """Rows per flag (from `queries.api.flag_counts`), each with its meaning beside it."""
    if counts.num_rows == 0:
        st.caption("No flag on these rows. " + REVIEW_NOTE)
        return
    df = counts.to_pandas()
    df.insert(0, "flag_label", df["flag"].map(flag_label))
    st.dataframe(df[["flag_label", "flag", "kind", "hack", "rows", "share", "meaning"]], hide_index=True, key=key,
                 column_config={
                     "flag_label": st.column_config.TextColumn("flag", width="medium"),
                     "flag": st.column_config.TextColumn("code", width="small"),
                     "kind": st.column_config.TextColumn("found by", width="small",
                                                         help="static_flag: at ingest, nothing run; run_flag: "
                                                              "by the runner on the latest re-run"),
                     "hack": st.column_config.CheckboxColumn("left out of rankings", width="small",
                                                             help="left out of the leaderboard by default"),
                     "rows": st.column_config.NumberColumn(format="%d", width="small"),
                     "share": st.column_config.NumberColumn("share of rows", format="percent", width="small"),
                     "meaning": st.column_config.TextColumn("meaning", width="large"),
                 })
    st.caption(REVIEW_NOTE)


def legend(codes: Iterable[str], title: str = "What these flags mean", key: str = "legend") -> None:
    """An expander listing each code once with its label and meaning (flags with values included). A table, not
    markdown: a run flag's value can hold text the program chose."""
    seen = list(dict.fromkeys(str(c) for c in codes))
    if not seen:
        return
    with st.expander(title):
        st.dataframe({"code": seen, "flag": [flag_label(c) for c in seen], "meaning": [flag_help(c) for c in seen]},
                     hide_index=True, key=key, column_config={
                         "code": st.column_config.TextColumn(width="small"),
                         "flag": st.column_config.TextColumn(width="medium"),
                         "meaning": st.column_config.TextColumn(width="large")})
