"""What a person sees of CPU triage (issue 41), in Debian chromium against `streamlit run app.py`: the Failures
chart's legend and table name what each count rests on ("triaged on CPU (torch X, sm_90)", "measured on <GPU>"),
and the Kernel page shows a row's triage as a triage, never as a measurement."""

from __future__ import annotations

import pytest

from tests.queries_helpers import result, write_results
from tests.test_browser import ARGS, settle
from tests.triage_helpers import triage, write_triage
from tests.ui_services import CHROMIUM, require_chromium, streamlit_server
from tests.ui_store import build_store

pytestmark = pytest.mark.browser
TRIAGED_ON = "triaged on CPU (torch 2.13.0, sm_90)"


@pytest.fixture(scope="module")
def tab(tmp_path_factory):
    from playwright.sync_api import sync_playwright

    require_chromium()
    tmp = tmp_path_factory.mktemp("browser-triage")
    store, runs = build_store(tmp), tmp / "runs"
    write_results(runs, [result("train/000006", "failed", "compile_error")])
    write_triage(runs, [triage("train/000015", "failed", "compile_error", kernel="k0_1",
                               message="unsupported tensor index"), triage("train/000016", "passed")])
    env = {"TLX_STORE": str(store), "TLX_RUNS_DIR": str(runs), "TLX_RUNNER_URL": "http://127.0.0.1:9",
           "TLX_READ_ONLY": "1"}
    with streamlit_server(env) as url, sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=str(CHROMIUM), args=ARGS)
        page = browser.new_page(viewport={"width": 1500, "height": 1100})
        page.base = url
        yield page
        browser.close()


def test_failures_say_what_each_count_rests_on(tab):
    tab.goto(tab.base + "/failures")
    settle(tab, 40000)
    legend = tab.locator(".js-plotly-plot .legendtext").all_text_contents()  # SVG text
    assert TRIAGED_ON in legend and "measured on H200" in legend and "static" in legend
    assert tab.get_by_text("failed on", exact=False).count() == 0


def test_kernel_page_shows_the_triage_as_a_triage(tab):
    tab.goto(tab.base + "/row?row=train%2F000015")
    settle(tab, 40000)
    box = tab.locator("[data-testid='stAlert']", has_text="CPU triage")
    assert box.count() == 1
    text = box.inner_text()
    assert "failed: compile_error" in text and TRIAGED_ON in text and "measured" not in text
    assert tab.get_by_text("unsupported tensor index").count() >= 1
