"""AppTest checks of the researcher's workbench (issue 24): the Compare page and its leaderboard picker, and the
newcomer's list: timing spread as p10–p90, search facts and counts, diff mode and tab in the link, the empty
Problem page, unknown error types, runner state (token rejected, another store) and the bulk hint."""

from __future__ import annotations

from urllib.parse import urlencode

import pytest
from streamlit.testing.v1 import AppTest

from tests.queries_helpers import result, settings_now, write_results
from tests.test_pages import env, no_exception, open_page, problem_key_of, ui_store, view_link  # noqa: F401  (fixtures)
from tests.ui_services import runner_service


def test_compare_shows_both_candidates_facts_and_modelnew_diff(env, ui_store, tmp_path):  # noqa: F811
    env(ui_store)
    timed = result("train/000004", "ok", median_ms=0.5)
    timed["timing"] |= {"p10_ms": 0.45, "p90_ms": 0.61}
    write_results(tmp_path / "runs", [timed])
    at = open_page("compare", a="train/000001", b="train/000004")  # two Doubling candidates
    no_exception(at)
    facts = at.dataframe[0].value.set_index("")
    assert facts.loc["row", "A"] == "train/000001" and facts.loc["row", "B"] == "train/000004"
    assert facts.loc["latest verdict", "A"] == "never re-run" and facts.loc["latest verdict", "B"] == "correct"
    assert facts.loc["ModelNew spread", "B"] == "p10–p90 0.45–0.61 ms over 100 calls"
    assert facts.loc["kernel names", "A"] == "k1_0" and facts.loc["kernel names", "B"] == "k1_1"
    assert any("label: B takes 2× A's time" in c.value for c in at.caption)
    import re

    body = re.sub(r"<[^>]+>", "", "\n".join(h.proto.body for h in at.get("html")))
    assert "A: train/000001 (ModelNew)" in body and "B: train/000004 (ModelNew)" in body
    assert "def get_inputs" not in body and "k1_0" in body and "k1_1" in body  # the two candidates, no reference
    assert "a=train%2F000001&b=train%2F000004" in view_link(at)
    assert not at.warning  # same problem


def test_compare_explains_missing_rows_and_other_problems(env, ui_store):  # noqa: F811
    env(ui_store)
    at = open_page("compare")
    no_exception(at)
    assert "compare?a=ID&b=ID" in at.info[0].value
    at = open_page("compare", a="train/000001", b="train/999999")
    no_exception(at)
    assert "B (`train/999999`)" in at.error[0].value
    at = open_page("compare", a="train/000000", b="train/000001")  # ReLU vs Doubling
    no_exception(at)
    assert "different problems" in at.warning[0].value


def test_leaderboard_opens_a_comparison(env, ui_store):  # noqa: F811
    env(ui_store)
    at = open_page("problem", problem=problem_key_of(ui_store, "Doubling"))
    no_exception(at)
    board = next(d.value for d in at.dataframe if "verified" in d.value.columns)
    first, _, third = board["id"].iloc[:3]
    assert at.selectbox(key="leaderboard_compare::a").value == first
    at.selectbox(key="leaderboard_compare::b").set_value(third).run()
    link = next(p.proto for p in at.get("page_link") if p.proto.label == "Compare")
    assert link.page == "compare" and not link.disabled
    assert link.query_string == urlencode({"a": first, "b": third})
    at.selectbox(key="leaderboard_compare::b").set_value(first).run()  # a row against itself: nothing to compare
    assert next(p.proto for p in at.get("page_link") if p.proto.label == "Compare").disabled


def test_rerun_both_is_one_pair_job_on_a_runner_service(env, ui_store, tmp_path):  # noqa: F811
    runs = tmp_path / "runner-runs"
    with runner_service(ui_store, runs) as (url, token):
        env(ui_store, TLX_RUNNER_URL=url, TLX_RUNNER_TOKEN=token, TLX_RUNS_DIR=str(runs))
        at = open_page("compare", a="train/000001", b="train/000004")
        no_exception(at)
        assert any("queues one pair job" in c.value for c in at.caption)
        at.button(key="rerun_both::train/000001::train/000004").click().run()
        no_exception(at)
        import time

        deadline = time.monotonic() + 120
        facts = at.dataframe[0].value.set_index("")
        checked = ["correct (CPU interpreter check)"] * 2  # an interpreter run is a check, never a timing (issue 42)
        while facts.loc["latest verdict"].tolist() != checked and time.monotonic() < deadline:
            time.sleep(1.0)
            at.run()
            facts = at.dataframe[0].value.set_index("")
        assert facts.loc["latest verdict"].tolist() == checked
        assert facts.loc["GPU / device"].tolist() == ["—"] * 2  # no GPU run to take a timing from
        from runner.service.client import RunnerClient

        jobs = RunnerClient(url, token).jobs()
        assert len(jobs) == 1 and jobs[0]["kind"] == "pair"  # one job for both
        assert [m["row_id"] for m in jobs[0]["members"]] == ["train/000001", "train/000004"]
        summary = at.success[0].value
        assert summary.startswith(f"Pair job `{jobs[0]['id']}`: **A** correct (CPU interpreter check), no timing · "
                                  "**B** correct (CPU interpreter check), no timing")
        assert "not timed on cpu-interpreter: no speedup" in summary
        assert "measured in the same job, back to back on cpu-interpreter · cpu0" in summary
        assert "A at " in summary and ", then B at " in summary  # the order they ran in
        assert any("this session's Re-run both" in c.value for c in at.caption)
        at = open_page("compare", a="train/000001", b="train/000004")  # a new session reads the results log
        no_exception(at)
        assert at.dataframe[0].value.set_index("").loc["latest verdict"].tolist() == checked
        logged = api_runs_of(ui_store, runs, ("train/000001", "train/000004"))
        assert {r["pair_job"] for r in logged} == {jobs[0]["id"]}


def api_runs_of(store, runs_dir, row_ids) -> list[dict]:
    from queries import api

    return [r for r in api.runs(store, settings_now(runs_dir)).to_pylist() if r["row_id"] in row_ids]


def test_compare_says_when_both_times_come_from_one_pair_job(env, ui_store, tmp_path):  # noqa: F811
    env(ui_store)
    a, b = result("train/000001", "ok", median_ms=1.0), result("train/000004", "ok", median_ms=0.25)
    write_results(tmp_path / "runs", [a | {"pair": {"job_id": "j1", "member": "a"}},
                                      b | {"pair": {"job_id": "j1", "member": "b"}}])
    at = open_page("compare", a="train/000001", b="train/000004")
    no_exception(at)
    assert any("measured: B takes 0.25× A's time (same job: back to back on one GPU, one profile)" in c.value
               for c in at.caption)
    write_results(tmp_path / "runs", [a | {"finished_at": "2025-02-01T00:00:00Z"},  # newer runs, one job each
                                      b | {"finished_at": "2025-02-01T00:00:00Z"}], name="worker-3.jsonl")
    at = open_page("compare", a="train/000001", b="train/000004")
    assert any("(separate jobs)" in c.value for c in at.caption)


def test_a_runner_without_pair_jobs_is_named_on_the_compare_page(env, ui_store):  # noqa: F811
    import threading

    from runner.service.http import make_server
    from tests.test_runner_pairs import OlderService
    from tests.test_runner_service import TOKEN

    server = make_server(OlderService(), "127.0.0.1", 0)
    threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.1}, daemon=True).start()
    try:
        env(ui_store, TLX_RUNNER_URL=f"http://127.0.0.1:{server.server_address[1]}", TLX_RUNNER_TOKEN=TOKEN)
        at = open_page("compare", a="train/000001", b="train/000004")
        no_exception(at)
    finally:
        server.shutdown()
        server.server_close()
    assert any("does not know pair jobs (an older runner)" in w.value for w in at.warning)
    assert not [b for b in at.button if b.label == "Re-run both"]


def test_the_runs_page_lists_a_pair_job_as_one_line_with_both_members():
    from ui.queue import jobs_frame

    members = [{"label": "a", "row_id": "train/000001", "state": "done", "status": "failed",
                "error_type": "output_mismatch"},
               {"label": "b", "row_id": None, "program_sha256": "f" * 64, "state": "running", "status": None}]
    frame = jobs_frame([{"id": "j1", "kind": "pair", "state": "running", "members": members, "result": None,
                         "options": {"profile": "kernelbench"}, "created_at": 1.0, "started_at": 2.0}])
    row = frame.iloc[0]
    assert row["row"] == "pair: a train/000001 · b program ffffffffffff"
    assert row["verdict"] == "a output_mismatch · b running" and row["profile"] == "kernelbench"


def test_row_timing_spread_is_p10_p90_not_std(env, ui_store, tmp_path):  # noqa: F811
    env(ui_store)
    run = result("train/000004", "ok", median_ms=0.006)
    run["timing"] |= {"std_ms": 0.014, "p10_ms": 0.0059, "p90_ms": 0.0071}
    write_results(tmp_path / "runs", [run])
    at = open_page("row", row="train/000004")
    no_exception(at)
    median = next(m for m in at.metric if m.label == "ModelNew median")
    assert median.value == "0.006 ms" and "±" not in median.value
    assert any("p10–p90 0.0059–0.0071 ms over 100 calls" in c.value for c in at.caption)


def test_row_diff_mode_and_tab_live_in_the_link(env, ui_store):  # noqa: F811
    env(ui_store)
    at = open_page("row", row="train/000001", diff="unified", tab="kernels")
    no_exception(at)
    assert any(c.value.startswith("--- reference (Model)") for c in at.code)
    assert at.session_state["row_tab"].startswith("Triton kernels")
    assert "tab=kernels" in view_link(at) and "diff=unified" in view_link(at)
    at.get("button_group")[0].set_value("side by side").run()
    no_exception(at)
    assert "diff" not in at.query_params and "diff=" not in view_link(at)


def test_search_shows_title_label_status_and_the_hit_count(env, ui_store, tmp_path):  # noqa: F811
    env(ui_store)
    write_results(tmp_path / "runs", [result("train/000002", "failed", "compile_error")])
    at = open_page("search", q="Negation", limit="5")
    no_exception(at)
    hits = next(d.value for d in at.dataframe if "snippet" in d.value.columns)
    assert len(hits) == 5 and {"title", "y", "latest_status"} <= set(hits.columns)
    row = hits.set_index("id").loc["train/000002"]
    assert row["title"].startswith("Negation") and row["latest_status"] == "failed: compile_error"
    assert set(hits["latest_status"]) == {"failed: compile_error", "never re-run"}
    assert any(c.value.startswith("12 matching rows (the first 5 listed)") for c in at.caption)


def test_empty_problem_page_counts_this_stores_problems(env, ui_store):  # noqa: F811
    env(ui_store)
    at = open_page("problem")
    no_exception(at)
    assert at.selectbox(key="pick_problem").label == "Open a problem (all 3)"


def test_unknown_error_type_in_the_link_is_refused(env, ui_store):  # noqa: F811
    env(ui_store)
    at = open_page("failures", error="bogus")
    no_exception(at)
    assert "no known error type" in at.warning[0].value
    assert at.selectbox(key="fail_error").value == "(all)" and "error" not in at.query_params
    at = open_page("failures", error="cuda_error")  # a measured type this store has not seen yet is kept
    assert not at.warning and at.selectbox(key="fail_error").value == "cuda_error"


def test_bulk_hint_runs_from_the_checkout(env, ui_store, monkeypatch):  # noqa: F811
    import sys

    from ui.bulk import CHECKOUT, python_command

    env(ui_store)
    at = open_page("failures")
    assert at.code[0].value.startswith(f"{python_command()} -m runner bulk --store")
    assert f"`{CHECKOUT}`" in " ".join(c.value for c in at.caption)
    monkeypatch.setattr(sys, "executable", str(CHECKOUT / ".venv" / "bin" / "python"))  # as `make run` starts it
    assert python_command() == ".venv/bin/python"
    monkeypatch.setattr(sys, "executable", "/usr/local/bin/python3")  # the container's
    assert python_command() == "/usr/local/bin/python3"


@pytest.fixture
def runner_with_other_token(ui_store, tmp_path):  # noqa: F811
    with runner_service(ui_store, tmp_path / "runner-runs", token="the-service-token") as (url, _):
        yield url


@pytest.mark.parametrize("page, params", [("row", {"row": "train/000001"}), ("runs", {}), ("failures", {}),
                                          ("compare", {"a": "train/000001", "b": "train/000004"})])
def test_a_rejected_token_is_said_everywhere(page, params, env, ui_store, runner_with_other_token):  # noqa: F811
    env(ui_store, TLX_RUNNER_URL=runner_with_other_token, TLX_RUNNER_TOKEN="not-the-token")
    at = open_page(page, **params)
    no_exception(at)
    assert any("token rejected" in e.value for e in at.error), [e.value for e in at.error]
    assert not [b for b in at.button if b.label.startswith(("Re-run", "Queue"))]


def test_a_runner_on_another_store_is_named_before_queuing(ui_store):  # noqa: F811
    import pyarrow.parquet as pq

    from queries import api
    from ui import runner_state

    sha = {r["id"]: r["program_sha256"] for r in pq.read_table(ui_store / "index.parquet").to_pylist()}
    same = [{"row_id": "train/000001", "program_sha256": sha["train/000001"]}]
    other = [{"row_id": "train/000002", "program_sha256": "0" * 64}, {"row_id": None, "program_sha256": "1" * 64}]
    assert api.mismatched_rows(ui_store, settings_now(), same) == [] and api.mismatched_rows(ui_store, settings_now(), same + other) == ["train/000002"]
    pair = [{"kind": "pair", "row_id": None, "program_sha256": None, "members": same + other}]  # a pair job's rows
    assert api.mismatched_rows(ui_store, settings_now(), pair) == ["train/000002"]

    def page() -> None:
        from types import SimpleNamespace

        from ui import runner_state

        runner_state.explain(runner_state.RunnerState("ok", foreign_rows=["train/000002"]),
                             SimpleNamespace(runner_url="http://runner:8765"))

    at = AppTest.from_function(page).run()
    assert "serves **another store**" in at.warning[0].value and "train/000002" in at.warning[0].value
    assert runner_state.RunnerState("ok").usable


def test_the_runner_names_its_store_and_another_build_is_said_before_queuing(ui_store, tmp_path):  # noqa: F811
    """`/health` names the store the service resolves rows against; an explorer showing another build says so
    before the first job (not only once jobs ran other programs)."""
    import json
    from types import SimpleNamespace

    from runner.service.client import RunnerClient
    from ui import runner_state

    build = json.loads((ui_store / "meta.json").read_text())["build_id"]
    with runner_service(ui_store, tmp_path / "runner-runs") as (url, token):
        client = RunnerClient(url, token)
        assert client.health()["store"] == {"path": str(ui_store), "build_id": build}
        cfg = SimpleNamespace(runner_url=url)
        assert not runner_state.check(cfg, ui_store, client).other_store

        class OtherBuild:
            def health(self):
                return {**client.health(), "store": {"path": "/elsewhere", "build_id": "another-build"}}

            def jobs(self, limit=50):
                return []

        state = runner_state.check(cfg, ui_store, OtherBuild())
    assert state.usable and state.other_store

    def page() -> None:
        from types import SimpleNamespace

        from ui import runner_state

        health = {"store": {"path": "/elsewhere", "build_id": "another-build"}}
        runner_state.explain(runner_state.RunnerState("ok", health=health, other_store=True),
                             SimpleNamespace(runner_url="http://runner:8765"))

    at = AppTest.from_function(page).run()
    assert "serves **another store**" in at.warning[0].value and "another-build" in at.warning[0].value


def test_the_pair_summary_says_which_side_is_faster_and_what_differs():
    from ui.rerun_pair import pair_summary

    runs = {"A": {"status": "ok", "median_ms": 2.0}, "B": {"status": "ok", "median_ms": 0.5}}
    result = {"job_id": "j1", "order": ["a", "b"], "started_at": {"a": 0.0, "b": 3.0}, "gpu": "NVIDIA H200",
              "slot": "gpu0", "profile": "kernelbench", "differences": [], "b_speedup_over_a": 4.0}
    text = pair_summary(result, runs)
    assert "**A** correct, 2 ms · **B** correct, 0\\.5 ms · **B is 4× faster than A**" in text  # md-escaped
    assert "measured in the same job, back to back on NVIDIA H200 · gpu0, profile `kernelbench`" in text
    assert "A at 00:00:00 UTC, then B at 00:00:03 UTC" in text
    slower = pair_summary(result | {"b_speedup_over_a": 0.5, "differences": ["GPU: H200 vs A100"]}, runs)
    assert "**A is 2× faster than B** (B's speedup over A: 0.5×)" in slower
    assert "one job, but not same-machine (GPU: H200 vs A100)" in slower
