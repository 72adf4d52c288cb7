"""The pages with CPU triage results (issue 41): Overview, Failures and Problem count each failed row once by its
most trusted cause and say what each count rests on; the Failures page filters by triage; the Kernel page shows
the row's latest triage, labelled as a triage and never as a measurement."""

from __future__ import annotations

import pytest

from tests.queries_helpers import result, write_results
from tests.test_pages import chart_data, env, no_exception, open_page, ui_store, view_link  # noqa: F401  (fixtures)
from tests.triage_helpers import triage, write_triage

TRIAGED_ON = "triaged on CPU (torch 2.13.0, sm_90)"


@pytest.fixture
def triaged_env(env, ui_store, tmp_path):  # noqa: F811
    """ui_store's 9 failed rows: train/6,7,8 and test/6,7,8 (no_model_new), train/15,16,17; a GPU run of train/6,
    and CPU triage of train/6 (shadowed by the run), 15 (compile error), 16 (passed), 7 (not triaged)."""
    env(ui_store)
    write_results(tmp_path / "runs", [result("train/000006", "failed", "compile_error")])
    write_triage(tmp_path / "runs", [
        triage("train/000006", "failed", "import_error", module="flash_attn"),
        triage("train/000015", "failed", "compile_error", kernel="k0_1", message="unsupported tensor index"),
        triage("train/000016", "passed"),
        triage("train/000007", "not_triaged"),
    ])


def page_text(at) -> str:
    parts = [e.value for kind in ("markdown", "caption", "success", "error", "info", "warning", "code")
             for e in at.get(kind) if isinstance(getattr(e, "value", None), str)]
    return "\n".join(parts)


@pytest.mark.usefixtures("triaged_env")
def test_failures_count_each_row_once_by_its_most_trusted_cause():
    at = open_page("failures")
    no_exception(at)
    counts = at.dataframe[0].value
    assert counts["rows"].sum() == 9
    by = dict(zip(zip(counts["basis"], counts["cause"], strict=True), counts["rows"], strict=True))
    assert by[("measured on H200", "compile_error")] == 1  # train/6: the run, not its triage nor static finding
    assert by[(TRIAGED_ON, "compile_error")] == 1
    assert by[(TRIAGED_ON, "passed CPU triage (the rest needs a GPU)")] == 1
    assert by[("static", "no ModelNew")] == 5  # train/7 (not triaged), train/8 and test/6, 7, 8
    assert {t["name"] for t in chart_data(at, "Failed rows by cause")} == {"measured on H200", TRIAGED_ON, "static"}
    assert "failed on" not in page_text(at)


@pytest.mark.usefixtures("triaged_env")
def test_failures_filter_by_triage_and_hand_it_to_bulk():
    at = open_page("failures")
    at.selectbox(key="fail_triage").set_value("passed").run()
    no_exception(at)
    assert at.query_params["triage"] == "passed"
    examples = next(d.value for d in at.dataframe if "static_error" in d.value.columns)
    assert list(examples["id"]) == ["train/000016"]
    assert "--triage-status passed" in at.code[0].value and "--status failed" in at.code[0].value
    assert "triage=passed" in view_link(at)
    linked = open_page("failures", triage_error="compile_error")
    no_exception(linked)
    examples = next(d.value for d in linked.dataframe if "static_error" in d.value.columns)
    assert list(examples["id"]) == ["train/000015"] and list(examples["basis"]) == [TRIAGED_ON]
    assert list(examples["triage_message"]) == ["unsupported tensor index"]


@pytest.mark.usefixtures("triaged_env")
def test_overview_and_problem_say_what_each_count_rests_on():
    at = open_page("overview")
    no_exception(at)
    traces = chart_data(at, "Failed rows by cause")
    assert {t["name"] for t in traces} == {"measured on H200", TRIAGED_ON, "static"}
    assert sum(sum(t["x"]) for t in traces) == 9
    problem = next(link.proto.query_string for link in open_page("row", row="train/000015").get("page_link")
                   if link.proto.label == "Problem")
    at = open_page("problem", problem=problem.split("=", 1)[1])
    no_exception(at)
    assert TRIAGED_ON in {t["name"] for t in chart_data(at, "Failed rows by cause")}


@pytest.mark.usefixtures("triaged_env")
def test_row_page_shows_the_latest_triage_as_a_triage():
    at = open_page("row", row="train/000015")
    no_exception(at)
    box = [e.value for e in at.error if "CPU triage" in e.value]
    assert box and "failed: compile_error" in box[0] and TRIAGED_ON in box[0]
    text = page_text(at)
    assert "`k0_1`" in text and "`sm_90`" in text and "`3.5.0`" in text and "unsupported tensor index" in text
    assert "measured" not in box[0] and "failed on" not in text
    passed = open_page("row", row="train/000016")
    assert any("CPU triage: passed" in s.value for s in passed.success)
    never = open_page("row", row="train/000001")
    assert any("No CPU triage result" in c.value for c in never.caption)
