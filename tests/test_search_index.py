"""The code search index answers exactly what a full scan of every program finds.

Stores: the fixture store, and one ingested from `../shared/data/realworld/` (real programs) with small code
shards and row groups, so that posting lists span several shards. The reference answer is Arrow's own match
over every program text, read straight from the code shards.
"""

from __future__ import annotations

import random
import re
import shutil
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest

from queries import api
from queries.search.engine import NO_INDEX_NOTE
from queries.search.regex import LineRule, line_rule, required_literals
from queries.search.rewrite import line_patterns
from queries.store import SEARCH_DIR, SEARCH_INDEX_VERSION, Store
from tests.queries_helpers import settings_now

REALWORLD = Path(__file__).resolve().parents[2] / "shared" / "data" / "realworld"
LIMIT = 200

pytestmark = pytest.mark.usefixtures("empty_runs")


@pytest.fixture(scope="module")
def realworld_store(tmp_path_factory) -> Path:
    if not (REALWORLD / "train.parquet").is_file():
        pytest.skip(f"{REALWORLD} not present")
    from queries.ingest import ingest

    store = tmp_path_factory.mktemp("realworld") / "store"
    ingest([str(REALWORLD)], store, progress=False, workers=2, code_rows_per_group=16, rows_per_shard=512,
           syntax_check=False)
    return store


def _programs(store: Path) -> tuple[pa.Array, pa.Array, list[int]]:
    """(ids, texts, reference length of each) of every row, in id order."""
    table = pa.concat_tables(pq.read_table(p, columns=["id", "x"]) for p in Store(store).code_paths)
    table = table.take(pc.sort_indices(table["id"]))
    refs = Store(store).read_index(["id", "ref_chars"])
    ref_chars = dict(zip(refs["id"].to_pylist(), refs["ref_chars"].to_pylist(), strict=True))
    return table["id"].combine_chunks(), table["x"].combine_chunks(), [ref_chars[i] for i in table["id"].to_pylist()]


def _expected(ids: pa.Array, texts: pa.Array, pattern: str, regex: bool, ignore_case: bool) -> list[str]:
    if regex:
        hit = pc.match_substring_regex(texts, ("(?i)" if ignore_case else "") + pattern)
    else:
        hit = pc.match_substring(texts, pattern, ignore_case=ignore_case)
    return ids.filter(hit).to_pylist()


def _patterns(texts: list[str], ref_chars: list[int], count: int, seed: int) -> list[str]:
    """Random substrings of programs (some across the cut between reference and candidate), absent strings,
    Unicode, and 1-2 character patterns."""
    rng = random.Random(seed)
    found = []
    for _ in range(count):
        x = rng.choice(texts)
        length = rng.choice([1, 2, 3, 4, 6, 9, 14, 25, 60, 300])
        start = rng.randrange(max(1, len(x) - length))
        found.append(x[start : start + length])
    for x, cut in rng.sample(list(zip(texts, ref_chars, strict=True)), min(30, len(texts))):  # across the cut
        found.append(x[max(0, cut - rng.randrange(1, 40)) : cut + rng.randrange(1, 40)])
        found.append(x[max(0, cut - 1500) : cut + 20])  # longer than the index's overlap before the cut
    non_ascii = sorted({ch for x in texts for ch in x if ord(ch) > 127})
    found += non_ascii[:20] + ["ümlaut ✓", "日本語", "🚀 kernel", "\u212aernel", "\u017ftride"]
    found += ["no such text anywhere 1234", "tl.load(qqq", "__zz__", "\x00", "x" * 5000, "Model", "tl.", "()", "\n",
              "\n\n", "):\n    "]
    return [p for p in dict.fromkeys(found) if p]


def _check(store: Path, ids, texts, pattern: str, regex: bool = False, ignore_case: bool = False) -> None:
    result = api.search_code(store, settings_now(), pattern, regex=regex, ignore_case=ignore_case, limit=LIMIT)
    expected = _expected(ids, texts, pattern, regex, ignore_case)
    got = result.rows["id"].to_pylist()
    context = f"pattern {pattern[:60]!r} regex={regex} ignore_case={ignore_case} ({result.method})"
    assert result.complete, context
    assert result.total == len(expected), context
    assert got == expected[:LIMIT], context
    assert result.method != "index" or result.rows_scanned == 0, context  # the index alone read no program


@pytest.mark.parametrize("seed", [1, 2])
def test_literals_equal_a_full_scan_on_real_programs(realworld_store, seed):
    ids, texts, ref_chars = _programs(realworld_store)
    patterns = _patterns(texts.to_pylist(), ref_chars, 120, seed)
    assert len(patterns) > 150
    methods = set()
    for pattern in patterns:
        _check(realworld_store, ids, texts, pattern)
        _check(realworld_store, ids, texts, pattern.swapcase() if seed == 1 else pattern.upper(), ignore_case=True)
        methods.add(api.search_code(realworld_store, settings_now(), pattern, limit=1).method)
    assert {"index", "index + verify", "scan"} <= methods  # every way of answering was taken


def test_regexes_equal_a_full_scan_on_real_programs(realworld_store):
    ids, texts, ref_chars = _programs(realworld_store)
    rng = random.Random(3)
    words = _patterns(texts.to_pylist(), ref_chars, 60, 3)
    regexes = [rf"{re.escape(a)}.*{re.escape(b)}" for a, b in zip(words[::2], words[1::2], strict=False)]
    regexes += [r"tl\.dot\(.*allow_tf32", r"BLOCK_SIZE\s*=\s*\d+", r"(?i)triton\.JIT", r"def (forward|__init__)",
                r"[[:upper:]]odel", r"x{2,}yy", r"\bgrid\b", r"a(bc)+d", r"tl\.(load|store)\(", r"\d{5}",
                r"^import", r"(?m)^class \w+", r"\)$", r"(?s)def forward.*tl\.load", r"mask[^=]*=", r"\n\n\n",
                r"return\s+\w+\s*\n\s*\n\s*def", r"\Bel\b", r"z*", r"[\x00-\x20]{3}", r"(?i)K\w+L",
                r"num_warps\s*=\s*\d+", r"BLOCK_SIZE_[MNK]\s*:\s*tl\.constexpr", r"eviction_policy\s*=\s*.evict_",
                r"\)\s*:\s*return", r"def\s+forward\(\s*self", r"(mask|other)\s*=\s*\w", r"[^\w\s]\s+import",
                r"(?s)\(\s*x.{0,40}\)", r"tl\.load\([^)]*\)", r"\bgrid\s*\W\s*\(", r"a{,2}b", r"\s+\b(?i:TL)\.",
                r"=\D{1,3}\n\s+\w+", r"(?s:.)\s*\n\s*\)", r"\S\s\S\s\S"]
    methods = set()
    for pattern in regexes:
        _check(realworld_store, ids, texts, pattern, regex=True)
        _check(realworld_store, ids, texts, pattern, regex=True, ignore_case=rng.random() < 0.5)
        methods.add(api.search_code(realworld_store, settings_now(), pattern, regex=True, limit=1).method)
    assert {"index", "index + verify", "scan"} <= methods


def test_fixture_store_and_filters(fixture_store):
    ids, texts, ref_chars = _programs(fixture_store)
    for pattern in _patterns(texts.to_pylist(), ref_chars, 80, 4):
        _check(fixture_store, ids, texts, pattern)
        _check(fixture_store, ids, texts, pattern, ignore_case=True)
    only_test = api.search_code(fixture_store, settings_now(), "def ", f=api.Filters(split="test"), limit=LIMIT)
    assert only_test.rows["id"].to_pylist() == [i for i in _expected(ids, texts, "def ", False, False)
                                                if i.startswith("test/")]


def test_many_hits_show_the_first_with_the_exact_total(realworld_store):
    ids, texts, _ = _programs(realworld_store)
    result = api.search_code(realworld_store, settings_now(), "import torch", limit=10)
    expected = _expected(ids, texts, "import torch", False, False)
    assert len(expected) > 1000 and result.total == len(expected) and result.complete
    assert result.rows["id"].to_pylist() == expected[:10]


def test_a_store_without_an_index_searches_by_scan(realworld_store, tmp_path):
    old = tmp_path / "old-store"
    shutil.copytree(realworld_store, old)
    shutil.rmtree(old / SEARCH_DIR)
    ids, texts, _ = _programs(old)
    result = api.search_code(old, settings_now(), "tl.store", limit=LIMIT)
    assert result.note == NO_INDEX_NOTE and result.method == "scan" and result.rows_scanned == len(ids)
    assert result.rows["id"].to_pylist() == _expected(ids, texts, "tl.store", False, False)[:LIMIT]
    seen = []
    api.search_code(old, settings_now(), "tl.load", progress=lambda done, total: seen.append((done, total)))
    assert seen and seen[-1] == (len(ids), len(ids))
    again = api.search_code(old, settings_now(), "tl.store", limit=LIMIT)  # the same search again: its rows are remembered
    assert again.memoized and again.total == result.total and again.rows.equals(result.rows)


def test_an_index_of_another_version_is_not_read(realworld_store, tmp_path):
    other = tmp_path / "other-version"
    shutil.copytree(realworld_store, other)
    meta = other / SEARCH_DIR / "index.json"
    meta.write_text(meta.read_text().replace(f'"version": {SEARCH_INDEX_VERSION}', '"version": 99'))
    ids, texts, _ = _programs(other)
    result = api.search_code(other, settings_now(), "tl.store", limit=LIMIT)
    assert result.note == NO_INDEX_NOTE and result.total == len(_expected(ids, texts, "tl.store", False, False))



def test_an_index_of_version_2_lines_alone_is_still_read(realworld_store, tmp_path):
    """Version 2 (before issue 48) had lines in every shard, in the same files, and no "parts"."""
    import json

    old = tmp_path / "version-2"
    shutil.copytree(realworld_store, old)
    meta_path = old / SEARCH_DIR / "index.json"
    meta = json.loads(meta_path.read_text())
    assert meta["parts"]["grams"] == []  # (small shards keep their lines)
    meta_path.write_text(json.dumps({k: v for k, v in meta.items() if k not in ("parts", "choices", "grams")}
                                    | {"version": 2}))
    ids, texts, _ = _programs(old)
    result = api.search_code(old, settings_now(), "tl.store", limit=LIMIT)
    assert result.method == "index" and result.total == len(_expected(ids, texts, "tl.store", False, False))

def test_line_rule():
    assert line_rule(r"tl\.dot\(.*allow_tf32") == LineRule(sound=True, complete=True)  # . stops at a newline
    assert line_rule(r"\bgrid\b|x[a-z_]\d") == LineRule(sound=True, complete=True)
    assert line_rule(r"num_warps\s*=") == LineRule(sound=True, complete=False)  # \s matches a newline
    for spans_lines in (r"a[^b]c", r"(?s)a.c", r"a\nc", r"a[\x00-\x7f]c", r"a\Wc", r"a(?s:.)c"):
        assert line_rule(spans_lines) == LineRule(sound=True, complete=False), spans_lines
    for anchored in (r"^def", r"x$", r"\Aimport", r"(?m)^class"):  # a line's start is not the text's
        assert line_rule(anchored) == LineRule(sound=False, complete=False), anchored
    assert line_rule(r"\pLabc") == LineRule(sound=False, complete=False)  # Python cannot parse it


def test_line_patterns():
    """Within a line, the rewrite matches what the pattern matches; it never matches a newline; the lines a match
    across lines starts in are found."""
    lines = ["num_warps = 4", "num_warps", "num_warps =", "x = 1", "  num_warps\t=  8 ", "a\tb", "é  ", ""]
    for pattern in (r"num_warps\s*=\s*\d+", r"[^=]+=", r"(?s)a.b", r"a\Wb", r"(?i)NUM_WARPS\s", r"\s+$"[:-1],
                    r"[\x00-\x20]{2}", r"\D\S", r"x|\n|=\s"):
        found = line_patterns(pattern)
        within = pc.match_substring_regex(pa.array(lines), found.within).to_pylist()
        assert within == pc.match_substring_regex(pa.array(lines), pattern).to_pylist(), pattern
        assert not pc.match_substring_regex(pa.array(["\n"]), found.within)[0].as_py(), pattern
        text = "\n".join(lines)
        for at in [m.start() for m in re.finditer(pattern, text) if "\n" in m.group(0)]:
            line = text[text.rfind("\n", 0, at) + 1 : text.find("\n", at)]
            assert pc.match_substring_regex(pa.array([line]), found.starts)[0].as_py(), (pattern, line)
    found = line_patterns(r"num_warps\s*=\s*\d+")
    starts = pc.match_substring_regex(pa.array(lines), found.starts).to_pylist()
    assert starts == [False, True, True, False, False, False, False, False] and found.start_literal == "num_warps"
    for unknown in (r"a{,3}b", r"[[:alpha:]]\s", r"(?x) a \s b", r"\pL\s"):
        assert line_patterns(unknown) is None, unknown


def test_required_literals():
    assert required_literals(r"tl\.dot\(.*allow_tf32") == (["allow_tf32", "tl.dot("], False)
    assert required_literals(r"(?i)abc(de|fg)hij") == (["abc", "hij"], True)
    assert required_literals(r"ab(cde)+f{0,3}ghi") == (["cde", "ghi", "ab"], False)
    assert required_literals(r"[[:alpha:]]abc") == ([], False)  # RE2 and Python read it differently
    assert required_literals(r"(?s)abc.def") == ([], False)
    assert required_literals(r"\pLabc") == ([], False)  # Python cannot parse it: full scan


def test_sessions_searching_the_same_text_at_once_read_it_once(fixture_store, monkeypatch):
    import threading
    import time

    from queries.search import engine as search

    search.forget_searches()
    opened = []

    def slow_open_index(path, cache_bytes):  # where a search that is not remembered starts reading
        opened.append(path)
        time.sleep(0.3)
        if len(opened) == 1 and failing:
            raise OSError("the first search broke")
        return real_open_index(path, cache_bytes)

    real_open_index, failing = search.open_index, False
    monkeypatch.setattr(search, "open_index", slow_open_index)
    results = []
    threads = [threading.Thread(target=lambda: results.append(api.search_code(fixture_store, settings_now(), "tl.load")))
               for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=30)
    assert len(opened) == 1 and len(results) == 4
    assert sorted(r.memoized for r in results) == [False, True, True, True]
    assert len({r.total for r in results}) == 1 and results[0].total > 0

    search.forget_searches()  # a search that fails leaves the next caller to search, not waiting forever
    opened.clear()
    failing = True
    errors = []

    def first():
        try:
            api.search_code(fixture_store, settings_now(), "tl.store")
        except OSError as error:
            errors.append(error)

    broken = threading.Thread(target=first)
    broken.start()
    time.sleep(0.1)
    waiter = api.search_code(fixture_store, settings_now(), "tl.store")
    broken.join(timeout=30)
    assert len(errors) == 1 and len(opened) == 2 and not waiter.memoized and waiter.total > 0


def test_decompressed_lines_are_kept_within_the_budget_and_freed_with_their_index(realworld_store, tmp_path):
    import os

    from queries.search import engine as search
    from queries.search import index as search_index

    ids, texts, _ = _programs(realworld_store)
    copy = tmp_path / "copy"
    shutil.copytree(realworld_store, copy)
    with search_index._OPEN_LOCK:  # indexes other tests left open would go as this one opens, freeing room
        while search_index._OPEN:
            search_index._OPEN.popitem()[1].forget_batches()
    # opened first with room for a few batches: the searches find it open and keep to its budget
    index = search_index.open_index(copy, search_index._cached + (1 << 17))
    for _ in range(2):  # the second search reads batches kept and batches decompressed again
        search.forget_searches()
        _check(copy, ids, texts, "tl.load")
    assert search_index.open_index(copy, search_index.cache_bytes_of(settings_now())) is index
    kept = sum(batch.nbytes for batch in index._cache.values())
    assert 0 < kept <= 1 << 17 and search_index._cached <= index.cache_bytes
    meta = copy / "meta.json"  # the store's version, the key of every cache of it
    os.utime(meta, (meta.stat().st_atime, meta.stat().st_mtime + 5))  # as a rebuild of the store would
    before = search_index._cached
    assert search_index.open_index(copy, index.cache_bytes) is not index
    assert index._cache is None and search_index._cached <= before - kept  # (and any index beyond KEEP_OPEN)
