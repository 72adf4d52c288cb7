"""Make every URL go through app.py's `st.navigation`, also on a fresh server.

Streamlit treats a `pages/` folder beside the entry script as its older multipage layout until the first session
calls `st.navigation`: until then a deep link such as `/row?row=train%2F000002` runs `pages/row.py` alone, without
app.py's menu and store checks. Every page imports this module first; in that case it switches the old layout off
for the whole server and reruns, so the run goes through app.py (private Streamlit API, guarded).
"""

from __future__ import annotations

import streamlit as st


def route_through_app() -> None:
    try:
        from streamlit.runtime.pages_manager import PagesManager
    except ImportError:  # a Streamlit without the old layout
        return
    if getattr(PagesManager, "uses_pages_directory", False):
        PagesManager.uses_pages_directory = False
        st.rerun()


route_through_app()
