"""glibc's malloc told to keep the memory ingest's processes free, instead of giving it back to the kernel at once.

Every batch allocates and frees arrays of megabytes (numpy's, the index's pairs and postings: tens of MB in a
merge). glibc maps a block over its threshold (128 kB, rising to at most 32 MB as it sees such blocks freed)
directly from the kernel and unmaps it on free, and trims the heap's top once over twice that: the next batch's
arrays then fault every page in again, zeroed by the kernel. On the 601k-row file (`scripts/bench_ingest.py`, the
2-core VM, 3 runs each, in turn: BENCHMARKS.md, issue 25) stage 1 took 114.7 CPU s, and 104.2 with these
settings set in every process; without the search index 70.8 and 66.5. Memory a process freed stays its own up
to `TRIM_ABOVE`: all processes' peak there was 2.0-2.3 GB, and 2.4 GB with them (the budget is 3 GB). Ingest's
own processes only: the explorer, which may build the sample store in its process, keeps glibc's defaults.
"""

from __future__ import annotations

import ctypes
import sys

M_TRIM_THRESHOLD, M_MMAP_THRESHOLD = -1, -3  # mallopt's parameters (malloc.h)
MAP_ABOVE = 256 << 20  # blocks this large or larger are still mapped (and unmapped) on their own
TRIM_ABOVE = 1 << 30  # the heap's free top is given back once this large


def keep_freed_memory() -> bool:
    """Set this process's malloc thresholds; False where that is not glibc's malloc on Linux (nothing changed)."""
    if not sys.platform.startswith("linux"):
        return False
    try:
        mallopt = ctypes.CDLL(None).mallopt
    except (OSError, AttributeError):
        return False
    return bool(mallopt(M_MMAP_THRESHOLD, MAP_ABOVE)) and bool(mallopt(M_TRIM_THRESHOLD, TRIM_ABOVE))


def give_back_freed_memory() -> bool:
    """Give the memory this process freed back to the kernel now (glibc's malloc_trim), where it kept it
    (`keep_freed_memory`): before the search index is built, so that the main process's freed batches and a
    worker's last part do not count beside the parts being built (issue 48); False where that is not glibc."""
    if not sys.platform.startswith("linux"):
        return False
    try:
        return bool(ctypes.CDLL(None).malloc_trim(0))
    except (OSError, AttributeError):
        return False
