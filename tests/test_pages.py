"""AppTest checks of the explorer: every page on a small, an empty and a missing store; deep links; interactions;
read-only mode; a re-run against a real runner service (CPU interpreter)."""

from __future__ import annotations

import re
import time
from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from tests.ui_services import runner_service
from tests.ui_store import XSS_MARKER, build_store
from ui import links

APP = str(Path(__file__).resolve().parent.parent / "app.py")


@pytest.fixture(scope="module")
def ui_store(tmp_path_factory) -> Path:
    return build_store(tmp_path_factory.mktemp("ui"))


@pytest.fixture(scope="module")
def empty_store(tmp_path_factory) -> Path:
    return build_store(tmp_path_factory.mktemp("ui-empty"), empty=True)


@pytest.fixture
def env(monkeypatch, tmp_path):
    """Point the app at a store; no runner reachable (a closed port) unless a test says otherwise."""

    def use(store: Path, **extra: str) -> None:
        monkeypatch.setenv("TLX_STORE", str(store))
        monkeypatch.setenv("TLX_RUNS_DIR", str(tmp_path / "runs"))
        monkeypatch.setenv("TLX_RUNNER_URL", "http://127.0.0.1:9")
        monkeypatch.delenv("TLX_RUNNER_TOKEN", raising=False)
        monkeypatch.delenv("TLX_READ_ONLY", raising=False)
        for key, value in extra.items():
            monkeypatch.setenv(key, value)

    return use


def open_page(page: str, **params: str) -> AppTest:
    at = AppTest.from_file(APP, default_timeout=30)
    for key, value in params.items():
        at.query_params[key] = value
    at.switch_page(links.page_file(page))
    return at.run()


def no_exception(at: AppTest) -> None:
    assert not at.exception, [e.value for e in at.exception]


def view_link(at: AppTest) -> str:
    """The page's "Link to this view" (`ui.links.copy_link`: an inline code span)."""
    return [m.value for m in at.main.markdown if m.value.startswith("`")][-1]  # the page's last element


def diff_text(at: AppTest) -> str:
    bodies = [h.proto.body for h in at.get("html")]
    assert bodies, "no diff shown"
    return "\n".join(bodies)


def problem_key_of(store: Path, title_start: str) -> str:
    import pyarrow.parquet as pq

    index = pq.read_table(store / "index.parquet", columns=["problem_key", "title"]).to_pylist()
    return next(r["problem_key"] for r in index if r["title"].startswith(title_start))


ROW_PARAMS = {"problem": {}, "row": {"row": "train/000000"}, "search": {"q": "tl.load"}}


@pytest.mark.parametrize("page", list(links.PAGES))
def test_every_page_runs_on_the_fixture_store(page, env, fixture_store):
    env(fixture_store)
    at = open_page(page, **ROW_PARAMS.get(page, {}))
    no_exception(at)
    assert at.title, f"page {page} shows no title"
    assert "rows" in at.sidebar.markdown[0].value  # the store banner


@pytest.mark.parametrize("page", ["overview", "row", "failures"])
@pytest.mark.parametrize("which", ["empty", "missing"])
def test_pages_explain_an_empty_or_missing_store(page, which, env, empty_store, tmp_path):
    env(empty_store if which == "empty" else tmp_path / "nowhere")
    at = open_page(page, **ROW_PARAMS.get(page, {}))
    no_exception(at)
    assert at.title[0].value == "No usable store"
    assert "python -m queries ingest" in at.code[0].value and "TLX_STORE" in at.code[0].value
    assert ("no rows" if which == "empty" else "meta.json missing") in at.error[0].value


def test_selecting_a_problem_shows_its_leaderboard(env, ui_store):
    env(ui_store)
    at = open_page("problem")
    no_exception(at)
    key = problem_key_of(ui_store, "Doubling")
    at.selectbox(key="pick_problem").set_value(key).run()
    no_exception(at)
    assert at.query_params["problem"] == key
    board = next(d.value for d in at.dataframe if "speedup_vs_median" in d.value.columns)
    assert len(board) == 4  # four distinct candidates; the copies are folded
    assert board["copies"].sum() == 9  # the Doubling rows with a label (3 test + 6 train)
    assert list(board["y"]) == sorted(board["y"])
    assert board["speedup_vs_median"].iloc[0] > 1


def test_row_link_shows_escaped_side_by_side_diff(env, ui_store):
    env(ui_store)
    at = open_page("row", row="train/000002")  # the problem whose docstring holds <script>
    no_exception(at)
    text = diff_text(at)
    plain = re.sub(r"<[^>]+>", "", text)
    assert "class Model(nn.Module)" in plain and "class ModelNew(nn.Module)" in plain
    assert "<script>window" not in text and "&lt;script&gt;window" in text
    assert XSS_MARKER in at.code[-1].value  # the whole program, as text
    assert "row=train%2F000002" in view_link(at)
    assert "Re-run this program" not in [b.label for b in at.button]  # no runner reachable
    assert "No runner service is reachable" in at.info[0].value


def test_row_neighbours_follow_the_problem_ranking(env, ui_store):
    env(ui_store)
    at = open_page("row", row="train/000003")
    no_exception(at)
    targets = {p.proto.label: p.proto.page for p in at.get("page_link")}
    assert set(targets) >= {"Problem", "Faster", "Slower"}


def test_failures_filter_by_error_type(env, ui_store):
    env(ui_store)
    at = open_page("failures")
    no_exception(at)
    at.selectbox(key="fail_error").set_value("no_model_new").run()
    no_exception(at)
    assert at.query_params["error"] == "no_model_new"
    examples = next(d.value for d in at.dataframe if "static_error" in d.value.columns)
    assert len(examples) == 6 and set(examples["static_error"]) == {"no ModelNew"}  # shown by its label (common/checks.py)
    assert "error=no_model_new" in view_link(at)


def test_failures_page_says_when_syntax_errors_are_not_marked(env, ui_store, tmp_path):
    env(ui_store)
    assert not any("check-syntax" in w.value for w in open_page("failures").warning)
    env(build_store(tmp_path, syntax_check=False))
    at = open_page("failures")
    no_exception(at)
    assert any("not marked in this store yet" in w.value and "check-syntax" in w.value for w in at.warning)


def test_search_links_rows_and_reports_bad_patterns(env, ui_store):
    env(ui_store)
    at = open_page("search", q="Negation <script>")
    no_exception(at)
    hits = next(d.value for d in at.dataframe if "snippet" in d.value.columns)
    assert len(hits) == 12 and all(h.startswith("row?row=") for h in hits["open"])
    at = open_page("search", q="(unclosed", mode="regex")
    no_exception(at)
    assert "Cannot search" in at.error[0].value


def test_sql_console_reports_errors(env, ui_store):
    env(ui_store)
    at = open_page("sql", sql="SELECT count(*) AS n FROM programs")
    no_exception(at)
    assert at.dataframe[0].value["n"].iloc[0] == 36
    at = open_page("sql", sql="DROP TABLE programs")
    no_exception(at)
    assert at.error, "a write statement must be refused with a message"


def test_read_only_mode_hides_rerun(env, ui_store):
    env(ui_store, TLX_READ_ONLY="1")
    at = open_page("row", row="train/000000")
    no_exception(at)
    assert not [s for s in at.subheader if s.value == "Re-run"]
    assert "read-only" in " ".join(c.value for c in at.sidebar.caption)


@pytest.fixture
def runner(ui_store, tmp_path):
    """A real runner service (CPU interpreter) with a token; yields (url, token, runs_dir)."""
    runs = tmp_path / "runner-runs"
    with runner_service(ui_store, runs) as (url, token):
        yield url, token, runs


def test_rerun_against_a_runner_service(env, ui_store, runner):
    url, token, runs = runner
    env(ui_store, TLX_RUNNER_URL=url, TLX_RUNNER_TOKEN=token, TLX_RUNS_DIR=str(runs))
    at = open_page("row", row="train/000001")
    no_exception(at)
    profile = at.selectbox(key="rerun_profile::train/000001")
    assert profile.options == ["kernelbench (default: torch flags, atol = rtol = 1e-2)",
                               "kernelbench-strict (fp32 1e-4, TF32 off)", "custom tolerance"]
    profile.set_value("custom").run()
    assert [n.label for n in at.number_input] == ["atol", "rtol"] and at.number_input[0].value == 0.01
    at.selectbox(key="rerun_profile::train/000001").set_value("kernelbench").run()
    assert not at.number_input
    holder = next(c for c in at.columns if any(b.key == "rerun::train/000001" for b in c.button))
    assert holder.weight >= 1 / 3 - 1e-9  # "Re-run this program" uncut at 1400 px (was 1/6: "Re-run this progr…")
    at.button(key="rerun::train/000001").click().run()
    no_exception(at)
    deadline = time.monotonic() + 90
    while not (at.success or at.error) and time.monotonic() < deadline:
        time.sleep(1.0)
        at.run()
        no_exception(at)
    verdicts = [e.value for e in [*at.success, *at.error]]
    assert verdicts, "no verdict within 90 s"
    assert "correct" in verdicts[0], verdicts  # the Doubling candidate is right
    assert "cpu-interpreter" in " ".join(c.value for c in at.caption)
    runs = open_page("runs")
    no_exception(runs)
    queue = next(d.value for d in runs.dataframe if "state" in d.value.columns)
    assert queue["row"].iloc[0] == "train/000001" and queue["submitted"].iloc[0].endswith(" UTC")
    assert "0 queued, 0 running" in " ".join(c.value for c in runs.caption)


def test_runs_page_shows_measured_results(env, fixture_store, tmp_path):
    from tests.queries_helpers import result, write_results

    env(fixture_store)
    write_results(tmp_path / "runs", [  # env() points TLX_RUNS_DIR at tmp_path / "runs"
        result("train/000000", "ok", median_ms=0.02, finished_at="2025-01-01T00:00:00Z"),
        result("train/000000", "ok", median_ms=0.03, finished_at="2025-01-02T00:00:00Z"),
        result("train/000006", "failed", "syntax_error"),
    ])
    at = open_page("runs")
    no_exception(at)
    headers = [h.value for h in at.subheader]
    assert {"Measured vs label, per row", "Agreement with the labels", "Static check vs measured verdict",
            "Reproducibility"} <= set(headers)
    agreement = next(d.value for d in at.dataframe if "agreement" in d.value.columns)
    assert agreement["rows"].sum() == 2 and agreement["label_ok_measured_ok"].sum() == 1
    frames = [d.value for d in at.dataframe]
    assert any("syntax_error" in set(df.get("measured", [])) for df in frames)  # snake_case like the other causes
    assert any(list(df.get("runs", [])) == [2] for df in frames)


def chart_data(at: AppTest, title_start: str) -> list[dict]:
    """The Plotly traces of the chart whose title starts with `title_start`."""
    import json

    for chart in at.get("plotly_chart"):
        spec = json.loads(chart.proto.spec)
        title = spec["layout"].get("title", {}).get("text", "")
        if title.startswith(title_start):
            return spec["data"]
    raise AssertionError(f"no chart titled {title_start!r}")


def test_overview_holdout_rates_count_test_rows_only(env, ui_store):
    env(ui_store)
    at = open_page("overview")
    no_exception(at)
    bars = chart_data(at, "Failure rate by holdout group")[0]
    assert len(bars["y"]) == 3  # one bar per group, not one per (split, group)
    # ui_store: 4 test rows per group, 1 of them (variant 2) without a label; train rows carry groups too
    assert dict(zip(bars["y"], bars["x"], strict=True)) == {
        "full_holdout": pytest.approx(0.25), "half_holdout": pytest.approx(0.25), "ninety_holdout": pytest.approx(0.25)}


def test_failures_count_each_row_once_and_name_no_static_finding(env, ui_store, tmp_path):
    from tests.queries_helpers import result, write_results

    env(ui_store)
    write_results(tmp_path / "runs", [result("train/000006", "failed", "compile_error")])
    at = open_page("failures")
    no_exception(at)
    counts = at.dataframe[0].value
    assert "no static finding" in set(counts["cause"]) and "ok_static" not in set(counts["cause"])
    assert counts["rows"].sum() == 9  # the 9 rows of ui_store without a label, each once
    assert ("measured on H200", "compile_error") in set(zip(counts["basis"], counts["cause"], strict=True))
    assert "python -m runner bulk --store" in at.code[0].value and "--status failed" in at.code[0].value
    at.selectbox(key="fail_source").set_value("measured").run()
    no_exception(at)
    assert set(at.dataframe[0].value["basis"]) == {"measured on H200"}
    assert at.dataframe[0].value["rows"].sum() == 1


def test_ecdf_starts_at_one_over_n_and_narrow_histograms_get_ticks():
    import numpy as np
    import pyarrow as pa

    from ui import charts

    table = pa.table({"y": [0.1010, 0.1020, 0.1030, 0.1040], "split": ["train"] * 4})
    ecdf = charts.latency_distribution(table, "ms", kind="ecdf").data[0]
    assert list(ecdf.y) == [0.25, 0.5, 0.75, 1.0] and list(ecdf.x) == [0.101, 0.102, 0.103, 0.104]
    hist = charts.latency_distribution(table, "ms", kind="histogram")
    assert len(hist.layout.xaxis.tickvals) >= 3 and len(set(hist.layout.xaxis.ticktext)) >= 3
    many = np.sort(np.random.default_rng(0).random(2000)) + 1
    x, share = charts.ecdf_points(many)
    assert share[0] == pytest.approx(1 / 2000) and share[-1] == 1.0 and x[0] == many[0] and x[-1] == many[-1]
    curve = charts.quantile_curve(pa.table({"q": [0.0, 0.5, 1.0], "y": [1.0, 2.0, 3.0]}), "ms").data[0]
    assert list(curve.y) == [0.5, 1.0]  # no point claims 0% of labels at the minimum


def test_problem_view_choice_is_in_the_link(env, ui_store):
    env(ui_store)
    key = problem_key_of(ui_store, "Doubling")
    at = open_page("problem", problem=key, view="ecdf")
    no_exception(at)
    assert at.get("button_group")[0].value == "ecdf"
    assert "view=ecdf" in view_link(at)


def test_job_table_reads_like_a_queue():
    from ui.queue import jobs_frame

    now = time.time()
    frame = jobs_frame([
        {"id": "a", "state": "running", "row_id": None, "program_sha256": "ab" * 32, "created_at": now - 5,
         "started_at": now - 3, "finished_at": None, "options": {"profile": "kernelbench"}, "result": None},
        {"id": "b", "state": "done", "row_id": "train/000001", "created_at": 0.0, "started_at": 1.0,
         "finished_at": 3.5, "result": {"status": "failed", "error_type": "compile_error",
                                        "method": {"profile": "kernelbench-strict"}}},
    ])
    assert list(frame["row"]) == ["program abababababab", "train/000001"]
    assert frame["submitted"].iloc[1] == "1970-01-01 00:00:00 UTC"
    assert frame["duration_s"].iloc[0] >= 3 and frame["duration_s"].iloc[1] == 2.5
    assert frame["verdict"].isna().iloc[0] and frame["verdict"].iloc[1] == "compile_error"
    assert list(frame["profile"]) == ["kernelbench", "kernelbench-strict"]


def test_row_page_shows_latest_verdict_and_history(env, ui_store, tmp_path):
    from tests.queries_helpers import result, write_results

    env(ui_store)
    failed = result("train/000004", "failed", "compile_error", finished_at="2025-01-02T00:00:00Z")
    failed |= {"traceback": "\n".join(f"frame {i}" for i in range(100)) + "\nCompilationError: at 3:4",
               "exception": "CompilationError", "message": "at 3:4: bad type", "system": {"gpu": "NVIDIA H200"},
               "method": {"name": "test", "profile": "kernelbench"}}
    write_results(tmp_path / "runs", [result("train/000004", "ok", median_ms=0.5, finished_at="2025-01-01T00:00:00Z"),
                                      failed])
    at = open_page("row", row="train/000004")
    no_exception(at)
    assert at.subheader[0].value == "Latest verdict"
    latest = at.error[0].value
    assert "failed: compile_error" in latest and "NVIDIA H200" in latest and "kernelbench" in latest
    assert any(c.value == "at 3:4: bad type" for c in at.code)
    trace = next(c.value for c in at.code if "CompilationError: at 3:4" in c.value)
    assert "frame 99" in trace and "frame 10\n" not in trace and "earlier lines cut" in trace
    history = next(d.value for d in at.dataframe if "finished_at" in d.value.columns)
    assert list(history["status"]) == ["failed", "ok"]


def test_row_page_says_when_its_code_shard_is_missing(env, tmp_path):
    import shutil

    store = build_store(tmp_path / "broken")
    for part in (store / "code").glob("*.parquet"):
        part.unlink()
    env(store)
    at = open_page("row", row="train/000001")
    no_exception(at)
    assert any("cannot be read from the store" in e.value and "part-" in e.value for e in at.error)
    assert at.title[0].value != "No usable store" and at.metric  # the index row still shows
    shutil.rmtree(store)


def test_diff_is_coloured_folded_and_has_a_unified_view(env, ui_store):
    from ui.code import FOLD_CONTEXT, side_by_side_html

    same = "\n".join(f"x{i} = {i}" for i in range(20))
    folded = side_by_side_html(same + "\na = 1", same + "\na = 2", "l", "r")
    assert f"⋯ {20 - 2 * FOLD_CONTEXT} unchanged lines ⋯" in folded and '<span class="c-num">' in folded
    assert "unchanged lines" not in side_by_side_html(same, same, "l", "r", fold=False)
    env(ui_store)
    at = open_page("row", row="train/000001")
    no_exception(at)
    assert 'href="#tlx-kernel-k1_0"' in diff_text(at) and 'id="tlx-kernel-k1_0"' in diff_text(at)
    at.get("button_group")[0].set_value("unified").run()
    no_exception(at)
    assert any(c.value.startswith("--- reference (Model)") for c in at.code)


def test_leaderboard_hides_candidates_without_a_triton_kernel(env, fixture_store):
    import pyarrow.parquet as pq

    env(fixture_store)
    index = pq.read_table(fixture_store / "index.parquet", columns=["id", "problem_key"]).to_pylist()
    key = next(r["problem_key"] for r in index if r["id"] == "train/000007")  # a labelled row with no kernel
    at = open_page("problem", problem=key)
    no_exception(at)
    board = next(d.value for d in at.dataframe if "verified" in d.value.columns)
    assert "train/000007" not in set(board["id"]) and list(board.columns[2:5]) == [
        "id", "speedup_vs_reference", "verified"]
    at.toggle(key="problem_no_triton").set_value(True).run()
    no_exception(at)
    board = next(d.value for d in at.dataframe if "verified" in d.value.columns)
    assert "train/000007" in set(board["id"]) and "with_no_triton=1" in view_link(at)


def test_tables_lead_with_titles_hide_hashes_and_count_in_words(env, ui_store):
    import json

    env(ui_store)
    at = open_page("problems", q="Doubling")
    no_exception(at)
    assert any(c.value.startswith("1 problem ·") for c in at.caption)
    table = next(d for d in at.dataframe if "distribution" in d.value.columns)
    assert list(table.value.columns[:2]) == ["open", "title"]
    config = json.loads(table.proto.columns)
    assert config["problem_key"]["hidden"] is True and config["failure_rate"]["label"] == "failure rate"
    at = open_page("failures")
    examples = next(d for d in at.dataframe if "static_error" in d.value.columns)
    config = json.loads(examples.proto.columns)
    assert list(examples.value.columns[:3]) == ["open", "title", "id"]
    assert (config["n_chars"]["label"], config["n_kernels"]["label"]) == ("program (chars)", "kernels")
    assert config["problem_key"]["hidden"] is True


def test_failures_page_queues_unmeasured_rows_on_the_runner(env, ui_store, runner):
    from runner.service.client import RunnerClient

    url, token, runs = runner
    env(ui_store, TLX_RUNNER_URL=url, TLX_RUNNER_TOKEN=token, TLX_RUNS_DIR=str(runs))
    at = open_page("failures", split="test", error="no_model_new")
    no_exception(at)
    assert "--split test --status failed --error-type no_model_new" in at.code[0].value
    at.button(key="fail_bulk").click().run()
    no_exception(at)
    assert "Queued 3 jobs" in at.success[0].value  # the 3 test rows without a label, never re-run
    queued = {j["row_id"] for j in RunnerClient(url, token).jobs()}
    assert queued == {"test/000006", "test/000007", "test/000008"}  # variant 2 of each problem
