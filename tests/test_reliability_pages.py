"""Hostile input through the explorer (AppTest): SQL-ish and script-ish strings in every query parameter of every
page, and in the search box and SQL console; a store rebuilt under an open session; read-only mode writes nothing.
The real-browser check that a program holding `<script>` is shown escaped is tests/test_browser.py
(`test_program_html_is_shown_escaped`); query-layer injection checks are tests/test_queries_safety.py."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from queries.ingest import ingest
from tests.test_pages import APP, env, no_exception, open_page  # noqa: F401 - env is a fixture
from tests.ui_store import build_store
from ui import links

HOSTILE = [
    "'; DROP TABLE programs; --",
    "\" OR 1=1 --",
    "<script>window.__pwned=1</script><img src=x onerror=alert(1)>",
    "../../../../etc/passwd",
    "train/000000' UNION SELECT x FROM code --",
    "{{7*7}} ${7*7} %s %n \u202e\x00",
    "9" * 400,
]
PARAMS = ("split", "holdout", "status", "error", "source", "problem", "q", "sort", "asc", "row", "mode", "limit",
          "icase", "fastest", "fmt", "sql")


@pytest.fixture(scope="module")
def ui_store(tmp_path_factory) -> Path:
    return build_store(tmp_path_factory.mktemp("ui-hostile"))


def raw_html(at: AppTest) -> str:
    """What the page hands the browser as HTML: st.html bodies and markdown with unsafe HTML allowed (plain
    markdown is rendered with HTML escaped by Streamlit itself)."""
    parts = [m.proto.body for m in at.get("markdown") if m.proto.allow_html]
    return "\n".join(parts + [h.proto.body for h in at.get("html")])


@pytest.mark.parametrize("text", HOSTILE, ids=lambda s: s[:10])
@pytest.mark.parametrize("page", [p for p in links.PAGES if p != "sql"])
def test_hostile_query_parameters(page, text, env, ui_store):  # noqa: F811
    env(ui_store)
    at = open_page(page, **{name: text for name in PARAMS if name != "sql"})
    no_exception(at)
    assert "<script>window.__pwned" not in raw_html(at)  # shown escaped, if at all
    assert not [e for e in at.error if "Traceback" in e.value]


@pytest.mark.parametrize("text", HOSTILE, ids=lambda s: s[:10])
def test_hostile_sql_console_and_search(text, env, ui_store):  # noqa: F811
    env(ui_store)
    at = open_page("sql", sql=text)
    no_exception(at)
    assert at.error, "a statement that is not a read must be refused with a message"
    at = open_page("search", q=text, mode="regex")
    no_exception(at)
    after = open_page("sql", sql="SELECT count(*) AS n FROM programs")
    assert after.dataframe[0].value["n"].iloc[0] == 36  # nothing was dropped


def test_read_only_sql_link_waits_for_a_click(env, ui_store):  # noqa: F811
    """Issue 14 item 3: a shared `?sql=` link must not run on load in a hosted (read-only) explorer."""
    env(ui_store, TLX_READ_ONLY="1")
    statement = "SELECT count(*) AS n FROM programs"
    at = open_page("sql", sql=statement)
    no_exception(at)
    assert at.text_area(key="sql_text").value == statement
    assert not at.dataframe and not at.error
    assert "press Run" in at.info[0].value
    at.button(key="sql_run").click().run()
    no_exception(at)
    assert at.dataframe[0].value["n"].iloc[0] == 36
    at.run()  # a rerun of the page keeps the clicked statement's result
    assert at.dataframe[0].value["n"].iloc[0] == 36
    refused = open_page("sql", sql="SELECT len(range(0, 300000000))")
    assert not refused.error and not refused.dataframe  # not run until clicked
    refused.button(key="sql_run").click().run()
    assert "more memory than the console allows" in refused.error[0].value


def test_store_rebuilt_under_an_open_session(env, tmp_path):  # noqa: F811
    store = build_store(tmp_path / "first")
    env(store)
    at = open_page("row", row="train/000001")
    no_exception(at)
    problems = open_page("problems")
    no_exception(problems)
    ingest([str(tmp_path / "first" / "src" / "test.parquet")], store, progress=False,
           allow_shrink=True)  # rebuilt: test rows only (a third of the rows: said explicitly)
    at.run()
    no_exception(at)
    problems.run()
    no_exception(problems)
    assert "rows" in problems.sidebar.markdown[0].value
    for page in links.PAGES:
        no_exception(open_page(page, row="train/000001"))


def test_read_only_mode_writes_nothing_but_the_store(env, ui_store, tmp_path, monkeypatch):  # noqa: F811
    cache, runs = tmp_path / "cache", tmp_path / "runs"
    env(ui_store, TLX_READ_ONLY="1", TLX_CACHE_DIR=str(cache), TLX_RUNS_DIR=str(runs))
    for page in links.PAGES:
        at = open_page(page, row="train/000000", sql="SELECT 1 AS one", q="tl.load")
        no_exception(at)
        assert "Re-run this program" not in [b.label for b in at.button]
    written = [p for root in (cache, runs) if root.exists() for p in root.rglob("*") if p.is_file()]
    assert written == [], written
    assert not os.environ.get("TLX_STORE", "").startswith(str(cache))
