"""Worker processes for ingest (per-program fields, references, syntax check), all started from one forkserver.

The forkserver imports the modules the workers run (pyarrow, numpy, the parser: ~0.7 CPU s) once, before any
worker starts; each worker is forked from it with them already imported, instead of importing them again itself.
"""

from __future__ import annotations

import multiprocessing
from concurrent.futures import ProcessPoolExecutor

# what the workers run; a forkserver already running (started earlier in this process) keeps what it has
PRELOAD = ["queries.ingest.program_fields", "queries.ingest.refs", "queries.ingest.search_index",
           "queries.ingest.syntax_check"]


def process_pool(workers: int) -> ProcessPoolExecutor:
    context = multiprocessing.get_context("forkserver")
    context.set_forkserver_preload(PRELOAD)
    return ProcessPoolExecutor(workers, mp_context=context)
