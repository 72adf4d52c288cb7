"""Browser checks of issue 46 (Playwright + Debian chromium against `streamlit run app.py`), at 1000×800 and
1400×900: metric labels and values, page links and the flags table shown whole (no element cut: its content fits
its box, measured in the browser, not only present in the page), the Failures chart's category names inside the
chart and its legend off the bars, Compare's facts table without a scroll box, and the Kernel page's tabs answering
every click."""

from __future__ import annotations

from urllib.parse import quote

import pytest

from tests.queries_helpers import result, write_results
from tests.test_browser import ARGS, SHOTS, app, problem_key, settle  # noqa: F401  (fixtures)
from tests.ui_services import CHROMIUM

pytestmark = pytest.mark.browser

VIEWPORTS = {"1000": {"width": 1000, "height": 800}, "1400": {"width": 1400, "height": 900}}

# Every element inside the matched ones whose content is wider than its box, with its text: what an ellipsis or an
# `overflow: hidden` cuts. One pixel of slack for sub-pixel rounding.
CUT = """(selector) => {
  const cut = [];
  for (const root of document.querySelectorAll(selector)) {
    for (const el of [root, ...root.querySelectorAll('*')]) {
      if (el.clientWidth > 0 && el.scrollWidth > el.clientWidth + 1) cut.push(el.innerText.trim().slice(0, 60));
    }
  }
  return cut;
}"""


@pytest.fixture(scope="module")
def browser(app):  # noqa: F811
    from playwright.sync_api import sync_playwright

    base, store = app
    # measured causes beside the static ones, for the Failures chart; speedups for Compare
    write_results(store.parent / "runs", [
        result("train/000004", "failed", "runtime_error"), result("train/000007", "failed", "compile_error"),
        result("train/000001", "ok", median_ms=0.0123) | {"speedup": 1.87},
        result("train/000010", "ok", median_ms=0.0234) | {"speedup": 0.98},
    ], name="newcomer.jsonl")
    with sync_playwright() as pw:
        chromium = pw.chromium.launch(executable_path=str(CHROMIUM), args=ARGS)
        yield chromium
        chromium.close()


@pytest.fixture(params=list(VIEWPORTS))
def tab(request, browser):
    page = browser.new_page(viewport=VIEWPORTS[request.param])
    page.width_name = request.param
    yield page
    page.close()


def open_view(tab, base: str, path: str, shot: str) -> None:
    tab.goto(base + path)
    settle(tab, 60000)
    assert tab.locator("[data-testid='stException']").count() == 0, f"exception shown on {path}"
    SHOTS.mkdir(parents=True, exist_ok=True)
    tab.screenshot(path=str(SHOTS / f"newcomer-{shot}-{tab.width_name}.png"), full_page=True)


def assert_whole(tab, selector: str, at_least: int = 1) -> None:
    assert tab.locator(selector).count() >= at_least, f"no {selector} on the page"
    assert tab.evaluate(CUT, selector) == [], f"cut at {tab.width_name} px: {selector}"


def test_overview_metrics_and_flags_table_are_whole(app, tab):  # noqa: F811
    base, _ = app
    open_view(tab, base, "/", "overview")
    assert_whole(tab, "[data-testid='stMetric']", at_least=6)
    assert_whole(tab, "[data-testid='stTable']")


def test_problem_header_metrics_are_whole(app, tab):  # noqa: F811
    base, store = app
    open_view(tab, base, f"/problem?problem={problem_key(store, 'Doubling')}", "problem")
    assert_whole(tab, "[data-testid='stMetric']", at_least=5)
    labels = tab.locator("[data-testid='stMetricLabel']").all_inner_texts()
    assert any("median label (ms)" in t for t in labels) and any("fastest (ms)" in t for t in labels)


def test_kernel_page_links_are_whole(app, tab):  # noqa: F811
    base, _ = app
    open_view(tab, base, "/row?row=" + quote("train/000004", safe=""), "row")
    assert_whole(tab, "[data-testid='stMain'] [data-testid='stPageLink']", at_least=3)
    assert_whole(tab, "[data-testid='stMetric']", at_least=4)
    shown = tab.locator("[data-testid='stMain'] [data-testid='stPageLink']").all_inner_texts()
    assert {"Problem", "Faster", "Slower"} <= {t.split()[-1] for t in shown}  # after the icon's name


def test_failures_chart_names_and_legend_fit(app, tab):  # noqa: F811
    base, _ = app
    open_view(tab, base, "/failures", "failures")
    chart = tab.locator(".js-plotly-plot").filter(has_text="runtime_error").first
    chart.wait_for(timeout=20000)
    frame = chart.locator("svg.main-svg").first.bounding_box()
    names = chart.locator("g.ytick text")
    assert names.count() >= 2
    texts = [names.nth(i).text_content() for i in range(names.count())]  # SVG text: no innerText
    for i, text in enumerate(texts):
        assert names.nth(i).bounding_box()["x"] >= frame["x"] - 1, f"{text!r} starts left of the chart"
    assert {"runtime_error", "compile_error"} <= set(texts)
    legend = chart.locator("g.legend").bounding_box()
    bars = chart.locator("g.point path")
    assert bars.count() >= 2
    top = min(bars.nth(i).bounding_box()["y"] for i in range(bars.count()))
    assert legend["y"] + legend["height"] <= top + 1, "the legend overlaps the bars"


def test_compare_facts_table_needs_no_scroll(app, tab):  # noqa: F811
    base, _ = app
    open_view(tab, base, "/compare?a=train%2F000001&b=train%2F000010", "compare")
    grid = tab.locator("[data-testid='stDataFrame']").first.bounding_box()
    assert grid["height"] >= 17 * 35 - 5, grid  # a header and 16 rows of 35 px; the old box was 400 px


def test_kernel_tabs_answer_every_click(app, tab):  # noqa: F811
    base, _ = app
    open_view(tab, base, "/row?row=" + quote("train/000001", safe=""), "row-tabs")
    tabs = tab.get_by_role("tab")
    order = [("Triton kernels", "tab=kernels"), ("Whole program", "tab=program"), ("Model vs ModelNew", None),
             ("Whole program", "tab=program"), ("Triton kernels", "tab=kernels")]
    for name, param in order:
        tabs.filter(has_text=name).first.click()
        tab.wait_for_function("(name) => [...document.querySelectorAll('[role=tab]')].some(t => "
                              "t.getAttribute('aria-selected') === 'true' && t.innerText.includes(name))", arg=name,
                              timeout=20000)
        settle(tab)
        selected = tab.locator("[role=tab][aria-selected=true]").inner_text()
        assert name in selected, (name, selected)
        if param:
            tab.wait_for_url(lambda url, p=param: p in url, timeout=10000)
        else:
            tab.wait_for_url(lambda url: "tab=" not in url, timeout=10000)
        download = tab.get_by_role("button", name="Download program")
        assert download.is_visible() == (name == "Whole program")  # the open tab's content, not the old one's
