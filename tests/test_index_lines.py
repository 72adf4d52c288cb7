"""The search index's split of program texts into a head and candidate lines (`queries/ingest/index_lines.py`):
every line of a text is a whole line of its head or one of its candidate lines, and the candidate lines start at
the line holding the cut; a code part's segments (`queries/ingest/index_segments.py`) merge into its index."""

from __future__ import annotations

import numpy as np
import pyarrow as pa

from queries.ingest.index_lines import candidate_lines

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
    starts = np.cumsum([0] + [len(text.encode("utf-8")) for text in texts[:-1]])
    pieces, heads, lines, rows = candidate_lines(array, starts + cut_bytes(texts, ref_chars))
    pieces = pieces.to_pylist()
    got = []
    for i in range(len(texts)):
        head = pieces[heads[i]]
        got.append((head.splitlines(keepends=True), [pieces[p] for p, r in zip(lines, rows, strict=True) if r == i]))
    return got


def cut_bytes(texts: list[str], ref_chars: list[int]) -> np.ndarray:
    """UTF-8 bytes of each text before its `ref_chars` characters (ingest's `cut_bytes`)."""
    return np.array([len(text[:chars].encode("utf-8")) for text, chars in zip(texts, ref_chars, strict=True)])


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
        if text:
            assert len("".join(head)) == holding_cut(text, chars)


def test_text_without_reference_is_all_candidate_lines():
    head, lines = split(["x = 1\ny = 2\n"], [0])[0]
    assert head == [] and lines == ["x = 1\n", "y = 2\n"]


def test_cut_at_a_text_end_keeps_its_last_line_a_candidate_line():
    assert split(["a\nb"], [3])[0] == (["a\n"], ["b"])
    assert split(["a\n"], [2])[0] == ([], ["a\n"])


def test_non_ascii_before_the_cut_starts_the_candidate_lines_at_the_line_holding_it():
    text = "é\n" * 10 + "class ModelNew:\n    pass\n"
    head, lines = split([text], [text.find("class ModelNew") + 3])[0]
    assert "".join(head) == "é\n" * 10 and lines == ["class ModelNew:\n", "    pass\n"]


def test_segments_merge_into_the_index_of_their_code_part(tmp_path):
    """A code part's rows come in segments, some of rows without candidate lines (a chunk without lines would
    be dropped from the merge's encoding); merged, each line's postings are the rows holding it, ascending."""
    from queries.ingest import search_build as search_index
    from queries.ingest.index_segments import SEGMENT_DIR, segment_path, write_segments
    from queries.store import search_path

    texts = ["", "", "import torch\n", "import torch\nclass ModelNew:\n    pass\n", "x\nclass ModelNew:\n"]
    cut = cut_bytes(texts, [0, 0, 13, 13, 2])
    (tmp_path / SEGMENT_DIR).mkdir()
    search_path(tmp_path, "").mkdir()
    array = pa.array(texts, pa.string())
    write_segments(array.slice(0, 2), cut[:2], [(0, 2, str(segment_path(tmp_path, 0, 0)))])
    write_segments(array.slice(2), cut[2:], [(0, 2, str(segment_path(tmp_path, 0, 2))),
                                             (2, 1, str(segment_path(tmp_path, 0, 4)))])
    keys, heads, row_ref, choice, lines = search_index.index_shard(tmp_path, 0, 5, 1 << 20)
    assert choice["structure"] == "lines" and lines == 3 and heads == ["", "import torch\n", "x\n"] and row_ref.tolist() == [0, 0, 0, 1, 2]
    got = pa.ipc.open_file(search_path(tmp_path, "part-00000.lines.arrow")).read_all()["text"].to_pylist()
    offsets = np.load(search_path(tmp_path, "part-00000.offsets.npy")).tolist()
    postings = np.load(search_path(tmp_path, "part-00000.postings.npy")).tolist()
    assert {line: postings[offsets[i] : offsets[i + 1]] for i, line in enumerate(got)} == {
        "import torch\n": [2], "class ModelNew:\n": [3, 4], "    pass\n": [3]}
