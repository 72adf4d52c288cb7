"""Ingest, the end of stage 1: the code search index, merged from the segments written as the programs were read.

A literal without a newline, and a regex that cannot match one, lie within one line of a program. So the index
is of lines: each code shard's distinct lines (of the programs' candidate parts) with, per line, the rows that
hold it. A search matches the distinct lines, not the programs (a shard's 60k programs have ~1M distinct lines,
an eighth of their bytes: candidates of one problem share most lines), and the rows of the lines it matched are
its hits, exact, with no program read. Lines files are LZ4-compressed (a third of their size; a search
decompresses them at ~2 GB/s a core, a sixth of what it matches). Rows share references (a problem's many
candidates), so a program is indexed as two parts (`index_lines.py` splits them): its head, the whole lines before
the one holding ingest's cut, once per distinct head in `refs.arrow`, and its candidate lines, from the one
holding the cut to the end. Each batch read in stage 1 had its pieces (heads and lines) found distinct by one
Arrow dictionary encoding as it was read (`index_segments.py`: a segment per batch and code part); here a
shard's segments' distinct lines are found distinct by another. Files (`queries/store.py`: `search_path`,
`search_shard_path`):

    search/index.json                       {"version", "docs", "refs", "lines", "grams", "parts", "choices",
                                             "seconds"}
    search/docs.arrow                        one row per program, in code order: id, shard, rg, rg_row, ref
    search/refs.arrow                        ref (int32), text: every distinct head (whole lines)
    search/part-NNNNN.lines.arrow            text: the shard's distinct candidate lines, each ending with its
                                             newline, in LZ4 batches
    search/part-NNNNN.offsets.npy            uint32; postings[offsets[i]:offsets[i+1]] are the rows (positions
    search/part-NNNNN.postings.npy           within the shard, ascending) whose candidate part holds line i

Each shard is merged in a worker process. The line index is kept where lines repeat; where they rarely do
(issue 48: its distinct lines as large as the text, 142% of the code parts on a line-diverse corpus, and as slow
to search), the shard gets a trigram index instead (`index_grams.py`: its files `part-NNNNN.gram_*.npy`). Which
one is chosen per shard, in `STRUCTURE`'s two steps, and said in index.json (and so meta.json) as "parts":
{"lines": [shards], "grams": [shards]}:
- the segments' lines over `index_build_mb` / `LINE_MERGE_FACTOR` (what the merge would hold): trigrams, no merge;
- else merged, and the distinct lines over `LINE_SHARE` of the shard's candidate bytes (and over `SMALL_LINES`):
  trigrams, the merge dropped.
A trigram shard also gets its skeleton lines (`index_pieces.py`: its lines with the words one text holds cut out,
a marker byte in each one's place, in the lines' format: `part-NNNNN.pieces.arrow`, `piece_offsets.npy`,
`piece_postings.npy`; index.json's choice says the rows without any, "raw_rows": their text holds a marker byte)
and the words cut out, as attributes where they are (`part-NNNNN.words.arrow`, `word_offsets.npy`,
`word_postings.npy`), merged from what its chunks spilled a range at a time (`piece_spill.py`: each range of at
most `index_build_mb` / `PIECES_MERGE_FACTOR` spilled; its choice says the ranges, "pieces_ranges" and
"words_ranges", and "pieces_over_budget_bytes" where one bucket alone was over that). So a worker's memory is
bounded by `index_build_mb` (TLX_INDEX_BUILD_MB) whatever the text: the line merge only below it, the trigram
build spilling its keys and pieces to the build folder and merging each a range at a time.
"""

from __future__ import annotations

import hashlib
import json
import shutil
import time
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from queries.ingest.index_grams import index_part_grams, ranges_of, remove_spills
from queries.ingest.index_lines import NEWLINE, text_data, text_offsets
from queries.ingest.index_segments import SEGMENT_DIR, part_segments, read_segment, segment_sizes
from queries.ingest.malloc import give_back_freed_memory
from queries.ingest.piece_spill import BUCKETS, NpyAppender, Spilled
from queries.ingest.processes import process_pool, stop_pool
from queries.ingest.progress import say
from queries.store import (
    LINES_FILE,
    OFFSETS_FILE,
    PIECE_FILES,
    POSTINGS_FILE,
    SEARCH_INDEX_VERSION,
    SEARCH_META,
    WORD_FILES,
    code_path,
    search_path,
    search_shard_path,
)

LINES_PER_BATCH = 1 << 16  # distinct lines per compressed batch of a lines file
LINE_MERGE_FACTOR = 4  # a line merge's peak memory per byte of its segments' lines (mapped, encoded, postings)
PIECES_MERGE_FACTOR = 4  # a skeleton lines merge range: at most the budget over this spilled (held ~2x while merged)
LINE_SHARE = 0.4  # a shard whose distinct lines are a larger share of its candidate bytes gets trigrams,
SMALL_LINES = 8 << 20  # unless they are fewer bytes than this (searched in milliseconds whatever their share)
DOCS_FILE = "docs.arrow"
REFS_FILE = "refs.arrow"
_LZ4 = pa.ipc.IpcWriteOptions(compression="lz4")


def build_search_index(folder: Path, workers: int, progress: bool, index_build_mb: int) -> dict:
    """Write `folder/search/` from the code shards' segments (`index_segments.py`, written as stage 1 read the
    programs), which go once merged, each part's build within `index_build_mb`; returns index.json's fields."""
    started = time.monotonic()
    give_back_freed_memory()  # stage 1's batches, kept by malloc, would count beside the parts' builds
    search_path(folder, "").mkdir(exist_ok=True)
    shards = sorted(int(p.name[5:10]) for p in (folder / "code").glob("part-*.parquet"))
    ids = [pq.read_table(code_path(folder, shard), columns=["id"])["id"].combine_chunks() for shard in shards]
    pool = process_pool(min(workers, len(shards))) if workers > 1 and len(shards) > 1 else None
    budget = [max(index_build_mb, 1) << 20] * len(shards)
    finished = False
    try:
        rows = [len(shard_ids) for shard_ids in ids]
        results = (pool.map(index_shard, [folder] * len(shards), shards, rows, budget) if pool is not None
                   else map(index_shard, [folder] * len(shards), shards, rows, budget))
        refs: dict[bytes, int] = {}
        texts: list[str] = []
        docs = []
        lines = grams = 0
        parts: dict[str, list[int]] = {"lines": [], "grams": []}
        choices = []
        for shard, shard_ids, (keys, ref_texts, row_ref, choice, count) in zip(shards, ids, results, strict=True):
            local_to_global = np.empty(len(keys), np.int32)
            for i, (key, text) in enumerate(zip(keys, ref_texts, strict=True)):
                if key not in refs:
                    refs[key] = len(texts)
                    texts.append(text)
                local_to_global[i] = refs[key]
            docs.append(_docs_of(folder, shard, shard_ids, local_to_global[row_ref]))
            structure = choice["structure"]
            parts[structure].append(shard)
            choices.append({"part": shard, **choice})
            lines, grams = (lines + count, grams) if structure == "lines" else (lines, grams + count)
            if progress:
                say(f"search index: code part {shard + 1} of {len(shards)}")
        finished = True
    finally:
        if pool is not None:
            stop_pool(pool, finished)
    shutil.rmtree(Path(folder) / SEGMENT_DIR, ignore_errors=True)
    remove_spills(folder)
    _write_arrow(search_path(folder, DOCS_FILE), pa.concat_tables(docs) if docs else _docs_table([], [], [], [], []))
    _write_arrow(search_path(folder, REFS_FILE),
                 pa.table({"ref": pa.array(range(len(texts)), pa.int32()), "text": pa.array(texts, pa.string())}))
    meta = {"version": SEARCH_INDEX_VERSION, "docs": sum(rows), "refs": len(texts), "lines": lines,
            "grams": grams, "parts": parts, "choices": choices, "seconds": round(time.monotonic() - started, 2)}
    search_path(folder, SEARCH_META).write_text(json.dumps(meta))
    return meta


def index_shard(folder: Path, shard: int, rows: int, budget: int) -> tuple[list[bytes], list[str], np.ndarray,
                                                                         dict, int]:
    """Index code shard `shard` (`rows` rows) from its segments, with its distinct candidate lines and their
    postings, or its trigrams (module doc: which, in at most `budget` bytes); returns its distinct references
    (keys, texts), each row's position among them, the choice (its "structure", "lines" or "grams", and the
    bytes it was made from) and its distinct lines or trigrams. Runs in a worker process."""
    segments = part_segments(folder, shard)
    sizes = np.array([segment_sizes(path) for _, path in segments], np.int64).reshape(-1, 3).sum(axis=0)
    choice = {"segment_line_bytes": int(sizes[1]), "candidate_bytes": int(sizes[2])}
    row_type = np.uint16 if rows <= 1 << 16 else np.uint32
    if (sizes[0] + sizes[1]) * LINE_MERGE_FACTOR <= budget:
        keys, texts, row_ref, batch_lines, batch_pairs = _read_segments(segments, shard, rows)
        distinct, offsets, postings = _merge(batch_lines, batch_pairs, row_type)
        bounds = text_offsets(distinct)
        choice["distinct_line_bytes"] = int(bounds[-1]) - int(bounds[0])
        if choice["distinct_line_bytes"] <= max(LINE_SHARE * choice["candidate_bytes"], SMALL_LINES):
            _write_lines(folder, shard, (LINES_FILE, OFFSETS_FILE, POSTINGS_FILE), distinct, offsets, postings)
            del offsets, postings
            give_back_freed_memory()
            return list(keys), texts, row_ref, {"structure": "lines", **choice}, len(distinct)
        del keys, texts, row_ref, distinct, offsets, postings
    grams, pieces, raw = index_part_grams(folder, shard, budget)
    try:
        for kind, names in (("pieces", PIECE_FILES), ("words", WORD_FILES)):
            choice.update(_merge_pieces(folder, shard, names, kind, pieces[kind], row_type,
                                        budget // PIECES_MERGE_FACTOR))
        choice["raw_rows"] = raw  # rows without skeleton lines: their text holds a marker byte
    finally:
        for spilled in pieces["pieces"] + pieces["words"]:
            spilled.path.unlink(missing_ok=True)
    give_back_freed_memory()  # the next part's build starts from what this worker holds
    # the trigrams and skeleton lines hold the whole texts, heads too: every row's head is the empty one
    return [_key("")], [""], np.zeros(rows, np.int32), {"structure": "grams", **choice}, grams


def _merge_pieces(folder: Path, shard: int, names: tuple[str, str, str], kind: str, spills: list[Spilled],
                  row_type: type, range_bytes: int) -> dict:
    """A trigram part's distinct skeleton lines (or cut words: `kind`) and their postings, merged from its chunks'
    spills a range of buckets at a time (`piece_spill.py`), each of at most `range_bytes` spilled (a bucket
    over it is merged whole, and said); returns their counts for the part's choice."""
    per_bucket = sum((spilled.bucket_bytes for spilled in spills), np.zeros(BUCKETS, np.int64))
    ranges = ranges_of(per_bucket, range_bytes)
    distinct = 0
    with (NpyAppender(search_shard_path(folder, shard, names[1]), np.uint32) as offsets,
          NpyAppender(search_shard_path(folder, shard, names[2]), row_type) as postings,
          pa.OSFile(str(search_shard_path(folder, shard, names[0])), "wb") as sink,
          pa.ipc.new_file(sink, pa.schema([("text", pa.string())]), options=_LZ4) as lines):
        offsets.append(np.zeros(1, np.uint32))
        for low, high in ranges:
            batches = [spilled.read(low, high) for spilled in spills
                       if spilled.piece_starts[high] > spilled.piece_starts[low]]
            texts, range_offsets, range_postings = _merge([b[0] for b in batches], [b[1] for b in batches], row_type)
            del batches
            lines.write_table(pa.table({"text": _newline_ended(texts)}), max_chunksize=LINES_PER_BATCH)
            offsets.append(range_offsets[1:] + np.uint32(postings.length))
            postings.append(range_postings)
            distinct += len(texts)
            del texts, range_offsets, range_postings
    over = int(max((per_bucket[low:high].sum() for low, high in ranges), default=0))
    return {kind: distinct, f"{kind}_ranges": len(ranges),
            **({f"{kind}_over_budget_bytes": over} if over > range_bytes else {})}


def _read_segments(segments: list[tuple[int, Path]], shard: int,
                   rows: int) -> tuple[dict[bytes, int], list[str], np.ndarray, list[pa.Array], list[np.ndarray]]:
    """A shard's distinct heads (by key, and their texts), each row's head, and its segments' lines and pairs."""
    keys: dict[bytes, int] = {}
    texts: list[str] = []
    row_ref = np.empty(rows, np.int32)
    batch_lines, batch_pairs = [], []
    first = 0
    for position, path in segments:
        if position != first:
            raise RuntimeError(f"{path}: a segment of code part {shard} at row {position} where row {first} was due")
        heads, row_head, lines, pairs = read_segment(path)
        row_ref[first : first + len(row_head)] = _reference_ids(keys, texts, heads)[row_head]
        first += len(row_head)
        if len(lines):  # (a chunk without lines would be dropped from the merge's encoding)
            batch_lines.append(lines)
            batch_pairs.append(pairs)
    if first != rows:
        raise RuntimeError(f"the search index's segments of code part {shard} hold {first} of its {rows} rows")
    return keys, texts, row_ref, batch_lines, batch_pairs


def _write_lines(folder: Path, shard: int, names: tuple[str, str, str], distinct: pa.StringArray,
                 offsets: np.ndarray, postings: np.ndarray) -> None:
    """A shard's distinct lines (or pieces), LZ4 batches, and their postings."""
    _write_arrow(search_shard_path(folder, shard, names[0]), pa.table({"text": _newline_ended(distinct)}),
                 compressed=True)
    np.save(search_shard_path(folder, shard, names[1]), offsets)
    np.save(search_shard_path(folder, shard, names[2]), postings)


def _reference_ids(keys: dict[bytes, int], texts: list[str], references: list[str]) -> np.ndarray:
    """The position of each of `references` among the shard's distinct references (`keys`, by hash, and their
    `texts`), those not seen yet added."""
    ids = np.empty(len(references), np.int32)
    for i, text in enumerate(references):
        key = _key(text)
        if key not in keys:
            keys[key] = len(texts)
            texts.append(text)
        ids[i] = keys[key]
    return ids


def _key(text: str) -> bytes:
    return hashlib.blake2b(text.encode("utf-8"), digest_size=16).digest()


def _newline_ended(lines: pa.StringArray) -> pa.StringArray:
    """Every line with one newline at its end (a text's last line has none), so that a batch's data is its lines
    one after another and a reader can match many lines as one string. Only the few lines without one are
    changed: a newline is put after each of them as their bytes are copied once."""
    offsets = text_offsets(lines).astype(np.int64)
    data = text_data(lines)[offsets[0] : offsets[-1]]
    offsets -= offsets[0]
    missing = (offsets[1:] == offsets[:-1]) | (data[np.maximum(offsets[1:] - 1, 0)] != NEWLINE)
    if not missing.any():
        return lines
    added = np.concatenate(([0], np.cumsum(missing)))
    return pa.StringArray.from_buffers(len(lines), pa.py_buffer((offsets + added).astype(np.int32)),
                                       pa.py_buffer(np.insert(data, offsets[1:][missing], NEWLINE)))


def _merge(batch_lines: list[pa.Array], batch_pairs: list[np.ndarray],
           row_type: type) -> tuple[pa.Array, np.ndarray, np.ndarray]:
    """The distinct lines over all segments, in the order first seen (a program's lines stay near one another:
    grouped by a hash of their text instead, to encode a group at a time, the lines files came out 40% larger),
    the uint32 offsets of each line's postings and the postings (rows, as `row_type`, ascending per line).

    A segment's pairs are sorted by its own line numbers, and each of its lines is one distinct text, so the
    segment holds each merged line's pairs as one run of rows, ascending; rows grow from segment to segment. The
    postings are therefore placed run by run, in segment order, after counting each line's rows: one pass, where
    sorting every (line, row) pair of a code part took twice as long. Empties both lists (a worker's peak memory
    is here)."""
    if not batch_lines:
        return pa.array([], pa.string()), np.zeros(1, np.uint32), np.empty(0, row_type)
    encoded = pc.dictionary_encode(pa.chunked_array(batch_lines, pa.string()))  # one dictionary for every chunk
    batch_lines.clear()
    if encoded.num_chunks != len(batch_pairs):
        raise ValueError("a batch without lines was merged (its chunk is dropped from the encoding)")
    lines_of = [chunk.indices.to_numpy()[pairs.view(np.uint32)[1::2]]  # little-endian: a pair's row, then its line
                for chunk, pairs in zip(encoded.chunks, batch_pairs, strict=True)]
    offsets = np.zeros(len(encoded.chunk(0).dictionary) + 1, np.int64)
    np.cumsum(np.bincount(np.concatenate(lines_of), minlength=len(offsets) - 1), out=offsets[1:])
    postings = np.empty(int(offsets[-1]), row_type)
    free = offsets[:-1].copy()  # where each line's next rows go
    while lines_of:
        line, rows = lines_of.pop(0), batch_pairs.pop(0).view(np.uint32)[0::2]
        starts = np.flatnonzero(np.concatenate(([True], line[1:] != line[:-1])))
        run_line, run_rows = line[starts], np.diff(np.append(starts, len(line)))
        at = free[run_line]
        free[run_line] += run_rows  # (a line has one run in a segment: no index repeats)
        postings[np.repeat(at - starts, run_rows) + np.arange(len(line))] = rows
    return encoded.chunk(0).dictionary, offsets.astype(np.uint32), postings


def _docs_of(folder: Path, shard: int, ids: pa.Array, ref: np.ndarray) -> pa.Table:
    meta = pq.read_metadata(code_path(folder, shard))
    sizes = [meta.row_group(g).num_rows for g in range(meta.num_row_groups)]
    rg = np.repeat(np.arange(len(sizes), dtype=np.int32), sizes)
    rg_row = np.concatenate([np.arange(n, dtype=np.int32) for n in sizes]) if sizes else np.empty(0, np.int32)
    return _docs_table(ids, np.full(len(ids), shard, np.int32), rg, rg_row, ref)


def _docs_table(ids, shard, rg, rg_row, ref) -> pa.Table:
    return pa.table({"id": pa.array(ids, pa.string()), "shard": pa.array(shard, pa.int32()),
                     "rg": pa.array(rg, pa.int32()), "rg_row": pa.array(rg_row, pa.int32()),
                     "ref": pa.array(ref, pa.int32())})


def _write_arrow(path: Path, table: pa.Table, compressed: bool = False) -> None:
    """An Arrow IPC file, which readers map instead of reading: uncompressed, or (`compressed`) LZ4 in batches of
    LINES_PER_BATCH rows, which a reader decompresses one at a time."""
    options = _LZ4 if compressed else pa.ipc.IpcWriteOptions()
    with pa.OSFile(str(path), "wb") as sink, pa.ipc.new_file(sink, table.schema, options=options) as writer:
        writer.write_table(table, max_chunksize=LINES_PER_BATCH if compressed else None)
