"""Parse program texts for ingest, in worker processes when there is enough work to pay for them."""

from __future__ import annotations

import multiprocessing
import os
from concurrent.futures import ProcessPoolExecutor

from queries.parse import parse_program

PARALLEL_MIN_ROWS = 5000  # below this, starting workers costs more than it saves
CHUNK_ROWS = 256

# What the index keeps of a parse (field order of `parse_rows` tuples).
FIELDS = ("problem_key", "title", "static_error", "parse_mode", "n_kernels", "kernel_names", "autotuned",
          "candidate_key", "n_chars", "ref_chars", "cand_chars")


def parse_rows(texts: list[str | None]) -> list[tuple | str | None]:
    """One entry per text: a FIELDS tuple, None for a missing text, or a message when the parser crashed."""
    out: list[tuple | str | None] = []
    for text in texts:
        if text is None:
            out.append(None)
            continue
        try:
            p = parse_program(text)
        except Exception as exc:  # parse_program is total; this keeps one bad row from ending a long build
            out.append(f"{type(exc).__name__}: {exc}")
            continue
        names = [k.name for k in p.kernels]
        out.append((p.problem_key, p.title or None, p.static_error, p.mode, len(names), names,
                    any(k.autotuned for k in p.kernels), p.candidate_key, len(text), len(p.reference),
                    len(p.candidate)))
    return out


class _Done:
    def __init__(self, value):
        self.value = value

    def get(self):
        return self.value


class _Joined:
    """Results of several chunks submitted together, concatenated in order."""

    def __init__(self, parts):
        self.parts = parts

    def get(self):
        return [row for part in self.parts for row in part.result()]


class ParsePool:
    """`submit(texts).get()` -> parse_rows(texts); `depth` is how many submissions may be in flight.

    Workers come from a forkserver (safe in a threaded parent); a worker that dies makes `get` raise
    BrokenProcessPool instead of hanging.
    """

    def __init__(self, workers: int | None, total_rows: int):
        workers = workers or os.cpu_count() or 1
        self.pool = None
        self.depth = 0
        if workers > 1 and total_rows >= PARALLEL_MIN_ROWS:
            self.pool = ProcessPoolExecutor(workers, mp_context=multiprocessing.get_context("forkserver"))
            self.depth = 2 * workers

    def submit(self, texts: list[str | None]):
        if self.pool is None:
            return _Done(parse_rows(texts))
        chunks = [texts[i : i + CHUNK_ROWS] for i in range(0, len(texts), CHUNK_ROWS)]
        return _Joined([self.pool.submit(parse_rows, c) for c in chunks])

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        if self.pool is not None:
            self.pool.shutdown(wait=True, cancel_futures=exc[0] is not None)
