"""AppTest and unit checks of issue 46 (a newcomer's list): the Kernel page's tabs following clicks after the
first switch, static findings that say what they found, Compare's timing rows first, Problems sorted
by fastest label and best measured speedup, charts whose category names and legend fit, the runner's line as
fresh as its job, `make run`'s port, a timeout verdict naming its GPU. The browser side (text visible at 1000 and
1400 px, tabs clicked): tests/test_browser_newcomer.py."""

from __future__ import annotations

import os
import socket
import time
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from tests.queries_helpers import result, write_results
from tests.test_pages import env, no_exception, open_page  # noqa: F401  (fixtures)
from tests.ui_services import runner_service
from tests.ui_store import program

SYNTAX_LINE = "_strides = dict(stride=1, stride=2)\n"  # parses, but Python will not compile it


@pytest.fixture(scope="module")
def newcomer_store(tmp_path_factory) -> Path:
    """Rows: 0 plain; 1 imports einops at top level and has a label; 2 repeats a keyword argument (no label);
    3-5 more plain candidates of problem 0 (labels), for the leaderboard and best speedups."""
    tmp = tmp_path_factory.mktemp("newcomer")
    src = tmp / "src"
    src.mkdir()
    xs = [program(0, 0), "import einops\n" + program(0, 1), program(1, 0) + SYNTAX_LINE,
          program(0, 2), program(0, 3), program(1, 1)]
    ys = [0.5, 0.05, None, 0.2, 0.1, 0.3]
    pq.write_table(pa.table({"x": xs, "y": pa.array(ys, pa.float64())}), src / "train.parquet")
    from queries.ingest import ingest

    store = tmp / "store"
    ingest([str(src)], store, progress=False, workers=1)
    return store


def test_row_tabs_follow_clicks_after_the_first_switch(env, newcomer_store):  # noqa: F811
    env(newcomer_store)
    at = open_page("row", row="train/000000")
    no_exception(at)
    labels = {name: label for name, label in zip(("diff", "kernels", "program"), [t.label for t in at.tabs],
                                                 strict=False)}
    for name in ("kernels", "program", "diff", "program"):  # the old page stuck after the first switch
        at.session_state["row_tab"] = labels[name]
        at.run()
        no_exception(at)
        assert at.query_params.get("tab", "diff") == name
        assert at.session_state["row_tab"] == labels[name]
    at.query_params["tab"] = "kernels"  # a link to the same row: the URL wins over the last click
    at.run()
    assert at.session_state["row_tab"] == labels["kernels"]


def test_unavailable_import_names_the_package_and_why_a_label_exists(env, newcomer_store):  # noqa: F811
    env(newcomer_store)
    at = open_page("row", row="train/000001")
    no_exception(at)
    captions = " ".join(c.value for c in at.caption)
    assert "imports a package the runner lacks" in captions
    assert "`einops`" in captions and "labels were measured where this package was installed" in captions


def test_syntax_error_shows_pythons_message_and_line(env, newcomer_store):  # noqa: F811
    env(newcomer_store)
    at = open_page("row", row="train/000002")
    no_exception(at)
    captions = " ".join(c.value for c in at.caption)
    line = program(1, 0).count("\n") + 1
    assert "**syntax_error**" in captions  # snake_case, like the measured causes
    assert f"`keyword argument repeated: stride` (line {line})" in captions


def test_findings_module_matches_the_text_rule():
    from common.program.findings import compile_error, unavailable_imports

    assert unavailable_imports("import einops\nimport torch\nfrom flash_attn.x import y\nimport einops.layers\n"
                               "def f():\n    import scipy\n") == ["einops", "flash_attn"]
    assert compile_error("import torch\n") is None
    error = compile_error("x = 1\n" + SYNTAX_LINE)
    assert (error.message, error.line, error.exception) == ("keyword argument repeated: stride", 2, "SyntaxError")


@pytest.fixture
def measured(env, newcomer_store, tmp_path):  # noqa: F811
    """Re-runs of three problem-0 rows: speedups 1.5 (row 3), 4.0 (row 4, the best) and a failed one (row 0)."""
    env(newcomer_store)
    runs = []
    for row_id, status, speedup in (("train/000003", "ok", 1.5), ("train/000004", "ok", 4.0),
                                    ("train/000000", "failed", 9.0)):
        r = result(row_id, status, None if status == "ok" else "runtime_error", median_ms=0.1)
        runs.append(r | {"speedup": speedup})
    write_results(tmp_path / "runs", runs)
    return newcomer_store


def test_problems_sort_by_fastest_label_and_best_speedup(measured):
    at = open_page("problems", sort="best measured speedup")
    no_exception(at)
    table = next(d.value for d in at.dataframe if "best_speedup" in d.value.columns)
    assert list(table["best_speedup"].fillna(-1)) == [4.0, -1]  # the failed re-run's 9.0 does not count
    at = open_page("problems", sort="fastest label", asc="1")
    no_exception(at)
    table = next(d.value for d in at.dataframe if "y_min" in d.value.columns)
    assert list(table["y_min"]) == sorted(table["y_min"]) and table["y_min"].iloc[0] == pytest.approx(0.05)


def test_compare_shows_its_timing_rows_first_and_whole(measured):
    at = open_page("compare", a="train/000003", b="train/000004")
    no_exception(at)
    facts = next(d for d in at.dataframe if "A" in d.value.columns)
    names = list(facts.value[""])
    for name in ("GPU / device", "ModelNew median", "Model (eager) median", "speedup vs reference"):
        assert names.index(name) < 8, names  # first, where the old table put them below its scroll box's fold
    assert set(facts.value["B"]) >= {"4×"}


def test_failure_chart_keeps_whole_category_names_and_its_legend_off_the_bars():
    from ui import charts

    fig = charts.count_bars(["runtime_error", "compile_error"], [5, 3], "Failed rows by cause", ["measured", "static"])
    assert fig.layout.yaxis.automargin is True
    assert fig.layout.legend.orientation == "h" and fig.layout.legend.y >= 1  # above the plot area
    assert fig.layout.margin.t >= 60  # room for the title and the legend's row
    assert charts.rate_bars(["full_holdout"], [0.5], [10], "t").layout.yaxis.automargin is True


def test_runner_line_is_as_fresh_as_the_job(env, newcomer_store, tmp_path):  # noqa: F811
    with runner_service(newcomer_store, tmp_path / "runner-runs") as (url, token):
        _check_runner_line(env, newcomer_store, url, token, tmp_path / "runner-runs")


def _check_runner_line(env, newcomer_store, url, token, runs):  # noqa: F811
    env(newcomer_store, TLX_RUNNER_URL=url, TLX_RUNNER_TOKEN=token, TLX_RUNS_DIR=str(runs))
    at = open_page("row", row="train/000000")
    no_exception(at)
    at.button(key="rerun::train/000000").click().run()
    no_exception(at)
    deadline = time.monotonic() + 90
    checked = 0
    while time.monotonic() < deadline:
        pending = [s for s in at.status if " is queued" in s.label or " is running" in s.label]
        if not pending:
            break
        runner_lines = [c.value for c in at.caption if c.value.startswith("Runner at")]
        assert len(runner_lines) == 1 and "0 queued, 0 running" not in runner_lines[0], runner_lines
        checked += 1
        time.sleep(0.5)
        at.run()
    assert checked, "the job finished before the page could be checked"
    while not (at.success or at.error) and time.monotonic() < deadline:
        time.sleep(0.5)
        at.run()
    first = [e.value for e in [*at.success, *at.error]]
    assert first and "failed: unknown" not in first[0], first
    again = open_page("row", row="train/000000")  # another session: the runner answers with the finished job
    again.button(key="rerun::train/000000").click().run()
    no_exception(again)
    verdicts = [e.value for e in [*again.success, *again.error]]
    assert verdicts and verdicts[0].split("\n")[0] == first[0].split("\n")[0], (verdicts, first)


def test_make_run_prints_the_port_it_serves(monkeypatch, capsys, tmp_path):
    import serve_local

    busy = socket.socket()
    busy.bind(("", 0))
    busy.listen()
    taken = busy.getsockname()[1]
    try:
        assert serve_local.explorer_port({}, first=taken) > taken
        assert serve_local.explorer_port({"STREAMLIT_SERVER_PORT": "9123"}) == 9123
    finally:
        busy.close()
    calls = []
    monkeypatch.setattr(serve_local.subprocess, "call", lambda args, **kw: calls.append(args) or 0)
    monkeypatch.setenv("TLX_READ_ONLY", "1")
    monkeypatch.setenv("TLX_STORE", str(tmp_path))
    monkeypatch.delenv("STREAMLIT_SERVER_PORT", raising=False)
    assert serve_local.main() == 0
    port = calls[0][calls[0].index("--server.port") + 1]
    assert f"serving http://localhost:{port}\n" in capsys.readouterr().out


def test_a_gpu_verdict_without_the_childs_system_names_its_gpu(monkeypatch, tmp_path):
    from runner.child import system

    smi = tmp_path / "nvidia-smi"
    smi.write_text("#!/bin/sh\necho 'NVIDIA H200, 570.1, 1980, 2619, 1980, 2619, 40, 120.5, P0, Enabled'\n")
    smi.chmod(0o755)
    monkeypatch.setenv("PATH", f"{tmp_path}{os.pathsep}{os.environ['PATH']}")
    info = system.collect_system(probe_gpu=False, gpu_id="0")
    assert info["gpu"] == "NVIDIA H200" and info["driver"] == "570.1"
    assert "gpu" not in system.collect_system(probe_gpu=False)  # a CPU job names none


def test_pages_without_code_load_no_code_box(env, newcomer_store):  # noqa: F811
    """The link to the view is an inline code span: a `st.code` box on every page loaded Streamlit's syntax
    highlighter on each direct link (BENCHMARKS.md, "Direct links")."""
    from tests.test_pages import view_link

    env(newcomer_store)
    for page in ("overview", "problems"):
        at = open_page(page)
        no_exception(at)
        assert not at.code, page
        assert view_link(at).startswith("`" + ("./" if page == "overview" else page))
