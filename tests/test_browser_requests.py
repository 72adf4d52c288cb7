"""The explorer asks nothing of a third party (issue 45): every request the browser makes while pages are drawn
goes to the explorer itself; the page icons (`:material/...:`) once made it fetch the favicon from Google's font
host. Playwright + Debian chromium against `streamlit run app.py`."""

from __future__ import annotations

from urllib.parse import urlsplit

import pytest

from tests.test_browser import ARGS, settle
from tests.ui_services import CHROMIUM, require_chromium, streamlit_server
from tests.ui_store import build_store

pytestmark = pytest.mark.browser


def test_pages_request_nothing_outside_the_explorer(tmp_path):
    from playwright.sync_api import sync_playwright

    require_chromium()
    store = build_store(tmp_path)
    env = {"TLX_STORE": str(store), "TLX_RUNS_DIR": str(tmp_path / "runs"), "TLX_RUNNER_URL": "http://127.0.0.1:9"}
    with streamlit_server(env) as url, sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=str(CHROMIUM), args=ARGS)
        try:
            tab = browser.new_page()
            requested: list[str] = []
            tab.on("request", lambda request: requested.append(request.url))
            for path in ("/", "/problems", "/row?row=train%2F000000", "/search", "/score"):
                tab.goto(url + path)
                settle(tab)
                tab.wait_for_timeout(1500)  # the favicon and fonts are asked for after the page draws
            favicon = tab.evaluate("() => [...document.querySelectorAll('link[rel~=icon]')].map(l => l.href)")
        finally:
            browser.close()
    own = urlsplit(url).netloc
    elsewhere = sorted({u for u in requested if urlsplit(u).scheme in ("http", "https", "ws", "wss")
                        and urlsplit(u).netloc != own})
    assert requested and not elsewhere, elsewhere
    assert favicon and all(urlsplit(h).netloc == own for h in favicon), favicon
