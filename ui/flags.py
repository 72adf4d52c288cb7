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


def flag_counts_table(counts) -> None:
    """Rows per flag (from `queries.api.flag_counts`), each with its whole meaning beside it: a static table, which
    wraps long text where a data grid would cut it."""
    if counts.num_rows == 0:
        st.caption("No flag on these rows. " + REVIEW_NOTE)
        return
    rows = counts.to_pylist()
    st.table({  # what a reader needs first (the flag, how many, what it means) before the details
        "flag": [flag_label(r["flag"]) for r in rows],
        "rows": [f"{r['rows']:,}" for r in rows],
        "share": [f"{r['share']:.1%}" for r in rows],
        "meaning": [r["meaning"] for r in rows],
        "ranked by default": ["no" if r["hack"] else "yes" for r in rows],
        "found by": ["ingest (static)" if r["kind"] == "static_flag" else "a re-run" for r in rows],
        "code": [r["flag"] for r in rows],
    })
    st.caption(REVIEW_NOTE)


def legend(codes: Iterable[str], title: str = "What these flags mean") -> None:
    """An expander listing each code once with its label and meaning (flags with values included). A static table
    (wrapped, and plain text: a run flag's value can hold text the program chose)."""
    seen = list(dict.fromkeys(str(c) for c in codes))
    if not seen:
        return
    with st.expander(title):
        st.table({"code": seen, "flag": [flag_label(c) for c in seen], "meaning": [flag_help(c) for c in seen]})
