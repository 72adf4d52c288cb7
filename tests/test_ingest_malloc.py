"""Ingest's workers keep the memory they free (`queries.ingest.malloc`); a process without the setting gives a
large freed block back to the kernel at once, so the check can tell the two apart."""

from __future__ import annotations

import multiprocessing
import sys

import pytest

from queries.ingest.processes import process_pool, stop_pool

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="glibc's malloc on Linux")

BLOCK_MB = 96  # over glibc's largest dynamic threshold (32 MB): mapped on its own unless told otherwise


def rss_given_back_mb(block_mb: int) -> float:
    """MB of resident memory the process gives back when it frees a block of `block_mb` MB it had touched."""
    import numpy as np

    block = np.ones(block_mb << 17)  # float64: 8 bytes each, every page touched
    before = _rss_mb()
    del block
    return before - _rss_mb()


def _rss_mb() -> float:
    with open("/proc/self/status", encoding="ascii") as status:
        return next(int(line.split()[1]) for line in status if line.startswith("VmRSS:")) / 1024


def test_ingest_workers_keep_the_memory_they_free():
    pool = process_pool(1)
    try:
        kept_by_worker = pool.submit(rss_given_back_mb, BLOCK_MB).result(timeout=120)
    finally:
        stop_pool(pool, True)
    with multiprocessing.get_context("spawn").Pool(1) as plain:
        given_back_by_default = plain.apply(rss_given_back_mb, (BLOCK_MB,))
    assert given_back_by_default > BLOCK_MB * 0.9
    assert kept_by_worker < BLOCK_MB * 0.1


def rss_given_back_on_request_mb(block_mb: int) -> float:
    """MB of resident memory a worker gives back when told to (`give_back_freed_memory`), after freeing a block
    it kept."""
    from queries.ingest.malloc import give_back_freed_memory

    kept = rss_given_back_mb(block_mb)
    before = _rss_mb()
    assert give_back_freed_memory()
    return before - _rss_mb() + kept


def test_a_worker_gives_the_memory_it_kept_back_when_told():
    """The search index's build asks for it before it starts and after each part (issue 48: the main process's
    freed batches counted beside two workers' builds)."""
    pool = process_pool(1)
    try:
        given_back = pool.submit(rss_given_back_on_request_mb, BLOCK_MB).result(timeout=120)
    finally:
        stop_pool(pool, True)
    assert given_back > BLOCK_MB * 0.9
