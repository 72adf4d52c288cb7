"""Browser checks of the workbench (Playwright + Debian chromium against `streamlit run app.py`): the Compare page
opened from a leaderboard and re-run on a real runner service, and Markdown injection through the URL rendering
neither a link nor an image (issue 27)."""

from __future__ import annotations

from urllib.parse import quote, urlsplit

import pytest

from tests.test_browser import app, page, problem_key, settle, visit  # noqa: F401  (fixtures)

pytestmark = pytest.mark.browser

INJECTION = "x` [phish](https://example.com/login) ![pix](https://example.com/p.png) `y"


def test_compare_from_the_leaderboard_and_rerun_both(app, page):  # noqa: F811
    base, store = app
    # the module's first page: a cold server beside the runner service's spares importing torch (in a full CI run
    # on 2 cores its first script run took over 20 s, twice)
    visit(page, base, f"/problem?problem={problem_key(store, 'Doubling')}", "problem-compare", timeout_ms=90000)
    page.get_by_text("Compare two candidates").click()
    page.get_by_test_id("stExpanderDetails").get_by_role("link", name="Compare").click()
    page.wait_for_url(lambda url: "/compare?" in url and "a=" in url and "b=" in url, timeout=15000)
    page.wait_for_selector("[data-testid='stMain'] h1:has-text('Compare two candidates')", timeout=20000)
    page.wait_for_selector("table.tlx-diff", timeout=20000)
    settle(page)
    assert page.locator("[data-testid='stException']").count() == 0
    assert "(ModelNew)" in page.locator("table.tlx-diff").inner_text()
    shared = page.url
    page.get_by_role("button", name="Re-run both").click()
    page.wait_for_selector("text=this session's Re-run both", timeout=180000)
    settle(page)
    assert page.locator("[data-testid='stException']").count() == 0
    visit(page, base, shared[len(base):], "compare")  # the link reopens the same comparison
    assert page.get_by_text("Compare two candidates").count() >= 1 and page.locator("table.tlx-diff").count() == 1


@pytest.mark.parametrize("path", [f"/problem?problem={quote(INJECTION)}", f"/row?row={quote(INJECTION)}",
                                  f"/compare?a={quote(INJECTION)}&b=train%2F000001"])
def test_url_values_render_as_text(app, page, path):  # noqa: F811
    base, _ = app
    requests: list[str] = []
    page.on("request", lambda request: requests.append(request.url))
    visit(page, base, path, "injection")
    main = page.locator("[data-testid='stMain']")
    assert main.locator("a[href*='example.com']").count() == 0
    assert main.locator("img[src*='example.com']").count() == 0
    assert "[phish](https://example.com/login)" in main.inner_text()  # shown, as text
    assert not [url for url in requests if urlsplit(url).hostname == "example.com"]
