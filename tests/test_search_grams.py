"""The search index's trigram structure (issue 48), chosen per code shard where lines rarely repeat: searches answer
exactly what a full scan finds, index.json (and meta.json) say which shards have which, and the build spills its
keys to the build folder in chunks bounded by the memory setting."""

from __future__ import annotations

import json
import random
import re
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from queries import api
from queries.ingest import index_grams, search_build
from queries.search.grams import GramPart, text_grams
from queries.store import CODE_SCHEMA, PIECE_FILES, SEARCH_DIR, WORD_FILES, code_path, search_path
from tests.queries_helpers import settings_now
from tests.test_search_index import REALWORLD, _check, _expected, _patterns, _programs

pytestmark = pytest.mark.usefixtures("empty_runs")


@pytest.fixture(scope="module")
def mixed_store(tmp_path_factory) -> Path:
    """The real programs in five code shards: 0 and 4 keep their lines; 1 and 3 are told their lines do not
    repeat enough (trigrams and pieces); 2 gets a 1 MB budget, under what its segments' lines would hold
    (trigrams, its pieces merged in several ranges). One worker, so that the choice can be steered in this process."""
    if not (REALWORLD / "train.parquet").is_file():
        pytest.skip(f"{REALWORLD} not present")
    from queries.ingest import ingest, search_build

    real = search_build.index_shard

    def steered(folder, shard, rows, budget):
        if shard == 2:
            return real(folder, shard, rows, 1 << 20)
        share, small = search_build.LINE_SHARE, search_build.SMALL_LINES
        if shard in (1, 3):
            search_build.LINE_SHARE = search_build.SMALL_LINES = 0
        try:
            return real(folder, shard, rows, budget)
        finally:
            search_build.LINE_SHARE, search_build.SMALL_LINES = share, small

    store = tmp_path_factory.mktemp("mixed") / "store"
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(search_build, "index_shard", steered)
        ingest([str(REALWORLD)], store, progress=False, workers=1, code_rows_per_group=16, rows_per_shard=512,
               syntax_check=False)
    return store


def test_each_shard_is_said_to_have_lines_or_trigrams(mixed_store):
    meta = json.loads((mixed_store / SEARCH_DIR / "index.json").read_text())
    assert meta["parts"] == {"lines": [0, 4], "grams": [1, 2, 3]}
    assert json.loads((mixed_store / "meta.json").read_text())["search_index"]["parts"] == meta["parts"]
    assert [c["part"] for c in meta["choices"] if c.get("pieces") and c.get("words")] == [1, 2, 3]
    assert meta["choices"][2]["pieces_ranges"] > 2 and meta["choices"][2]["words_ranges"] >= 1  # 256 KB each
    assert meta["choices"][1]["pieces_ranges"] == 1 and not any("over_budget" in k for c in meta["choices"] for k in c)
    assert meta["choices"][2]["segment_line_bytes"] * search_build.LINE_MERGE_FACTOR > 1 << 20  # not merged
    assert "distinct_line_bytes" not in meta["choices"][2]
    for shard in (1, 2, 3):  # a shard has the files of its structure alone
        assert search_path(mixed_store, f"part-{shard:05d}.gram_rows.npy").is_file()
        assert not search_path(mixed_store, f"part-{shard:05d}.lines.arrow").exists()
        assert search_path(mixed_store, f"part-{shard:05d}.pieces.arrow").is_file()
    for shard in (0, 4):
        assert search_path(mixed_store, f"part-{shard:05d}.lines.arrow").is_file()
        assert not search_path(mixed_store, f"part-{shard:05d}.gram_rows.npy").exists()
    assert not list(mixed_store.parent.glob(f".{mixed_store.name}.building-*"))  # spills went with the build


def test_literals_equal_a_full_scan_with_trigram_shards(mixed_store):
    ids, texts, ref_chars = _programs(mixed_store)
    patterns = _patterns(texts.to_pylist(), ref_chars, 60, 4)
    for pattern in patterns:
        _check(mixed_store, ids, texts, pattern)
        _check(mixed_store, ids, texts, pattern.swapcase(), ignore_case=True)
    probes = [*patterns, "tl.load", "no such text anywhere", "\n"]
    methods = {api.search_code(mixed_store, settings_now(), p, limit=1).method for p in probes}
    assert methods == {"index + verify", "index", "scan"}  # the trigram shards' rows are read and matched


def test_pieces_decide_the_rows_of_their_shards(mixed_store):
    """A literal found in a shard's pieces is a hit without reading the row: of shards 1, 2 and 3 (pieces, 2's
    merged in ranges), few of the rows holding `tl.load` are read."""
    ids, texts, _ = _programs(mixed_store)
    holding = set(_expected(ids, texts, "tl.load", False, False))
    docs = pa.ipc.open_file(search_path(mixed_store, "docs.arrow")).read_all()
    held = {s: sum(1 for i, d in zip(docs["id"].to_pylist(), docs["shard"].to_pylist(), strict=True)
                   if d == s and i in holding) for s in (1, 2, 3)}
    result = api.search_code(mixed_store, settings_now(), "tl.load", limit=1)
    assert min(held.values()) > 100 and result.total == len(holding)
    assert result.rows_scanned < sum(held.values()) // 10


def test_regexes_equal_a_full_scan_with_trigram_shards(mixed_store):
    ids, texts, ref_chars = _programs(mixed_store)
    words = _patterns(texts.to_pylist(), ref_chars, 30, 6)
    regexes = [rf"{re.escape(a)}.*{re.escape(b)}" for a, b in zip(words[::2], words[1::2], strict=False)]
    regexes += [r"tl\.dot\(.*allow_tf32", r"BLOCK_SIZE\s*=\s*\d+", r"(?i)triton\.JIT", r"tl\.(load|store)\(",
                r"(?s)def forward.*tl\.load", r"return\s+\w+\s*\n\s*\n\s*def", r"(?i)K\w+L", r"(?i)\x{17f}tride",
                r"num_warps\s*=\s*\d+", r"\s+\b(?i:TL)\.", r"=\D{1,3}\n\s+\w+", r"\bgrid\s*\W\s*\(", r"\d{5}"]
    rng = random.Random(6)
    for pattern in regexes:
        _check(mixed_store, ids, texts, pattern, regex=True, ignore_case=rng.random() < 0.5)


def _code_part(folder: Path, texts: list[str], group_rows: int) -> None:
    (folder / "code").mkdir(parents=True)
    ids = [f"train/{i:06d}" for i in range(len(texts))]
    pq.write_table(pa.table({"id": ids, "x": texts}, schema=CODE_SCHEMA), code_path(folder, 0),
                   row_group_size=group_rows)
    search_path(folder, "").mkdir()


def _postings(folder: Path, rows: int, texts: list[str], probes: list[str]) -> dict[str, list[int]]:
    part = GramPart(folder, 0, rows)
    return {p: np.flatnonzero(part.candidates(p, False)).tolist() for p in probes}


def test_a_small_budget_spills_more_chunks_for_the_same_index(tmp_path, monkeypatch):
    """Chunks of the code part's texts are bounded by the budget (each chunk's keys go to the spill file), the
    merge's ranges too; the index is the same as with room for everything at once."""
    rng = random.Random(7)
    words = ["tl.load", "x_ptr", "mask", "BLOCK", "ümlaut", "🚀", "offs", "=", " ", "(", ")", "\n", "\t", "é"]
    texts = ["".join(rng.choice(words) for _ in range(rng.randrange(0, 400))) for _ in range(3000)]
    texts[5] = ""
    probes = ["tl.load(x_ptr", "offs=mask", "ümla", "🚀🚀", "BLOCK\tBLOCK", "no such", "(((", "k\n)"]
    found, chunks = {}, []
    real_merge = index_grams._merge
    monkeypatch.setattr(index_grams, "_merge", lambda *a: chunks.append(len(a[3])) or real_merge(*a))
    for budget in (1 << 30, 1 << 20):
        folder = tmp_path / str(budget)
        _code_part(folder, texts, 100)
        grams, pieces, raw = index_grams.index_part_grams(folder, 0, budget)
        assert grams > 100 and [len(pieces[k]) for k in ("pieces", "words")] == [chunks[-1]] * 2  # for the caller
        assert raw == []
        for spilled in pieces["pieces"] + pieces["words"]:
            spilled.path.unlink()
        assert not list((folder / index_grams.SPILL_DIR).iterdir())  # the keys' spill file went once merged
        found[budget] = (chunks[-1], _postings(folder, len(texts), texts, probes))
    assert found[1 << 30][0] == 2 and found[1 << 20][0] > 10  # 2,048 rows a chunk, or what the budget holds
    assert found[1 << 30][1] == found[1 << 20][1]
    for probe, rows in found[1 << 20][1].items():  # a superset of the rows holding the text
        assert {i for i, t in enumerate(texts) if probe in t} <= set(rows), probe


def test_pieces_merged_a_range_at_a_time_are_those_merged_at_once(tmp_path):
    """A part's skeleton lines and cut words, spilled by chunk and merged a range of buckets at a time, are the
    same lines with the same rows (ascending) as merged at once; a bucket over the range's bytes is merged whole
    and said in the choice."""
    rng = random.Random(48)
    words = ["tl.load", "x_ptr", "mask", "BLOCK", "ümlaut", "🚀", "=", " ", "(", ".", "\n", "\n", "é"]
    texts = ["".join(rng.choice(words) + (f"_{rng.randrange(3000)}" if rng.random() < 0.3 else "")
                     for _ in range(rng.randrange(0, 200))) for _ in range(2000)]
    _code_part(tmp_path, texts, 100)
    _, pieces, _ = index_grams.index_part_grams(tmp_path, 0, 1 << 20)
    assert len(pieces["pieces"]) > 2
    found = {}
    for range_bytes in (1 << 40, 1 << 16, 1):
        for kind, names in (("pieces", PIECE_FILES), ("words", WORD_FILES)):
            said = search_build._merge_pieces(tmp_path, 0, names, kind, pieces[kind], np.uint16, range_bytes)
            found[range_bytes, kind] = said, _line_rows(tmp_path, names)
    for kind in ("pieces", "words"):
        at_once, ranged, bucketed = (found[r, kind] for r in (1 << 40, 1 << 16, 1))
        assert at_once[0] == {kind: len(at_once[1]), f"{kind}_ranges": 1} and len(at_once[1]) > 100
        assert ranged[0][f"{kind}_ranges"] > 3 and f"{kind}_over_budget_bytes" not in ranged[0]
        assert bucketed[0][f"{kind}_over_budget_bytes"] > 1
        assert at_once[1] == ranged[1] == bucketed[1]


def _line_rows(folder: Path, names: tuple[str, str, str]) -> dict[str, list[int]]:
    lines = pa.ipc.open_file(search_path(folder, f"part-00000.{names[0]}")).read_all()["text"].to_pylist()
    offsets, postings = (np.load(search_path(folder, f"part-00000.{name}")) for name in names[1:])
    rows = {line: postings[offsets[i] : offsets[i + 1]].tolist() for i, line in enumerate(lines)}
    assert len(rows) == len(lines) and all(r == sorted(set(r)) for r in rows.values())
    return rows


def test_trigrams_of_a_text_any_case():
    assert text_grams("ab", False) == []  # too short to constrain
    assert [g.tolist() for g in text_grams("abc", False)] == [[ord("a") << 14 | ord("b") << 7 | ord("c")]]
    assert len(text_grams("aBc", True)[0]) == 8  # every case variant
    assert text_grams("mask", True) == [] and len(text_grams("BLOCK", True)) == 2  # a k or an s: no constraint
    assert text_grams("asK", True) == [] and len(text_grams("ümlaut", True)) == 3  # nor one not ASCII


def test_skeleton_lines_are_lines_with_the_words_one_text_holds_cut_out():
    from queries.ingest.index_pieces import chunk_pieces

    texts = ["x_17 = tl.load(p_17)  # u1.0\nreturn x_17\n", "y_3 = tl.load(p_3)  # u2.0\nreturn y_3",
             "ümlaut = tl.load(ümlaut)\n\n", "", "tl", "tl.w_9", "a\x01 = tl.load(b)"]
    data = np.frombuffer("".join(texts).encode(), np.uint8)
    offsets = np.cumsum([0] + [len(t.encode()) for t in texts]).astype(np.int64)
    lines, pairs, words, word_pairs, raw = chunk_pieces(data, offsets)
    by_row: dict[int, set[str]] = {}
    for pair in pairs.tolist():
        by_row.setdefault(pair & 0xFFFFFFFF, set()).add(lines[pair >> 32].as_py())
    assert by_row == {0: {"\x01 = tl.load(\x01)  # \x01.0", "return \x01"},  # `0` is in two texts: kept
                      1: {"\x01 = tl.load(\x01)  # \x01.0", "return \x01"},
                      2: {"\x02 = tl.load(\x02)", ""}, 4: {"tl"}, 5: {"tl.\x01"}}  # \x02: a word not ASCII
    assert raw.tolist() == [6]  # its text holds a marker byte: no skeleton lines, read by a search
    for row, found in by_row.items():  # each the skeleton of a line of its text, and every line has one
        shapes = [re.compile("".join(r"\w+" if ch in "\x01\x02" else re.escape(ch) for ch in line)) for line in found]
        text_lines = texts[row].removesuffix("\n").split("\n")
        assert all(any(shape.fullmatch(line) for line in text_lines) for shape in shapes)
        assert all(any(shape.fullmatch(line) for shape in shapes) for line in text_lines)
    cut: dict[int, set[str]] = {}  # the words cut out, after the `.` and word just before them
    for pair in word_pairs.tolist():
        cut.setdefault(pair & 0xFFFFFFFF, set()).add(words[pair >> 32].as_py())
    assert cut == {0: {"x_17", "p_17", "u1"}, 1: {"y_3", "p_3", "u2"}, 2: {"ümlaut"}, 5: {"tl.w_9"}, 6: {"a", "b"}}


def test_cut_words_leave_fewer_rows_to_read(mixed_store):
    """Of the rows whose trigrams a literal holds that no piece decided, only those with a cut word it could lie
    across are read (`queries/search/words.py`); a literal within a cut word is a hit, read nowhere. The answer
    is a full scan's either way."""
    from queries.search.index import cache_bytes_of, open_index
    from queries.search.lines import literal_query

    ids, texts, ref_chars = _programs(mixed_store)
    index = open_index(mixed_store, cache_bytes_of(settings_now()))
    literals = [p for p in _patterns(texts.to_pylist(), ref_chars, 80, 9) if "\n" not in p and len(p) >= 4]
    literals += ["torch.randn", "tl.cumsum", "libdevice", "tl.program_id(1)", "num_warps=8", "tl.sum("]
    queries = [literal_query(p, fold) for p in literals for fold in (False, True)]
    with_words = index.rows_with_lines(queries)
    shards, index.word_shards = index.word_shards, []
    try:
        without = index.rows_with_lines(queries)
    finally:
        index.word_shards = shards
    assert shards == [1, 2, 3]
    read = [int(may.sum()) for _, may in with_words]
    read_before = [int(may.sum()) for _, may in without]
    assert all(a <= b for a, b in zip(read, read_before, strict=True))
    assert sum(read) * 4 < sum(read_before) * 3  # 14,089 of 21,584 (random substrings of programs)
    for (hit, may), (hit_before, may_before) in zip(with_words, without, strict=True):
        assert not (hit & may).any() and (hit_before <= hit).all() and (hit | may <= hit_before | may_before).all()
    for pattern in literals:
        _check(mixed_store, ids, texts, pattern)
        _check(mixed_store, ids, texts, pattern.upper(), ignore_case=True)


def test_the_cut_words_a_literal_could_lie_across():
    from queries.search.lines import matching_lines
    from queries.search.words import word_queries

    words = ["x_17", ".randn_7", "randn_7", "my_torch", ".my_torch", "cumsum_3", ".cumsum", "u1", "p_17",
             "self.randn_9", "torch.randn_5", "tl.cumsum_2"]  # as kept: after a `.`, or after a word and a `.`
    lines = pa.array([w + "\n" for w in words], pa.string())

    def overlapped(literal: str, fold: bool = False) -> tuple[list[str], list[str]]:
        containing, overlapping = word_queries(literal, fold)
        found = [matching_lines(q, lines, False)[0].tolist() for q in [containing, overlapping] if q]
        return [words[i] for i in found[0]], sorted({words[i] for f in found[1:] for i in f})

    assert overlapped("torch.randn") == (["torch.randn_5"], [".my_torch", "my_torch", "torch.randn_5"])  # a hit
    assert overlapped("TORCH.RANDN", True) == (["torch.randn_5"], [".my_torch", "my_torch", "torch.randn_5"])
    assert overlapped("ch.randn(") == ([], [".my_torch", "my_torch"])  # `randn` is all of a word: none here
    assert overlapped("ch.randn") == (["torch.randn_5"], [".my_torch", "my_torch", "torch.randn_5"])  # no `self.`
    assert overlapped("randn_") == ([".randn_7", "randn_7", "self.randn_9", "torch.randn_5"], [])  # hits
    assert overlapped("tl.cumsum") == (["tl.cumsum_2"], ["tl.cumsum_2"])  # not `.cumsum`: no `tl` before it
    assert overlapped(").cumsum(") == ([], [".cumsum"])  # all of a word after a `.` that is not alone
    assert overlapped(".randn") == ([".randn_7", "self.randn_9", "torch.randn_5"],) * 2
    assert overlapped("17)  # u") == ([], ["p_17", "u1", "x_17"])
    assert overlapped(" = (") == ([], [])  # no word: in no cut word
    assert overlapped("u1.0") == ([], ["u1"])


@pytest.fixture(scope="module")
def renamed_store(tmp_path_factory) -> Path:
    """Real programs with most of each one's names made its own (some not ASCII), a word of its own at the end
    of some lines and a marker byte in a few texts, in trigram parts only: regexes cross cut words everywhere."""
    if not (REALWORLD / "train.parquet").is_file():
        pytest.skip(f"{REALWORLD} not present")
    from queries.ingest import ingest

    rng = random.Random(11)
    texts = [x for x in pq.read_table(REALWORLD / "train.parquet", columns=["x"])["x"].to_pylist() if x][:700]
    out = []
    for row, text in enumerate(texts):
        names = sorted({w for w in re.findall(r"\b[a-z_][a-z0-9_]{2,}\b", text) if rng.random() < 0.4})
        renamed = {w: f"{w}{rng.choice(['_', 'ä', ''])}{row}" for w in names}
        text = re.sub(r"\b[a-z_][a-z0-9_]{2,}\b", lambda m, names=renamed: names.get(m.group(0), m.group(0)), text)
        if row % 3 == 0:
            text = "\n".join(f"{line}  # w{row}x{i}" if i % 4 == 0 else line for i, line in enumerate(text.split("\n")))
        if row % 50 == 7:
            text = text.replace("=", "=\x01", 1) if row % 100 == 7 else text.replace("(", "(\x02", 1)
        out.append(text)
    source = tmp_path_factory.mktemp("renamed") / "train.parquet"
    pq.write_table(pa.table({"x": out, "y": [1.0] * len(out)}), source)
    store = source.parent / "store"
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(search_build, "LINE_SHARE", 0)
        mp.setattr(search_build, "SMALL_LINES", 0)
        ingest([str(source)], store, progress=False, workers=1, code_rows_per_group=16, rows_per_shard=256,
               syntax_check=False)
    return store


CROSSING = [
    r"tl\.atomic_add\(\w+", r"tl\.load\(\w+", r"\w+_ptr\b", r"\w+ = tl\.load\([^)]*\)", r"def \w+\(\w+", r"\(\w+, \w+\)",
    r"[a-z]+_\d+", r"\w+\s*\+\s*\w+", r"\S+\.\w+\(\S+", r"=\s*\w+\n", r"\w+\s*\n\s*\w+", r"\w{3}\(", r"x.{1,3}=",
    r"[^\x00-\x7f]\w*", r"ä\w+", r"\x01", r"=[\x00-\x02]", r"\w+:\s*tl\.constexpr", r"for \w+ in range\(\w+",
    r"(?i)TL\.LOAD\(\w+", r"mask\s*=\s*\w+\s*<", r"[^(]+\)$", r"\.\w", r"\w\.", r"_\d+\b", r"\B\d", r"x\d+$",
    r"tl\.store\(.*mask=", r"num_warps\s*=\s*\d+", r"#\s*w\d+x\d+", r"\w+\s*=\s*\w+\(\w+", r"[\w.]+\(", r"\S+x4\b",
    r"\w+(?:_ptr|_size)", r"(?:offs|pid)\w*\s*=", r"BLOCK\w*\s*:\s*tl\.constexpr", r"return \w+\s*\n\s*\n\s*def",
    r"\w+ä\d+", r"[^\s]{2}ä", r"\(\x02\w", r".{2}\x01", r"(\w+)\.(\w+)\(", r"\w*\s*=\s*\.",
]

SHOWN = [r"tl\.atomic_add\(\w+", r"tl\.load\(\w+", r"\w+ = tl\.load\([^)]*\)", r"\(\w+, \w+\)", r"\w+\s*\+\s*\w+",
         r"(?i)TL\.LOAD\(\w+", r"\.\w", r"\w\.", r"tl\.store\(.*mask=", r"for \w+ in range\(\w+"]  # decided here


def test_regexes_across_cut_words_equal_a_full_scan(renamed_store):
    """Matched on the skeleton lines (`queries/search/holes.py`): a regex's hits found there, and the rows no
    skeleton line could match left out, give what a full scan finds, case kept or ignored; rows whose text holds
    a marker byte are read."""
    ids, texts, _ = _programs(renamed_store)
    meta = json.loads((renamed_store / SEARCH_DIR / "index.json").read_text())
    assert meta["parts"]["lines"] == [] and sum(len(c["raw_rows"]) for c in meta["choices"]) == 14
    for pattern in CROSSING:
        for ignore_case in (False, True):
            _check(renamed_store, ids, texts, pattern, regex=True, ignore_case=ignore_case)


def test_skeleton_lines_decide_rows_a_regex_crosses_cut_words_in(renamed_store, monkeypatch):
    """Rows a skeleton line shows a match in are hits and only rows where one could match are left to read: every
    hit matches, every matching row is a hit or read, and far fewer rows are read than without the skeletons."""
    from queries.search import engine
    from queries.search.index import cache_bytes_of, open_index

    ids, texts, _ = _programs(renamed_store)
    index = open_index(renamed_store, cache_bytes_of(settings_now()))
    order = {row_id: i for i, row_id in enumerate(index.docs["id"].to_pylist())}
    read = {}
    for holes in (True, False):
        if not holes:
            monkeypatch.setattr(engine, "hole_patterns", lambda *_: engine.NO_HOLES)
        read[holes] = 0
        for pattern in CROSSING:
            exact, undecided, note = engine._decided(index, pattern, pattern, False)
            matching = np.zeros(index.rows, bool)
            matching[[order[i] for i in _expected(ids, texts, pattern, True, False)]] = True
            assert not (exact & ~matching).any() and not (matching & ~exact & ~undecided).any(), pattern
            if pattern in SHOWN:
                read[holes] += int((undecided & ~exact).sum())
    assert read[True] * 10 < read[False], read  # where the text these patterns require is in most rows
