"""The explorer's page-wide CSS, injected once per run by app.py: text that wraps instead of being cut.

Streamlit cuts a metric's label and value, a page link's label and a static table's cells to one line with an
ellipsis; in the narrow columns of a 1000 px window that left "2,…" for a count and "Proble" for a link (issue 46).
Here they wrap, and a metric's value shrinks with the window before it has to.
"""

from __future__ import annotations

import streamlit as st

CSS = """
<style>
[data-testid="stMetricLabel"], [data-testid="stMetricLabel"] *,
[data-testid="stMetricValue"], [data-testid="stMetricValue"] * {
  white-space: normal !important; overflow: visible !important; text-overflow: clip !important;
  overflow-wrap: anywhere;
}
[data-testid="stMetricValue"] { font-size: clamp(1.2rem, 2.4vw, 2.25rem); line-height: 1.2; }
[data-testid="stPageLink"] *, [data-testid="stPageLink-NavLink"] * {
  white-space: normal !important; overflow: visible !important; text-overflow: clip !important;
}
[data-testid="stTable"] td, [data-testid="stTable"] th { white-space: normal; overflow-wrap: anywhere; }
</style>
"""


def inject() -> None:
    """Add the page-wide CSS to this run's page (a style element takes no space)."""
    st.html(CSS)
