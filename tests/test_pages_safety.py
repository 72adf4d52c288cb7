"""Hostile input to the pages (issue 27): SQL results pandas cannot hold, a 60 MB result, and Markdown injection
through the URL and the data. The browser test (`test_browser_workbench.py`) checks the rendered page."""

from __future__ import annotations

import re

import pytest

from tests.test_pages import env, no_exception, open_page, ui_store  # noqa: F401  (fixtures)
from ui.text import md, md_code

HOSTILE = "x` [phish](https://example.com/login) ![pix](https://example.com/p.png) <b>b</b> $x$ :red[r] `y"


def test_md_escapes_what_markdown_would_act_on():
    escaped = md(HOSTILE + "\n# heading\n> quote\n1. item\nsee www.example.com or a@example.com, _x_ or *y*")
    for match in re.finditer(r"[`*\[\]<>$~@|]", escaped):  # never bare: links, images, code, emphasis, math, HTML
        assert escaped[match.start() - 1] == "\\", (match.group(), escaped[: match.start() + 1])
    lines = escaped.split("  \n")
    assert [line[:3] for line in lines[1:4]] == ["\\# ", "\\> ", "1\\."]  # no heading, quote or list
    assert "https\\://example" in escaped and "www\\.example" in escaped  # no bare-URL autolinks
    assert "\\_x\\_" in lines[4] and md("compile_error at 2025-01-02T00:00:00Z") == "compile_error at 2025-01-02T00:00:00Z"


def test_md_code_fences_past_any_backtick_run():
    for value in (HOSTILE, "a``b", "`", "```x```", ""):
        span = md_code(value)
        fence = re.match(r"`+", span).group()
        assert span.endswith(fence) and max(map(len, re.findall(r"`+", value)), default=0) < len(fence)
        inner = span[len(fence):-len(fence)]
        assert inner.strip(" ") == value.strip(" ") or inner == f" {value} "


def _markdown(at) -> str:
    return "\n".join(e.value for kind in ("title", "error", "caption", "markdown") for e in getattr(at, kind))


@pytest.mark.parametrize("page, param", [("problem", "problem"), ("row", "row")])
def test_url_values_are_shown_as_code_not_markdown(page, param, env, ui_store):  # noqa: F811
    env(ui_store)
    at = open_page(page, **{param: HOSTILE})
    no_exception(at)
    assert any(md_code(HOSTILE) in e.value for e in at.error)
    outside_code = re.sub(r"(`+).*?\1", "", _markdown(at))
    assert "](" not in outside_code and "<b>" not in outside_code


def test_data_titles_are_escaped(env, ui_store):  # noqa: F811
    env(ui_store)
    at = open_page("row", row="train/000002")  # the problem whose title holds <script> and <b>
    no_exception(at)
    assert at.title[0].value.startswith("Negation \\<script\\>")


@pytest.mark.parametrize("sql", ["SELECT union_value(a := 1) AS u", "SELECT 'infinity'::DATE AS d",
                                 "SELECT * FROM test_all_types()"])
def test_sql_results_pandas_cannot_hold_are_shown_as_text(sql, env, ui_store):  # noqa: F811
    env(ui_store)
    at = open_page("sql", sql=sql)
    no_exception(at)
    assert not at.error and len(at.dataframe) == 1
    assert any("shown as text" in c.value for c in at.caption)
    assert at.get("download_button"), "the whole result is offered as a download"


def test_a_60_mb_result_shows_a_bounded_preview_and_a_download(env, ui_store):  # noqa: F811
    from ui.tables import CELL_CHARS

    env(ui_store)
    at = open_page("sql", sql="SELECT repeat('a', 60000000) AS s")
    no_exception(at)
    cell = at.dataframe[0].value["s"].iloc[0]
    assert len(cell) <= CELL_CHARS + 10 and cell.endswith("(cut)")
    assert any("1 cell cut" in c.value for c in at.caption)
    assert at.get("download_button")


def test_chart_labels_from_the_data_are_not_plotly_markup():
    from ui import charts

    link = "<a href='https://example.com'>group</a>"
    assert charts.rate_bars([link], [0.5], [2], "t").data[0].y == ("&lt;a href=&#x27;https://example.com&#x27;&gt;"
                                                                  "group&lt;/a&gt;",)
    assert "<a" not in charts.count_bars([link], [3], "t").data[0].y[0]
