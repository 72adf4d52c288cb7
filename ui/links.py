"""Deep links: page url paths, query-parameter state and "copy link" controls.

Every view is addressable: the page's url path plus query parameters (`problem`, `row`, and each page's filters).
Links are relative (``row?row=train%2F000012``) so they keep working when the app is served under a base path.
"""

from __future__ import annotations

from urllib.parse import urlencode, urlsplit

import streamlit as st

# url path -> page file; app.py builds the navigation from this table.
PAGES: dict[str, tuple[str, str, str]] = {
    "overview": ("pages/overview.py", "Overview", ":material/dashboard:"),
    "problems": ("pages/problems.py", "Problems", ":material/list:"),
    "problem": ("pages/problem.py", "Problem", ":material/insights:"),
    "row": ("pages/row.py", "Kernel", ":material/code:"),
    "compare": ("pages/compare.py", "Compare", ":material/compare_arrows:"),
    "failures": ("pages/failures.py", "Failures", ":material/error:"),
    "search": ("pages/search.py", "Search", ":material/search:"),
    "runs": ("pages/runs.py", "Runs", ":material/speed:"),
    "score": ("pages/score.py", "Score predictions", ":material/leaderboard:"),
    "export": ("pages/export.py", "Export", ":material/download:"),
    "sql": ("pages/sql.py", "SQL", ":material/terminal:"),
}


def page_file(url_path: str) -> str:
    return PAGES[url_path][0]


def _clean(params: dict) -> dict[str, str]:
    return {k: str(v) for k, v in params.items() if v not in (None, "", [], ())}


def param(name: str, default: str | None = None) -> str | None:
    """One query parameter of the current URL (or `default`)."""
    value = st.query_params.get(name)
    return value if value not in (None, "") else default


def int_param(name: str, default: int, lo: int, hi: int) -> int:
    """An integer query parameter clamped to [lo, hi]; anything that is not an integer gives `default`."""
    try:
        return min(max(int(param(name, str(default))), lo), hi)
    except ValueError:
        return default


def sync_params(**values) -> None:
    """Write the page's state into the URL; `None`/empty values remove the parameter."""
    for key, value in values.items():
        if value in (None, "", [], ()):
            if key in st.query_params:
                del st.query_params[key]
        else:
            # Written even when unchanged: after an in-app link to the same page, this is what makes the
            # browser's address bar show the new parameters.
            st.query_params[key] = str(value)


def href(url_path: str, **params) -> str:
    """A relative link to a page with query parameters; the overview is the app root."""
    query = urlencode(_clean(params))
    target = url_path if url_path != "overview" else "./"
    return f"{target}?{query}" if query else target


def absolute_url(url_path: str, **params) -> str:
    """The full URL of a view, from the address the browser used (falls back to a relative link)."""
    relative = href(url_path, **params)
    current = st.context.url or ""
    parts = urlsplit(current)
    if not parts.scheme:
        return relative
    base = parts.path
    # st.context.url ends with the current page's url path: strip it to get the app's base path.
    for known in PAGES:
        if base.rstrip("/").endswith("/" + known):
            base = base.rstrip("/")[: -len(known)]
            break
    if not base.endswith("/"):
        base += "/"
    tail = relative[2:] if relative.startswith("./") else relative
    return f"{parts.scheme}://{parts.netloc}{base}{tail}"


def copy_link(url_path: str, **params) -> None:
    """Show the view's URL as an inline code span, to select and copy. Not a `st.code` box: that loads and starts
    Streamlit's syntax highlighter (1.6 MB of JavaScript) on a direct link to every page, code or none (issue 46:
    BENCHMARKS.md, "Direct links")."""
    from ui.text import md_code

    st.caption("Link to this view (select it to copy)")
    st.markdown(md_code(absolute_url(url_path, **params)))
