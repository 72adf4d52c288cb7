"""The search index's split of program texts into a head and candidate lines (`queries/ingest/index_lines.py`):
every line of a text is a whole line of its head or one of its candidate lines, and the candidate lines start at
the line holding the cut (or earlier, where non-ASCII characters come before it)."""

from __future__ import annotations

import numpy as np
import pyarrow as pa

from queries.ingest.index_lines import candidate_lines, cut_bytes

TEXTS = [
    "import torch\nclass Model:\n    pass\nimport triton\nclass ModelNew:\n    pass\n",  # ends with a newline
    "ref line\nref two\ncand one\ncand two",  # no newline at the end
    "",  # empty
    "\n\n\nx\n",  # empty lines
    "héllo wörld ✓\nsecond ✓ line\nthird\n",  # non-ASCII before the cut
    "no newline at all",
    "a\nb",  # cut at its end
    "a\n",  # cut at its end, after the last newline
]


def split(texts: list[str], ref_chars: list[int]) -> list[tuple[list[str], list[str]]]:
    """Per text: (its head's lines, its candidate lines), as the index sees them."""
    array = pa.array(texts, pa.string())
    pieces, heads, lines, rows = candidate_lines(array, cut_bytes(array, np.array(ref_chars, np.int64)))
    pieces = pieces.to_pylist()
    got = []
    for i in range(len(texts)):
        head = pieces[heads[i]]
        got.append((head.splitlines(keepends=True), [pieces[p] for p, r in zip(lines, rows, strict=True) if r == i]))
    return got


def holding_cut(text: str, chars: int) -> int:
    """Character position where the line holding character `chars` (or the last one) starts."""
    at = min(chars, len(text) - 1)
    return text.rfind("\n", 0, at) + 1 if at > 0 else 0


def test_every_line_is_in_the_head_or_a_candidate_line():
    ref_chars = [text.find("class ModelNew") if "ModelNew" in text else len(text) // 2 for text in TEXTS]
    ref_chars[6], ref_chars[7] = 3, 2  # at the end
    for text, chars, (head, lines) in zip(TEXTS, ref_chars, split(TEXTS, ref_chars), strict=True):
        assert "".join(head) + "".join(lines) == text  # in order, nothing lost or repeated
        assert all(line.endswith("\n") for line in head)  # the head holds whole lines only
        assert all(line.endswith("\n") for line in lines[:-1])
        if text.isascii() and text:
            assert len("".join(head)) == holding_cut(text, chars)


def test_text_without_reference_is_all_candidate_lines():
    head, lines = split(["x = 1\ny = 2\n"], [0])[0]
    assert head == [] and lines == ["x = 1\n", "y = 2\n"]


def test_cut_at_a_text_end_keeps_its_last_line_a_candidate_line():
    assert split(["a\nb"], [3])[0] == (["a\n"], ["b"])
    assert split(["a\n"], [2])[0] == ([], ["a\n"])


def test_non_ascii_before_the_cut_starts_the_candidate_lines_no_later():
    text = "é\n" * 10 + "class ModelNew:\n    pass\n"
    chars = text.find("class ModelNew")
    cut = cut_bytes(pa.array([text]), np.array([chars]))[0]
    assert cut <= len(text[:chars].encode("utf-8"))
    assert text.encode("utf-8")[:cut].decode("utf-8")  # a character boundary
    head, lines = split([text], [chars])[0]
    assert "class ModelNew:\n" in lines and "".join(head) + "".join(lines) == text


def test_a_code_part_whose_programs_have_no_candidate_lines_is_indexed(tmp_path):
    """A batch of empty programs has no candidate lines (its chunk would be dropped from the merge's encoding)."""
    import pyarrow.parquet as pq

    from queries.ingest import search_index
    from queries.store import CODE_SCHEMA, code_path, search_path

    texts = ["", "", "import torch\n", "import torch\nclass ModelNew:\n    pass\n"]
    code_path(tmp_path, 0).parent.mkdir(parents=True)
    search_path(tmp_path, "").mkdir()
    table = pa.table({"id": [f"train/{i:06d}" for i in range(4)], "x": texts}, schema=CODE_SCHEMA)
    pq.write_table(table, code_path(tmp_path, 0), row_group_size=2)
    search_index.BATCH_ROWS, batch_rows = 2, search_index.BATCH_ROWS
    try:
        keys, heads, row_ref, lines = search_index.index_shard(tmp_path, 0, np.array([0, 0, 13, 13]))
    finally:
        search_index.BATCH_ROWS = batch_rows
    assert lines == 3 and heads == ["", "import torch\n"] and row_ref.tolist() == [0, 0, 0, 1]
    postings = np.load(search_path(tmp_path, "part-00000.postings.npy"))
    assert postings.tolist() == [2, 3, 3]  # "import torch\n" (the whole of row 2), then row 3's two lines
