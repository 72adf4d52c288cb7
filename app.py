"""Streamlit entry point of the Triton GPU Latency Explorer: navigation, store banner, store-problem page.

Run with `streamlit run app.py`; pick the store with `TLX_STORE=DIR` (unset = the embedded sample store).
"""

from __future__ import annotations

import functools
from pathlib import Path

import streamlit as st

from ui import context, links, style, widgets
from ui.text import md_code

# the favicon is served by the explorer itself: a `:material/...:` page icon makes the browser fetch it from
# Google's font host (issue 45), and set here it stands for every page's icon too (which would be fetched the same
# way); the icons drawn in the page come from the font Streamlit serves
FAVICON = Path(__file__).resolve().parent / "ui" / "assets" / "favicon.png"
st.set_page_config(page_title="Triton GPU Latency Explorer", page_icon=str(FAVICON), layout="wide")


def _store_problem(error: str) -> None:
    cfg = context.settings()
    st.title("No usable store")
    st.error(f"The explorer cannot open its store at {md_code(cfg.store)}:\n\n{error}")  # the operator's path
    st.markdown(
        "Build a store from the dataset's Parquet files (or any Parquet with the same columns), then point the "
        "explorer at it:"
    )
    st.code(
        "python -m queries ingest data/train.parquet data/test.parquet --store /data/tlx-store\n"
        "TLX_STORE=/data/tlx-store streamlit run app.py",
        language="bash",
    )
    st.markdown(
        "Sources may be files, folders or globs of Parquet, or `hf://datasets/makora-ai/triton-gpu-latency`. "
        "Leave `TLX_STORE` unset to use the small sample store the repository ships."
    )


def main() -> None:
    from queries.store import StoreError

    style.inject()
    cfg = context.settings()
    try:
        info = context.current_store(cfg)
    except (StoreError, OSError, ValueError) as error:
        problem = functools.partial(_store_problem, str(error))
        st.navigation([st.Page(problem, title="Store problem", url_path="store-problem", default=True)]).run()
        return
    pages = [
        st.Page(file, title=title, icon=icon, url_path=url_path, default=url_path == "overview")
        for url_path, (file, title, icon) in links.PAGES.items()
    ]
    page = st.navigation(pages, position="hidden")
    widgets.page_menu(pages)
    widgets.store_sidebar(info, cfg)
    page.run()


main()
