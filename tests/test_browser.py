"""Browser walk through the explorer (Playwright + Debian chromium against `streamlit run app.py`).

Overview → problems → problem → row (diff, escaped HTML) → re-run on a real runner service → the other pages;
no page may show a Streamlit exception. Screenshots go to `artifacts/screenshots/` (git-ignored).
"""

from __future__ import annotations

from pathlib import Path
from urllib.parse import quote

import pytest

from tests.ui_services import CHROMIUM, REPO, require_chromium, runner_service, streamlit_server
from tests.ui_store import build_store


def serve_app_command(port: int) -> list[str]:
    """scripts/serve_app.py (imports and the store opened before the server listens) with the tests' options."""
    import sys

    from tests.ui_services import streamlit_command

    return [sys.executable, str(REPO / "scripts" / "serve_app.py"), *streamlit_command(port)[5:]]

pytestmark = pytest.mark.browser

ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
        "--disable-background-networking", "--disable-component-update", "--disable-sync"]
SHOTS = REPO / "artifacts" / "screenshots"


@pytest.fixture(scope="module")
def app(tmp_path_factory):
    """A store, a runner service on it and the explorer pointed at both; yields (base url, store)."""
    require_chromium()
    tmp = tmp_path_factory.mktemp("browser")
    store = build_store(tmp)
    runs = tmp / "runs"
    with runner_service(store, runs) as (runner_url, token):
        env = {"TLX_STORE": str(store), "TLX_RUNS_DIR": str(runs), "TLX_RUNNER_URL": runner_url,
               "TLX_RUNNER_TOKEN": token, "TLX_READ_ONLY": "0"}
        with streamlit_server(env, command=serve_app_command) as url:  # as `make run` serves it
            yield url, store


@pytest.fixture(scope="module")
def page(app):
    from playwright.sync_api import sync_playwright

    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=str(CHROMIUM), args=ARGS)
        tab = browser.new_page(viewport={"width": 1500, "height": 1100})
        yield tab
        browser.close()


def settle(tab, timeout_ms: int = 20000) -> None:
    """Wait until the script run has finished and the page has drawn its title."""
    tab.wait_for_selector("[data-testid='stMain'] h1", timeout=timeout_ms)
    tab.wait_for_function(
        "() => !document.querySelector('[data-testid=\"stStatusWidget\"]')"
        " && !document.querySelector('[data-testid=\"stSkeleton\"]')",
        timeout=timeout_ms,
    )
    tab.wait_for_timeout(700)  # charts and data grids draw after the run ends


def visit(tab, base: str, path: str, shot: str, timeout_ms: int = 20000) -> None:
    tab.goto(base + path)
    settle(tab, timeout_ms)
    assert tab.locator("[data-testid='stException']").count() == 0, f"exception shown on {path}"
    SHOTS.mkdir(parents=True, exist_ok=True)
    tab.screenshot(path=str(SHOTS / f"{shot}.png"), full_page=True)


def problem_key(store: Path, title_start: str) -> str:
    import pyarrow.parquet as pq

    index = pq.read_table(store / "index.parquet", columns=["problem_key", "title"]).to_pylist()
    return next(r["problem_key"] for r in index if r["title"].startswith(title_start))


def test_walk_problem_row_diff_rerun(app, page):
    base, store = app
    visit(page, base, "/", "overview")
    assert page.get_by_text("Triton GPU Latency Explorer").count() >= 1
    visit(page, base, "/problems", "problems")
    key = problem_key(store, "Doubling")
    visit(page, base, f"/problem?problem={key}", "problem")
    assert page.get_by_text("Fastest candidates").count() == 1
    row = "train/000001"
    visit(page, base, f"/row?row={quote(row, safe='')}", "row")
    diff = page.locator("table.tlx-diff")
    assert diff.count() == 1
    assert "class ModelNew(nn.Module):" in diff.inner_text() and "class Model(nn.Module):" in diff.inner_text()
    assert diff.locator("span.c-kw").count() > 0  # coloured
    page.locator("a[href='#tlx-kernel-k1_0']").click()  # jump to the kernel inside the scrolling diff
    page.wait_for_timeout(500)
    assert page.locator("#tlx-kernel-k1_0").is_visible()
    page.get_by_role("link", name="Slower").click()
    page.wait_for_url(lambda url: "row=" in url and quote(row, safe="") not in url, timeout=15000)
    settle(page)
    assert page.locator("[data-testid='stException']").count() == 0

    page.get_by_role("link", name="Faster").click()  # back to the row we started from
    page.wait_for_url(lambda url: quote(row, safe="") in url, timeout=15000)
    settle(page)
    page.get_by_role("button", name="Re-run this program").click()
    page.wait_for_selector("text=just finished", timeout=120000)
    settle(page)
    assert page.locator("[data-testid='stException']").count() == 0
    assert page.get_by_text("correct", exact=False).count() >= 1
    page.screenshot(path=str(SHOTS / "rerun.png"), full_page=True)


def test_program_html_is_shown_escaped(app, page):
    base, _ = app
    visit(page, base, "/row?row=train%2F000002", "row-escaped")
    diff = page.locator("table.tlx-diff")
    assert "<script>window.__tlx_xss=1</script><b>bold</b>" in diff.inner_text()
    assert diff.locator("script").count() == 0 and diff.locator("b").count() == 0
    assert page.evaluate("() => window.__tlx_xss === undefined")


@pytest.mark.parametrize("path, shot", [
    ("/failures?error=no_model_new", "failures"),
    ("/search?q=tl.load", "search"),
    ("/runs", "runs"),
    ("/export", "export"),
    ("/sql", "sql"),
])
def test_other_pages_render(app, page, path, shot):
    base, _ = app
    visit(page, base, path, shot)
