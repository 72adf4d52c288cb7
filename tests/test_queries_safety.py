"""Code search, hostile input through every filter and the search box, the SQL console's refusals, bad stores."""

from __future__ import annotations

import json
import re

import pytest

from queries import api
from queries.filters import Filters
from queries.store import SCHEMA_VERSION, Store
from tests.fixtures import TEST, TRAIN

HOSTILE = [
    "'; DROP TABLE programs; --",
    '" OR 1=1 --',
    "' OR ''='",
    "%",
    "_",
    "relu%",
    "$f_split",
    "ümlaut ✓ 日本語 🚀",
    "x" * 10_000,
    "nul\x00byte",
]
FILTER_FIELDS = ("split", "holdout_group", "problem_key", "error_type")


pytestmark = pytest.mark.usefixtures("empty_runs")

@pytest.fixture(scope="module")
def programs(fixture_store) -> dict[str, str]:
    store = Store(fixture_store)
    ids = [f"train/{i:06d}" for i in range(len(TRAIN))] + [f"test/{i:06d}" for i in range(len(TEST))]
    return {i: store.program(i) for i in ids}


def test_search_substring_regex_limits(fixture_store, programs):
    found = api.search_code(fixture_store, "relu_k")
    assert sorted(found.rows["id"].to_pylist()) == sorted(i for i, x in programs.items() if "relu_k" in x)
    assert found.complete and found.rows_scanned == len(programs)
    blocks = api.search_code(fixture_store, r"BLOCK=(256|512)\)", regex=True)
    expected = [i for i, x in programs.items() if re.search(r"BLOCK=(256|512)\)", x)]
    assert sorted(blocks.rows["id"].to_pylist()) == sorted(expected) and len(expected) == 10
    limited = api.search_code(fixture_store, "def ", limit=3)
    assert limited.rows.num_rows == 3 and not limited.complete
    in_test = api.search_code(fixture_store, "relu_k", f=Filters(split="test"))
    assert in_test.rows["id"].to_pylist() == ["test/000000", "test/000001"]
    assert api.search_code(fixture_store, "RELU_K", ignore_case=True).rows.num_rows == found.rows.num_rows
    assert not api.search_code(fixture_store, "relu_k", time_budget_s=0).complete


def test_search_snippets_are_escaped(fixture_store):
    rows = api.search_code(fixture_store, "offs < n").rows.to_pylist()
    assert rows and all(r["snippet_html"].count("<") == 2 for r in rows)  # only <mark> and </mark>
    assert all("<mark>offs &lt; n</mark>" in r["snippet_html"] for r in rows)
    assert all(r["line"] > 1 and "offs < n" in r["snippet"] for r in rows)


def test_search_rejects_bad_patterns(fixture_store):
    with pytest.raises(api.SearchError, match="invalid regular expression"):
        api.search_code(fixture_store, "mm_k[(", regex=True)
    with pytest.raises(api.SearchError, match="non-empty"):
        api.search_code(fixture_store, "")


@pytest.mark.parametrize("text", HOSTILE, ids=lambda s: s[:12])
def test_hostile_strings_everywhere(fixture_store, programs, text):
    for field in FILTER_FIELDS:
        f = Filters(**{field: text})
        assert api.overview(fixture_store, f).totals["rows"] == 0
        assert api.problems(fixture_store, f).num_rows == 0
        assert api.failures(fixture_store, f).num_rows == 0
        assert api.failure_examples(fixture_store, f).num_rows == 0
        assert api.export(fixture_store, f, fmt="jsonl") == b""
        assert api.search_code(fixture_store, "def", f=f).rows.num_rows == 0
    assert api.problem_latencies(fixture_store, text).num_rows == 0
    assert api.fastest(fixture_store, text).num_rows == 0
    assert api.problem_summary(fixture_store, text) is None
    assert api.row(fixture_store, text) is None
    found = api.search_code(fixture_store, text, limit=1000)
    assert sorted(found.rows["id"].to_pylist()) == sorted(i for i, x in programs.items() if text in x)
    try:
        api.search_code(fixture_store, text, regex=True)
    except api.SearchError:
        pass
    assert api.overview(fixture_store).totals["rows"] == len(TRAIN) + len(TEST)  # nothing was dropped


def test_console_reads(fixture_store):
    table = api.console(fixture_store, "SELECT split, count(*) AS n FROM programs GROUP BY split ORDER BY split;")
    assert table.to_pylist() == [{"split": "test", "n": len(TEST)}, {"split": "train", "n": len(TRAIN)}]
    assert "problem_key" in api.console(fixture_store, "DESCRIBE programs")["column_name"].to_pylist()
    assert {"programs", "runs"} <= set(api.console(fixture_store, "SHOW TABLES")["name"].to_pylist())
    assert api.console(fixture_store, "SUMMARIZE programs").num_rows > 5
    assert api.console(fixture_store, "EXPLAIN SELECT * FROM programs").num_rows >= 1
    assert api.console(fixture_store, "WITH t AS (SELECT 1 AS a) SELECT a FROM t -- done").to_pylist() == [{"a": 1}]
    assert api.console(fixture_store, "SELECT ';' AS s, 'read_csv(' AS t").num_rows == 1


@pytest.mark.parametrize("sql, reason", [
    ("DROP TABLE programs", "not allowed"),
    ("DELETE FROM programs", "not allowed"),
    ("INSERT INTO programs SELECT * FROM programs", "not allowed"),
    ("UPDATE programs SET y = 0", "not allowed"),
    ("CREATE TABLE t AS SELECT 1", "not allowed"),
    ("/* x */ EXPLAIN ANALYZE DELETE FROM programs", "EXPLAIN is allowed only"),
    ("SELECT * FROM read_csv('/etc/passwd')", "read_csv"),
    ("SELECT * FROM read_parquet('index.parquet')", "read_parquet"),
    ("SELECT * FROM glob('/*')", "glob"),
    ("SELECT * FROM '/etc/passwd'", "does not exist"),
    ("SELECT * FROM query_table('/etc/passwd')", "does not exist"),
    ("ATTACH '/tmp/x.db' AS x", "ATTACH"),
    ("COPY programs TO '/tmp/out.csv'", "COPY"),
    ("INSTALL httpfs", "INSTALL"),
    ("LOAD httpfs", "INSTALL and LOAD"),
    ("SET threads = 64", "SET"),
    ("RESET memory_limit", "SET"),
    ("PRAGMA database_list", "PRAGMA"),
    ("CALL pragma_version()", "CALL"),
    ("SELECT 1; DROP TABLE programs", "one statement at a time"),
    ("SELECT 1; SELECT 2", "one statement at a time"),
    ("SELEC 1", "cannot parse"),
    ("PIVOT programs ON split USING count(*)", "wrap it"),
    ("", "enter a SQL statement"),
    ("SELECT * FROM range(5000)", "more than 1000 rows"),
    ("SELECT count(*) FROM range(100000000000) t(i) WHERE i % 7 = 3", "time limit"),
])
def test_console_refusals(fixture_store, sql, reason):
    with pytest.raises(api.ConsoleError, match=re.escape(reason)):
        api.console(fixture_store, sql, timeout_s=0.3)
    assert api.console(fixture_store, "SELECT count(*) AS n FROM programs").to_pylist() == [
        {"n": len(TRAIN) + len(TEST)}]


def test_bad_stores_raise_store_error(tmp_path):
    with pytest.raises(api.StoreError, match="no store here"):
        api.overview(tmp_path / "missing")
    (tmp_path / "empty").mkdir()
    with pytest.raises(api.StoreError, match="no store here"):
        api.problems(tmp_path / "empty")
    broken = tmp_path / "broken"
    broken.mkdir()
    (broken / "meta.json").write_text("{not json")
    with pytest.raises(api.StoreError, match="meta.json"):
        api.overview(broken)
    bad_index = tmp_path / "bad-index"
    bad_index.mkdir()
    (bad_index / "meta.json").write_text(json.dumps({"schema_version": SCHEMA_VERSION}))
    (bad_index / "index.parquet").write_bytes(b"not parquet at all")
    with pytest.raises(api.StoreError, match="index.parquet"):
        api.overview(bad_index)
