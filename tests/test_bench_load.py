"""scripts/bench_load.py, the websocket load generator: its reading of ForwardMsgs, and real runs against
`streamlit run` (the explorer on a tiny store, and a script that raises)."""

from __future__ import annotations

import asyncio

import pytest
from streamlit.proto.ForwardMsg_pb2 import ForwardMsg

from scripts import bench_load
from scripts.bench_load import Outcome, RunWatch, View
from tests.ui_services import streamlit_command, streamlit_server
from tests.ui_store import build_store


def finished(status) -> bytes:
    msg = ForwardMsg()
    msg.script_finished = status
    return msg.SerializeToString()


def shown_exception(error: Exception) -> bytes:
    """The ForwardMsg Streamlit sends when a script raises (`st.exception` marshals the same element)."""
    from streamlit.elements.exception import marshall

    msg = ForwardMsg()
    marshall(msg.delta.new_element.exception, error)
    return msg.SerializeToString()


def test_a_run_ends_at_its_script_finished_but_not_at_a_restart():
    watch = RunWatch()
    watch.feed(finished(ForwardMsg.FINISHED_EARLY_FOR_RERUN))
    assert not watch.finished
    watch.feed(finished(ForwardMsg.FINISHED_SUCCESSFULLY))
    assert watch.finished and watch.problems == []


def test_an_exception_a_missing_page_and_a_compile_error_are_problems():
    watch = RunWatch()
    watch.feed(shown_exception(ZeroDivisionError("division by zero")))
    missing = ForwardMsg()
    missing.page_not_found.page_name = "nowhere"
    watch.feed(missing.SerializeToString())
    watch.feed(finished(ForwardMsg.FINISHED_WITH_COMPILE_ERROR))
    assert watch.finished
    assert watch.problems == ["exception ZeroDivisionError: division by zero", "page not found", "compile error"]


def test_summary_keeps_errored_views_out_of_the_timings():
    report = bench_load.summary([Outcome("a", 0.5, []), Outcome("a", 9.0, ["exception ValueError: x"]),
                                 Outcome("b", 1.5, [])])
    assert report["overall"] == {"count": 3, "p50_s": 1.5, "p95_s": 1.5, "max_s": 1.5, "errors": 1}
    assert report["per_page"]["a"] == {"count": 2, "p50_s": 0.5, "p95_s": 0.5, "max_s": 0.5, "errors": 1}
    assert report["error_examples"] == ["a: exception ValueError: x"]


def ws_url(base_url: str) -> str:
    return base_url.replace("http://", "ws://") + "/_stcore/stream"


@pytest.mark.slow
def test_two_sessions_of_two_pages_on_the_explorer(tmp_path):
    store = build_store(tmp_path)
    walks = bench_load.walks(store, 2, seed=3)
    assert [v.label for v in walks[0][:4]] == ["overview", "problems", "problem", "row diff"]
    env = {"TLX_STORE": str(store), "TLX_READ_ONLY": "1", "TLX_RUNNER_URL": "http://127.0.0.1:9"}
    with streamlit_server(env) as base_url:
        outcomes, seconds = asyncio.run(bench_load.drive(ws_url(base_url), walks, 2, 0.0, 60.0, seed=3))
        missing, _ = asyncio.run(bench_load.drive(ws_url(base_url), [[View("nowhere", "no-such-page")]], 1, 0.0,
                                                  60.0, seed=3))
    assert sorted(o.label for o in outcomes) == ["overview", "overview", "problems", "problems"]
    assert all(o.problems == [] and 0 < o.seconds <= seconds for o in outcomes), outcomes
    report = bench_load.summary(outcomes)
    assert report["overall"]["count"] == 4 and report["overall"]["errors"] == 0 and report["overall"]["p95_s"] > 0
    assert [o.problems for o in missing] == [["page not found"]]


@pytest.mark.slow
def test_a_page_that_raises_is_an_error(tmp_path):
    script = tmp_path / "raises.py"
    script.write_text("import streamlit as st\n\nst.title('fine so far')\n"
                      "if st.query_params.get('fail'):\n    raise KeyError('the page broke')\n")

    def command(port: int) -> list[str]:
        return [str(script) if part == "app.py" else part for part in streamlit_command(port)]

    with streamlit_server({}, command=command) as base_url:
        walk = [View("fine", ""), View("raises", "", "fail=1")]
        outcomes, _ = asyncio.run(bench_load.drive(ws_url(base_url), [walk], 2, 0.0, 60.0, seed=1))
    assert [(o.label, o.problems) for o in outcomes] == [("fine", []), ("raises", ["exception KeyError: 'the page broke'"])]


def test_the_explorer_skips_streamlits_full_collection_after_every_run():
    # `runner.postScriptGC` (on by default) holds the GIL for a full collection after each script run: most of a
    # page's time and every other session's wait under load (RELIABILITY.md, "Load figure")
    import tomllib

    from tests.ui_services import REPO

    config = tomllib.loads((REPO / ".streamlit" / "config.toml").read_text())
    assert config["runner"]["postScriptGC"] is False
