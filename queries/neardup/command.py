"""Near-duplicate clusters of a built store's candidate parts: `python -m queries near-dups --store DIR`, also run
by ingest after stage 2.

Worker processes read the code row groups and turn each candidate part (`x[ref_chars:]`: the cut ingest's text
rules made) into a digest and a MinHash signature (`shingles.py`); rows with equal normalised text share one
signature, and only distinct ones are clustered (`clusters.py`). The index gets `near_dup_cluster`: the id of the
cluster's first row (in id order) for every row of a cluster of two or more, null for a row with no near-copy
(and for every row of a store this never ran on: meta.json's `near_dups.done` tells them apart). index.parquet is
rewritten, then meta.json gets `near_dups: {done, rows, clusters, rows_in_clusters, threshold, num_perm, ngram,
seconds}`, each by an atomic rename; nothing else changes. Interrupted or failed, it leaves the store as it was.
Memory: a signature (1 KiB) per distinct candidate, the row ids, and one group of LSH bands at a time.
"""

from __future__ import annotations

import os
import time
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
from queries.neardup.clusters import THRESHOLD, components
from queries.neardup.shingles import NGRAM, NUM_PERM, signature
from queries.store import INDEX_FILE, Store, StoreError, code_path, replace_file, write_meta

COLUMN = "near_dup_cluster"
TASK_ROWS = 2048
PARALLEL_MIN_ROWS = 5000  # below this, starting worker processes costs more than it saves
IN_FLIGHT_PER_WORKER = 3


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
        digest_of, signatures = _signatures(store, index, workers or os.cpu_count() or 1, meter)
        meter.done()
        if progress:
            say(f"near-dups: {len(signatures):,} distinct candidates of {rows:,}; clustering")
        component = components(signatures, threshold,
                               (lambda done, bands: say(f"near-dups: LSH bands {done}/{bands}")) if progress else None)
    except StoreError:
        raise
    except Exception as exc:  # a broken part file or worker: the store stays as it was
        raise NearDupError(f"{store}: {type(exc).__name__}: {exc}") from exc
    ids = index["id"].to_pylist()
    cluster = _cluster_ids(ids, [None if d < 0 else int(component[d]) for d in digest_of])
    named = sum(c is not None for c in cluster)
    result = {"done": True, "rows": rows, "clusters": len(set(cluster) - {None}), "rows_in_clusters": named,
              "distinct_candidates": len(signatures), "threshold": threshold, "num_perm": NUM_PERM,
              "ngram": NGRAM, "seconds": round(time.monotonic() - started, 2)}
    _publish(store, build_id, dict(zip(ids, cluster, strict=True)), result)
    if progress:
        say(f"near-dups: {result['clusters']:,} clusters hold {named:,} of {rows:,} rows ({result['seconds']:.1f} s)")
    return result


def _signatures(store: Path, index: pa.Table, workers: int, meter: Progress) -> tuple[np.ndarray, np.ndarray]:
    """(per row in index order: its distinct candidate's number, -1 for a candidate without tokens; the
    distinct candidates' signatures)."""
    position = {row_id: i for i, row_id in enumerate(index["id"].to_pylist())}
    digest_of = np.full(index.num_rows, -1, np.int64)
    signatures = np.empty((index.num_rows, NUM_PERM), np.uint32)  # pages are touched only for distinct ones
    distinct: dict[bytes, int] = {}

    def take(found: list[tuple[str, bytes, np.ndarray | None]]) -> None:
        for row_id, digest, values in found:
            if values is None:
                continue
            at = distinct.get(digest)
            if at is None:
                at = distinct[digest] = len(distinct)
                signatures[at] = values
            digest_of[position[row_id]] = at
        meter.advance(len(found), "near-dups")

    tasks = _tasks(store, index)
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
    return _in_row_order(digest_of, signatures[: len(distinct)])


def _in_row_order(digest_of: np.ndarray, signatures: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Distinct candidates renumbered by their first row, whatever order the workers answered in, so the
    clustering (its buckets' anchors) is the same on every run."""
    named = digest_of >= 0
    first = np.full(len(signatures), len(digest_of), np.int64)
    np.minimum.at(first, digest_of[named], np.flatnonzero(named))
    order = np.argsort(first, kind="stable")
    rank = np.empty_like(order)
    rank[order] = np.arange(len(order))
    digest_of[named] = rank[digest_of[named]]
    return digest_of, signatures[order]


def _tasks(store: Path, index: pa.Table) -> list[tuple[str, list[int], dict[str, int]]]:
    """(code part, its row groups, {row id: reference length}) in chunks of about TASK_ROWS rows."""
    rows_of = defaultdict(dict)
    columns = (index[name].to_pylist() for name in ("code_shard", "code_rg", "id", "ref_chars"))
    for shard, group, row_id, ref_chars in zip(*columns, strict=True):
        rows_of[(shard, group)][row_id] = ref_chars
    tasks: list[tuple[str, list[int], dict[str, int]]] = []
    for shard, group in sorted(rows_of):
        if not tasks or tasks[-1][0] != str(code_path(store, shard)) or len(tasks[-1][2]) >= TASK_ROWS:
            tasks.append((str(code_path(store, shard)), [], {}))
        tasks[-1][1].append(group)
        tasks[-1][2].update(rows_of[(shard, group)])
    return tasks


def signatures_of(path: str, groups: list[int], ref_chars: dict[str, int]) -> list[tuple[str, bytes, np.ndarray | None]]:
    """(row id, digest, signature) of `ref_chars`' rows in row groups `groups` (in a worker process)."""
    table = pq.ParquetFile(path).read_row_groups(groups, columns=["id", "x"])
    return [(row_id, *signature(x[ref_chars[row_id]:]))
            for row_id, x in zip(table["id"].to_pylist(), table["x"].to_pylist(), strict=True) if row_id in ref_chars]


def _cluster_ids(ids: list[str], component: list[int | None]) -> list[str | None]:
    """Each row's cluster: the smallest row id of the rows sharing its component, null when it is alone."""
    first: dict[int, str] = {}
    size: dict[int, int] = defaultdict(int)
    for row_id, c in zip(ids, component, strict=True):
        if c is not None:
            size[c] += 1
            if c not in first or row_id < first[c]:
                first[c] = row_id
    return [first[c] if c is not None and size[c] > 1 else None for c in component]


def _publish(store: Path, build_id: str | None, cluster: dict[str, str | None], result: dict) -> None:
    """Set the column in index.parquet (as it is now: stage 2 may have rewritten it), then meta.json, unless the
    store was rebuilt meanwhile."""
    meta = Store(store).meta
    if meta.build_id != build_id:
        raise NearDupError(f"{store} was rebuilt during the near-duplicate search; run `python -m queries "
                           f"near-dups --store {store}` again")
    index = pq.read_table(store / INDEX_FILE)
    if index.num_rows != len(cluster):
        raise NearDupError(f"{store / INDEX_FILE} changed during the near-duplicate search; run it again")
    column = pa.array([cluster[row_id] for row_id in index["id"].to_pylist()], pa.string())
    at = index.schema.get_field_index(COLUMN)  # -1: a store built before the column
    index = index.set_column(at, COLUMN, column) if at >= 0 else index.append_column(COLUMN, column)
    replace_file(store / INDEX_FILE, lambda path: pq.write_table(index, path, compression="zstd"))
    write_meta(store, replace(meta, near_dups=result))
