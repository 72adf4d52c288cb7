"""`evaluate_cancellable`: a sandboxed evaluation from run settings (`run_keys.run_settings`), as a result dict.

Used by the service's workers and by bulk runs. Setting the `cancel` event kills the sandbox's process group
(`evaluate_in_sandbox`'s cancel hook); the evaluation then ends with a `crashed` result flagged `cancelled`,
which the caller discards. `triton_cache_dir` is the shared Triton cache (one subfolder per program hash)."""

from __future__ import annotations

import threading
from typing import Any


def evaluate_cancellable(
    program: str, settings: dict[str, Any], *, result_id: str, row_id: str | None,
    visible_devices: str | None, cancel: threading.Event | None = None, triton_cache_dir: str | None = None,
) -> dict[str, Any]:
    """One sandboxed evaluation of `program` with run settings; a result dict."""
    from runner.options import EvalOptions
    from runner.sandbox import evaluate_in_sandbox

    options = EvalOptions.from_dict({**settings, "visible_devices": visible_devices,
                                     "triton_cache_dir": triton_cache_dir})
    return evaluate_in_sandbox(program, options, result_id=result_id, row_id=row_id, cancel=cancel).to_dict()
