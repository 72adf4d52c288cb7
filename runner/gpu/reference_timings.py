"""Model's timing, measured once per reference text and GPU in a bulk run (issue 22).

Rows of one problem share their reference part (the program's text before the candidate's cut,
`runner.child.reference`): the 300 real rows of BENCHMARKS.md's selection hold 183 distinct references, the
dataset's 601k rows a few thousand. Timing Model again for each of them costs the GPU's exclusive time, which
bounds a shared GPU's throughput, and measures the same thing: KernelBench itself times each problem's reference
once per hardware and keeps it (its baseline file). So a bulk run (`evaluate_on_slot(..., reuse_reference_timing=
True)`) hands a job the Model timing an earlier job of this process measured for the same reference text, the same
settings and the same GPU; the judge then times ModelNew alone and says so (`reference_timing_reused` and
`method.reference_timing`). The key is the exact reference text, so a row whose reference was changed gets its
own timing. The service's re-runs measure both every time (a re-run is asked to confirm a timing).

Only a correct run's reference timing is kept (a failed run stops before timing), and not one that was itself
reused or has no timing to reuse."""

from __future__ import annotations

import hashlib
import threading
from typing import Any

from runner.result import REF_TIMING_REUSED as REUSED_FLAG
from runner.result import RunResult


def reference_key(program: str, options_key: str, gpu: str) -> str | None:
    """The reuse key of a program's reference timing: its reference text, the run's settings and the GPU; None
    when the program has no reference part the judge would find (it then times nothing anyway)."""
    from runner.child.reference import reference_source

    try:
        source = reference_source(program)
    except Exception:  # SyntaxError, NoReference, a parser's RecursionError or MemoryError on hostile text
        return None
    blob = "\0".join((source, options_key, gpu)).encode("utf-8", "surrogatepass")
    return hashlib.sha256(blob).hexdigest()


class ReferenceTimings:
    """This process's Model timings by `reference_key`, with the run each came from."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._by_key: dict[str, dict[str, Any]] = {}

    def lookup(self, key: str | None) -> dict[str, Any] | None:
        if key is None:
            return None
        with self._lock:
            return self._by_key.get(key)

    def remember(self, key: str | None, verdict: RunResult) -> None:
        """Keep a correct run's Model timing (and its flags) under `key`, unless one is kept already."""
        if key is None or verdict.ref_timing is None or REUSED_FLAG in verdict.flags:
            return
        entry = {"timing": verdict.ref_timing.to_dict(),
                 "flags": [f[len("ref_"):] for f in verdict.flags if f.startswith("ref_")],
                 "from": {"result_id": verdict.id, "row_id": verdict.row_id, "finished_at": verdict.finished_at}}
        with self._lock:
            self._by_key.setdefault(key, entry)

    def __len__(self) -> int:
        with self._lock:
            return len(self._by_key)


REFERENCE_TIMINGS = ReferenceTimings()
