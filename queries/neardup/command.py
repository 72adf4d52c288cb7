"""Near-duplicate clusters of a built store's candidate parts: `python -m queries near-dups --store DIR`, also run
by ingest after stage 2.

Worker processes read the code row groups and turn each candidate part (`x[ref_chars:]`: the cut ingest's text
rules made) into a digest and a MinHash signature (`shingles.py`); rows with equal normalised text share one
signature and shingle set, and only distinct ones are compared (`clusters.py`). The index gets two columns, each
the id of its group's first row (in id order) for every row of a group of two or more, null for a row with no
near-copy (and for every row of a store this never ran on: meta.json's `near_dups.done` tells them apart):
`near_dup_cluster`, rows that are all near-copies of each other (what pages show and fold), and
`near_dup_component`, rows connected by near-copy links, chains included (what keeps a training export from
leaking: a row's every near-copy is in its component). index.parquet is rewritten, then meta.json gets
`near_dups: {done, rows, clusters, rows_in_clusters, components, rows_in_components, links, threshold, num_perm,
ngram, seconds}`, each by an atomic rename; nothing else changes. Interrupted or failed, it leaves the store as it
was. Memory: a signature (1 KiB) and a shingle set (4 bytes a 5-gram, ~2.4 KiB for a real candidate) per distinct
candidate, the row ids, the links, and one group of LSH bands at a time.
"""

from __future__ import annotations

import os
import time
import uuid
from collections import defaultdict
from concurrent.futures import FIRST_COMPLETED, as_completed, wait
from dataclasses import replace
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from common.errors import TlxError
from queries.ingest.processes import process_pool, stop_pool
from queries.ingest.progress import Progress, say
from queries.ingest.signals import sigterm_interrupts
from queries.neardup.clusters import THRESHOLD, group
from queries.neardup.shingles import NGRAM, NUM_PERM, digest, sketch, tokens
from queries.store import INDEX_FILE, Store, StoreError, code_path, replace_file, write_meta

COLUMN = "near_dup_cluster"
COMPONENT_COLUMN = "near_dup_component"
TASK_ROWS = 2048
PARALLEL_MIN_ROWS = 5000  # below this, starting worker processes costs more than it saves
IN_FLIGHT_PER_WORKER = 3
_sent: dict[str, set[bytes]] = {}  # per process: the run, and the digests whose sketch this process sent it


class NearDupError(TlxError, RuntimeError):
    """The clustering could not finish; the store stays as it was."""


@sigterm_interrupts
def near_dups(store: str | Path, *, workers: int | None = None, progress: bool = True,
              threshold: float = THRESHOLD) -> dict:
    """Cluster `store`'s candidate parts; returns (and records in meta.json) the summary."""
    started = time.monotonic()
    store = Path(store).expanduser().resolve()
    build_id = Store(store).meta.build_id
    index = Store(store).read_index(["id", "code_shard", "code_rg", "ref_chars"])
    rows = index.num_rows
    meter = Progress(rows, progress, "candidates")
    try:
        digest_of, signatures, sets = _signatures(store, index, workers or os.cpu_count() or 1, meter)
        meter.done()
        if progress:
            say(f"near-dups: {len(signatures):,} distinct candidates of {rows:,}; clustering")
        grouping = group(signatures, sets, threshold, (lambda step: say(f"near-dups: {step}")) if progress else None)
        del signatures, sets
    except StoreError:
        raise
    except Exception as exc:  # a broken part file or worker: the store stays as it was
        raise NearDupError(f"{store}: {type(exc).__name__}: {exc}") from exc
    ids = index["id"].to_pylist()
    cluster = _cluster_ids(ids, [None if d < 0 else int(grouping.cluster[d]) for d in digest_of])
    component = _cluster_ids(ids, [None if d < 0 else int(grouping.component[d]) for d in digest_of])
    named = sum(c is not None for c in cluster)
    result = {"done": True, "rows": rows, "clusters": len(set(cluster) - {None}), "rows_in_clusters": named,
              "components": len(set(component) - {None}),
              "rows_in_components": sum(c is not None for c in component), "links": len(grouping.links),
              "distinct_candidates": len(grouping.cluster), "threshold": threshold, "num_perm": NUM_PERM,
              "ngram": NGRAM, "seconds": round(time.monotonic() - started, 2)}
    _publish(store, build_id, {COLUMN: cluster, COMPONENT_COLUMN: component}, ids, result)
    if progress:
        say(f"near-dups: {result['clusters']:,} clusters hold {named:,} of {rows:,} rows, "
            f"{result['components']:,} components hold {result['rows_in_components']:,} ({result['seconds']:.1f} s)")
    return result


def _signatures(store: Path, index: pa.Table, workers: int,
                meter: Progress) -> tuple[np.ndarray, np.ndarray, list[np.ndarray]]:
    """(per row in index order: its distinct candidate's number, -1 for a candidate without tokens; the
    distinct candidates' signatures; their shingle sets)."""
    position = {row_id: i for i, row_id in enumerate(index["id"].to_pylist())}
    digest_of = np.full(index.num_rows, -1, np.int64)
    signatures = np.empty((index.num_rows, NUM_PERM), np.uint32)  # pages are touched only for distinct ones
    sets: list[np.ndarray] = []
    distinct: dict[bytes, int] = {}
    waiting: list[tuple[int, bytes]] = []  # rows whose sketch their process sent in a result not yet taken

    def take(found: list[tuple[str, bytes | None, np.ndarray | None, np.ndarray | None]]) -> None:
        for row_id, key, values, shingle_set in found:
            if key is None:
                continue
            at = distinct.get(key)
            if at is None and values is None:
                waiting.append((position[row_id], key))
                continue
            if at is None:
                at = distinct[key] = len(distinct)
                signatures[at] = values
                sets.append(shingle_set)
            digest_of[position[row_id]] = at
        meter.advance(len(found), "near-dups")

    run = uuid.uuid4().hex
    tasks = [(*task, run) for task in _tasks(store, index)]
    if workers > 1 and index.num_rows >= PARALLEL_MIN_ROWS:
        pool = process_pool(workers)
        finished = False
        try:
            pending: set = set()
            for task in tasks:  # a few tasks in flight: results are taken (and dropped) as they come
                pending.add(pool.submit(signatures_of, *task))
                if len(pending) >= IN_FLIGHT_PER_WORKER * workers:
                    ready, pending = wait(pending, return_when=FIRST_COMPLETED)
                    for future in ready:
                        take(future.result())
            for future in as_completed(pending):
                take(future.result())
            finished = True
        finally:  # interrupted or failed: the workers are stopped, their work dropped
            stop_pool(pool, finished)
    else:
        for task in tasks:
            take(signatures_of(*task))
    for at, key in waiting:
        digest_of[at] = distinct[key]
    return _in_row_order(digest_of, signatures[: len(distinct)], sets)


def _in_row_order(digest_of: np.ndarray, signatures: np.ndarray,
                  sets: list[np.ndarray]) -> tuple[np.ndarray, np.ndarray, list[np.ndarray]]:
    """Distinct candidates renumbered by their first row, whatever order the workers answered in, so the
    clustering (its buckets' anchors, its greedy order) is the same on every run."""
    named = digest_of >= 0
    first = np.full(len(signatures), len(digest_of), np.int64)
    np.minimum.at(first, digest_of[named], np.flatnonzero(named))
    order = np.argsort(first, kind="stable")
    rank = np.empty_like(order)
    rank[order] = np.arange(len(order))
    digest_of[named] = rank[digest_of[named]]
    return digest_of, signatures[order], [sets[k] for k in order.tolist()]


def _tasks(store: Path, index: pa.Table) -> list[tuple[str, list[int], dict[str, int]]]:
    """(code part, its row groups, {row id: reference length}) in chunks of about TASK_ROWS rows."""
    rows_of = defaultdict(dict)
    columns = (index[name].to_pylist() for name in ("code_shard", "code_rg", "id", "ref_chars"))
    for shard, row_group, row_id, ref_chars in zip(*columns, strict=True):
        rows_of[(shard, row_group)][row_id] = ref_chars
    tasks: list[tuple[str, list[int], dict[str, int]]] = []
    for shard, row_group in sorted(rows_of):
        if not tasks or tasks[-1][0] != str(code_path(store, shard)) or len(tasks[-1][2]) >= TASK_ROWS:
            tasks.append((str(code_path(store, shard)), [], {}))
        tasks[-1][1].append(row_group)
        tasks[-1][2].update(rows_of[(shard, row_group)])
    return tasks


def signatures_of(path: str, groups: list[int], ref_chars: dict[str, int],
                  run: str) -> list[tuple[str, bytes | None, np.ndarray | None, np.ndarray | None]]:
    """(row id, digest, signature, shingle set) of `ref_chars`' rows in row groups `groups` (in a worker process):
    the digest None for a candidate without tokens; signature and set None where this process already sent them
    to `run` for that digest (sketching is half a row's work, and most rows of a corpus repeat a normalised text)."""
    if run not in _sent:
        _sent.clear()
        _sent[run] = set()
    sent = _sent[run]
    table = pq.ParquetFile(path).read_row_groups(groups, columns=["id", "x"])
    found = []
    for row_id, x in zip(table["id"].to_pylist(), table["x"].to_pylist(), strict=True):
        if row_id not in ref_chars:
            continue
        toks = tokens(x[ref_chars[row_id]:])
        key = digest(toks) if toks else None
        if key is None or key in sent:
            found.append((row_id, key, None, None))
        else:
            sent.add(key)
            found.append((row_id, key, *sketch(toks)))
    return found


def _cluster_ids(ids: list[str], component: list[int | None]) -> list[str | None]:
    """Each row's group id: the smallest row id of the rows sharing its group, null when it is alone."""
    first: dict[int, str] = {}
    size: dict[int, int] = defaultdict(int)
    for row_id, c in zip(ids, component, strict=True):
        if c is not None:
            size[c] += 1
            if c not in first or row_id < first[c]:
                first[c] = row_id
    return [first[c] if c is not None and size[c] > 1 else None for c in component]


def _publish(store: Path, build_id: str | None, columns: dict[str, list[str | None]], ids: list[str],
             result: dict) -> None:
    """Set the columns (values in `ids`' order) in index.parquet (as it is now: stage 2 may have rewritten it),
    then meta.json, unless the store was rebuilt meanwhile."""
    meta = Store(store).meta
    if meta.build_id != build_id:
        raise NearDupError(f"{store} was rebuilt during the near-duplicate search; run `python -m queries "
                           f"near-dups --store {store}` again")
    index = pq.read_table(store / INDEX_FILE)
    if index.num_rows != len(ids):
        raise NearDupError(f"{store / INDEX_FILE} changed during the near-duplicate search; run it again")
    position = {row_id: i for i, row_id in enumerate(ids)}
    order = [position[row_id] for row_id in index["id"].to_pylist()]
    for name, values in columns.items():
        column = pa.array([values[i] for i in order], pa.string())
        at = index.schema.get_field_index(name)  # -1: a store built before the column
        index = index.set_column(at, name, column) if at >= 0 else index.append_column(name, column)
    replace_file(store / INDEX_FILE, lambda path: pq.write_table(index, path, compression="zstd"))
    write_meta(store, replace(meta, near_dups=result))
