"""Ingest, the end of stage 1: the code search index, built from the code shards just written.

Rows share references (a problem's many candidates) and some share candidates, so a program is indexed as two
parts: the text before `ref_chars` (its reference) once per distinct reference, kept whole in `refs.arrow` (few
and small: a search matches all of them directly), and the rest (its candidate, from `OVERLAP` bytes before the
cut, so that a match crossing the cut is inside it too) as trigram posting lists per code shard. Trigrams that a
sample shows in at least `COMMON_SHARE` of the candidates are not given postings (they narrow nothing and would
be most of the index's size); `common.npy` lists them. Files (`queries/store.py`: `search_path`):

    search/index.json                       {"version", "overlap", "common_share", "docs", "refs", "seconds"}
    search/docs.arrow                        one row per program, in code order: id, shard, rg, rg_row, ref
    search/refs.arrow                        ref (int32), text: every distinct reference text
    search/common.npy                        sorted uint32 codes without postings
    search/part-NNNNN.{trigrams,offsets,postings}.npy   sorted codes; postings[offsets[i]:offsets[i+1]] are the
                                             shard's rows (positions within the shard) whose candidate holds code i

Each shard is indexed in a worker process; memory is one shard's postings, whatever the source files.
"""

from __future__ import annotations

import hashlib
import json
import time
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from queries.ingest.processes import process_pool, stop_pool
from queries.ingest.progress import say
from queries.search_trigrams import CODE_SPACE, lowered, rare_codes
from queries.store import (
    INDEX_FILE,
    SEARCH_INDEX_VERSION,
    SEARCH_META,
    code_path,
    search_path,
    search_shard_path,
)

OVERLAP = 128  # bytes of the reference repeated at the start of the candidate part (more: its tail looks common)
COMMON_SHARE = 0.05
SAMPLE_DOCS = 4096
BATCH_ROWS = 1024
COMMON_FILE = "common.npy"
DOCS_FILE = "docs.arrow"
REFS_FILE = "refs.arrow"


def build_search_index(folder: Path, workers: int, progress: bool) -> dict:
    """Write `folder/search/` for the code shards and index.parquet in `folder`; returns index.json's fields."""
    started = time.monotonic()
    search_path(folder, "").mkdir(exist_ok=True)
    shards = sorted(int(p.name[5:10]) for p in (folder / "code").glob("part-*.parquet"))
    index = pq.read_table(folder / INDEX_FILE, columns=["id", "ref_chars"])
    ref_chars = [_ref_chars_of(folder, shard, index) for shard in shards]
    common = _common_codes(folder, shards, ref_chars)
    np.save(search_path(folder, COMMON_FILE), common)
    pool = process_pool(min(workers, len(shards))) if workers > 1 and len(shards) > 1 else None
    finished = False
    try:
        results = (pool.map(index_shard, [folder] * len(shards), shards, ref_chars) if pool is not None
                   else map(index_shard, [folder] * len(shards), shards, ref_chars))
        refs: dict[bytes, int] = {}
        texts: list[str] = []
        docs = []
        for shard, (keys, ref_texts, row_ref) in zip(shards, results, strict=True):
            local_to_global = np.empty(len(keys), np.int32)
            for i, (key, text) in enumerate(zip(keys, ref_texts, strict=True)):
                if key not in refs:
                    refs[key] = len(texts)
                    texts.append(text)
                local_to_global[i] = refs[key]
            docs.append(_docs_of(folder, shard, local_to_global[row_ref]))
            if progress:
                say(f"search index: code part {shard + 1} of {len(shards)}")
        finished = True
    finally:
        if pool is not None:
            stop_pool(pool, finished)
    _write_arrow(search_path(folder, DOCS_FILE), pa.concat_tables(docs) if docs else _docs_table([], [], [], [], []))
    _write_arrow(search_path(folder, REFS_FILE),
                 pa.table({"ref": pa.array(range(len(texts)), pa.int32()), "text": pa.array(texts, pa.string())}))
    meta = {"version": SEARCH_INDEX_VERSION, "overlap": OVERLAP, "common_share": COMMON_SHARE, "docs": index.num_rows,
            "refs": len(texts), "seconds": round(time.monotonic() - started, 2)}
    search_path(folder, SEARCH_META).write_text(json.dumps(meta))
    return meta


def index_shard(folder: Path, shard: int, ref_chars: np.ndarray) -> tuple[list[bytes], list[str], np.ndarray]:
    """Write the posting lists of one code shard; returns its distinct references (keys, texts) and each row's
    position among them. Runs in a worker process."""
    rare = np.ones(CODE_SPACE, bool)
    rare[np.load(search_path(folder, COMMON_FILE))] = False
    keys: dict[bytes, int] = {}
    texts: list[str] = []
    row_ref = np.empty(len(ref_chars), np.int32)
    pairs = []
    first = 0
    for batch in pq.ParquetFile(code_path(folder, shard)).iter_batches(batch_size=BATCH_ROWS, columns=["x"]):
        parts = _split(batch.column(0), ref_chars[first : first + batch.num_rows])
        for i, ref in enumerate(parts.refs):
            key = hashlib.blake2b(ref, digest_size=16).digest()
            if key not in keys:
                keys[key] = len(texts)
                texts.append(ref.decode("utf-8"))
            row_ref[first + i] = keys[key]
        codes, starts = rare_codes(lowered(parts.candidates), rare, parts.length)
        rows = np.searchsorted(parts.starts, starts, side="right") - 1 + first
        pairs.append(_distinct((codes.astype(np.uint64) << 32) | rows.astype(np.uint64)))
        first += batch.num_rows
    pairs = np.sort(np.concatenate(pairs)) if pairs else np.empty(0, np.uint64)
    codes = (pairs >> 32).astype(np.uint32)
    at = _starts_of_runs(codes)
    trigrams = codes[at]
    offsets = np.append(at, len(codes)).astype(np.int64)
    postings = (pairs & 0xFFFFFFFF).astype(np.uint16 if len(ref_chars) <= 1 << 16 else np.uint32)
    for kind, array in (("trigrams", trigrams), ("offsets", offsets), ("postings", postings)):
        np.save(search_shard_path(folder, shard, kind), array)
    return list(keys), texts, row_ref


def _distinct(values: np.ndarray) -> np.ndarray:
    """The distinct values, sorted (numpy's SIMD sort; `np.unique` hashes, ~100x slower on these arrays)."""
    values = np.sort(values)
    return values[_starts_of_runs(values)]


def _starts_of_runs(ordered: np.ndarray) -> np.ndarray:
    """Positions where a sorted array's value changes (its first position included when not empty)."""
    if len(ordered) == 0:
        return np.empty(0, np.int64)
    return np.flatnonzero(np.concatenate(([True], ordered[1:] != ordered[:-1])))


class _Parts:
    def __init__(self, refs: list[bytes], candidates: np.ndarray, starts: np.ndarray, length: int):
        self.refs, self.candidates, self.starts, self.length = refs, candidates, starts, length


def _split(texts: pa.Array, ref_chars: np.ndarray) -> _Parts:
    """Each text's reference bytes, and the candidate parts (from OVERLAP bytes before the cut) concatenated
    (`length` bytes, plus 4 zero bytes for `rare_codes` to read past), with where each starts."""
    if texts.type != pa.string():
        texts = texts.cast(pa.string())
    offsets = np.frombuffer(texts.buffers()[1], np.int32)[texts.offset : texts.offset + len(texts) + 1]
    data = np.frombuffer(texts.buffers()[2] or b"", np.uint8)
    cut = offsets[:-1].astype(np.int64) + ref_chars
    not_ascii = np.flatnonzero(~pc.string_is_ascii(texts).to_numpy(zero_copy_only=False))
    for i in not_ascii.tolist():  # characters to bytes
        cut[i] = offsets[i] + len(texts[i].as_py()[: ref_chars[i]].encode("utf-8"))
    refs = [data[a:b].tobytes() for a, b in zip(offsets[:-1].tolist(), cut.tolist(), strict=True)]
    begin = np.maximum(offsets[:-1], cut - OVERLAP)
    pieces = [data[a:b] for a, b in zip(begin.tolist(), offsets[1:].tolist(), strict=True)]
    lengths = (offsets[1:] - begin).astype(np.int64)
    starts = np.concatenate([[0], np.cumsum(lengths)[:-1]]).astype(np.int64)
    return _Parts(refs, np.concatenate([*pieces, np.zeros(4, np.uint8)]), starts, int(lengths.sum()))


def _ref_chars_of(folder: Path, shard: int, index: pa.Table) -> np.ndarray:
    """`ref_chars` of the rows of code shard `shard`, in the shard's order."""
    ids = pq.read_table(code_path(folder, shard), columns=["id"])["id"]
    where = pc.index_in(ids, value_set=index["id"]).to_numpy(zero_copy_only=False)
    return index["ref_chars"].to_numpy()[where].astype(np.int64)


def _common_codes(folder: Path, shards: list[int], ref_chars: list[np.ndarray]) -> np.ndarray:
    """Codes in at least COMMON_SHARE of the candidates of a sample (row groups spread over every shard)."""
    groups = [(s, g) for s in shards for g in range(pq.read_metadata(code_path(folder, s)).num_row_groups)]
    per_group = max(1, pq.read_metadata(code_path(folder, shards[0])).row_group(0).num_rows) if shards else 1
    step = max(1, len(groups) * per_group // SAMPLE_DOCS)
    counts = np.zeros(CODE_SPACE, np.int32)
    every = np.ones(CODE_SPACE, bool)
    sampled = 0
    for shard, group in groups[::step]:
        meta = pq.read_metadata(code_path(folder, shard))
        first = sum(meta.row_group(g).num_rows for g in range(group))
        texts = pq.ParquetFile(code_path(folder, shard)).read_row_group(group, columns=["x"]).column(0)
        texts = texts.combine_chunks()
        parts = _split(texts, ref_chars[shards.index(shard)][first : first + len(texts)])
        codes, starts = rare_codes(lowered(parts.candidates), every, parts.length)
        rows = np.searchsorted(parts.starts, starts, side="right") - 1
        distinct = (_distinct((codes.astype(np.uint64) << 32) | rows.astype(np.uint64)) >> 32).astype(np.int64)
        at = _starts_of_runs(distinct)
        counts[distinct[at]] += np.diff(np.append(at, len(distinct))).astype(np.int32)
        sampled += len(texts)
    return np.flatnonzero(counts >= max(2, COMMON_SHARE * sampled)).astype(np.uint32)


def _docs_of(folder: Path, shard: int, ref: np.ndarray) -> pa.Table:
    meta = pq.read_metadata(code_path(folder, shard))
    sizes = [meta.row_group(g).num_rows for g in range(meta.num_row_groups)]
    rg = np.repeat(np.arange(len(sizes), dtype=np.int32), sizes)
    rg_row = np.concatenate([np.arange(n, dtype=np.int32) for n in sizes]) if sizes else np.empty(0, np.int32)
    ids = pq.read_table(code_path(folder, shard), columns=["id"])["id"].combine_chunks()
    return _docs_table(ids, np.full(len(ids), shard, np.int32), rg, rg_row, ref)


def _docs_table(ids, shard, rg, rg_row, ref) -> pa.Table:
    return pa.table({"id": pa.array(ids, pa.string()), "shard": pa.array(shard, pa.int32()),
                     "rg": pa.array(rg, pa.int32()), "rg_row": pa.array(rg_row, pa.int32()),
                     "ref": pa.array(ref, pa.int32())})


def _write_arrow(path: Path, table: pa.Table) -> None:
    """An uncompressed Arrow IPC file, which readers map instead of reading."""
    with pa.OSFile(str(path), "wb") as sink, pa.ipc.new_file(sink, table.schema) as writer:
        writer.write_table(table)

