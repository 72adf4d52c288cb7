"""AppTest checks of what the checks and flags add to the pages: flag counts and the flag filter (Overview, Problem,
Failures), the level filter (Problems, Failures), the candidate toggles, legends read from common/checks.py, and
tables whose key columns fit 1400 px (1400 minus the sidebar and margins: 930 px for a table, measured in
Chromium)."""

from __future__ import annotations

import json

import pytest

from common.checks import meaning
from tests.test_honest_board import ROWS, board  # noqa: F401  (the module fixture: a store with flagged rows)
from tests.test_pages import env, no_exception, open_page, view_link  # noqa: F401
from ui import board as board_ui

WIDTHS = {"small": 75, "medium": 200, "large": 400}
TABLE_PX = 930
SELECT_PX = 35  # the row-selection column of a selectable table


def shown_px(frame, through: list[str]) -> int:
    """Pixels of the visible columns from the left up to the last of `through` (plus the selection column of a
    selectable table); a column without a width counts as wide as a medium one."""
    config = json.loads(frame.proto.columns)
    columns = [c for c in frame.value.columns if not config.get(c, {}).get("hidden")]
    last = max(columns.index(c) for c in through)
    widths = [config.get(c, {}).get("width") for c in columns[: last + 1]]
    select = SELECT_PX if frame.proto.selection_mode else 0
    return select + sum(w if isinstance(w, int) else WIDTHS.get(w, WIDTHS["medium"]) for w in widths)


def frame_with(at, column: str):
    return next(d for d in at.dataframe if column in d.value.columns)


def table_with(at, column: str):
    """The first static table (st.table: wrapped text) with `column`, as a frame."""
    return next(t.value for t in at.table if column in t.value.columns)


@pytest.fixture
def flagged(env, board, tmp_path):  # noqa: F811
    import os

    env(board, TLX_RUNS_DIR=os.environ["TLX_RUNS_DIR"])
    return board


def test_problems_table_fits_and_filters_by_level(env, fixture_store):  # noqa: F811
    env(fixture_store)
    at = open_page("problems")
    no_exception(at)
    table = frame_with(at, "y_min")
    assert shown_px(table, ["y_min", "y_median", "spread"]) <= TABLE_PX
    at = open_page("problems", level="2")
    no_exception(at)
    assert set(frame_with(at, "y_min").value["problem_id"]) == {"2_5"} and at.query_params["level"] == "2"


def test_failures_level_and_flag_filters_and_share_fits(env, fixture_store):  # noqa: F811
    env(fixture_store)
    at = open_page("failures")
    no_exception(at)
    counts = frame_with(at, "share")
    holder = next(c for c in at.columns if any("share" in d.value.columns for d in c.dataframe))
    assert holder.weight >= 0.6 - 1e-9  # the table has 3/5 of the page, the chart the rest
    assert shown_px(counts, ["share"]) <= holder.weight * TABLE_PX - 16
    at.selectbox(key="fail_level").set_value("1").run()
    no_exception(at)
    examples = frame_with(at, "measured_message").value
    assert len(examples) and set(examples["problem_id"]) <= {"1_19", "1_1"}
    at = open_page("failures", flag="no_triton_launch")
    no_exception(at)
    assert any("No failures match" in i.value for i in at.info)


def test_overview_counts_flags_with_their_meaning_and_filters(flagged):
    at = open_page("overview")
    no_exception(at)
    flags = table_with(at, "meaning")
    assert dict(zip(flags["code"], flags["rows"], strict=True))["no_triton_launch"] == "1"
    assert set(flags["meaning"]) >= {meaning("kernel_never_called").split(" Excluded")[0]}
    at.selectbox(key="overview_flag").set_value("precision_downcast").run()
    no_exception(at)
    assert at.query_params["flag"] == "precision_downcast"
    assert any(m.label == "programs" and m.value == "1" for m in at.metric)


def test_problem_page_ranks_honest_candidates_and_says_where_references_differ(flagged):
    import pyarrow.parquet as pq

    key = pq.read_table(flagged / "index.parquet", columns=["problem_key"])["problem_key"][0].as_py()
    at = open_page("problem", problem=key)
    no_exception(at)
    fastest = next(m for m in at.metric if m.label.startswith("fastest"))
    assert fastest.value == f"{ROWS[5][1]:.4g}"  # the fastest honest row, not the flagged 0.001 / 0.002 ones
    ranked = frame_with(at, "verified")
    assert list(ranked.value["id"]) == ["train/000005", "train/000000", "train/000001"]
    assert shown_px(ranked, ["speedup_vs_reference", "kernel_names"]) <= TABLE_PX
    assert list(ranked.value["triton_share_text"]) == ["—", "90%", "not checked"]
    assert any("2 different runs" in w.value for w in at.warning)
    assert any(m.label == "ranked" for m in at.metric)
    flags = table_with(at, "meaning")
    assert "precision_downcast" in set(flags["code"])
    at.toggle(key="problem_flagged").set_value(True).run()
    no_exception(at)
    assert frame_with(at, "verified").value["id"].iloc[0] == "train/000002"
    assert "with_flagged=1" in view_link(at)


def test_kernel_page_explains_static_and_run_flags(flagged):
    at = open_page("row", row="train/000004")
    no_exception(at)
    legends = [t.value for t in at.table if "meaning" in t.value.columns and "code" in t.value.columns]
    codes = {c for frame in legends for c in frame["code"]}
    assert {"no_triton_launch", "state_loaded:2/2"} <= codes
    text = next(frame for frame in legends if "state_loaded:2/2" in set(frame["code"]))
    row = text[text["code"] == "state_loaded:2/2"].iloc[0]
    assert row["flag"] == "reference state loaded (2/2)" and row["meaning"] == meaning("state_loaded")
    # labels without values in the (markdown) warning; the values are in the plain-text legend
    assert any(w.value == "Flags: no Triton kernel ran, reference state loaded, reference: launch-bound"
               for w in at.warning)
    median = next(m for m in at.metric if m.label == "ModelNew median")
    assert "±" not in median.value  # the spread goes to the notes: the metric box cuts long text
    at = open_page("row", row="train/000005")
    no_exception(at)
    assert any("fp16/bf16 downcast" in c.value for c in at.caption)


def test_leaderboard_flags_text_marks_unchecked_rows():
    assert board_ui.row_flags_text(["launch_bound"], True) == "launch-bound · static checks: not checked"


def test_failures_explain_static_causes(env, fixture_store):  # noqa: F811
    env(fixture_store)
    at = open_page("failures")
    no_exception(at)
    legend = table_with(at, "code")
    assert "no_model_new" in set(legend["code"])
    assert legend.loc[legend["code"] == "no_model_new", "meaning"].iloc[0] == meaning("no_model_new")


def test_export_fastest_correct_uses_the_candidate_filter(flagged):
    at = open_page("export", fastest="1", fmt="jsonl")
    no_exception(at)
    assert {"export_no_triton", "export_flagged"} <= {t.key for t in at.toggle}
    at.button(key="export_prepare").click().run()
    no_exception(at)
    assert at.get("download_button")  # built from api.export(..., c=Candidates()): tests/test_honest_board.py
    at.toggle(key="export_flagged").set_value(True).run()
    no_exception(at)
    assert "with_flagged=1" in view_link(at)
