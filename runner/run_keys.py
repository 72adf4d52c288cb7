"""What makes two runs "the same run": used by the service (duplicate jobs) and bulk runs (resume).

A run is identified by row id + program hash + options key + hardware label:
- the options key hashes the evaluation settings a submitter chooses (`device`, `timeout_s`, `trials`, with
  `EvalOptions` defaults filled in); it is stamped into every stored result as `method["options_key"]`, so results
  written by the service and by bulk runs are recognised by each other;
- the hardware label is the GPU name (`system["gpu"]`) for CUDA runs, `cpu-interpreter` otherwise.
"""

from __future__ import annotations

import hashlib
import json
from typing import Any

from runner.options import EvalOptions

CPU_LABEL = "cpu-interpreter"


def run_settings(device: str, timeout_s: float | None = None, trials: int | None = None) -> dict[str, Any]:
    """The submitter-chosen settings of a run, defaults filled in (device must already be cuda or cpu)."""
    defaults = EvalOptions()
    return {
        "device": device,
        "timeout_s": float(defaults.timeout_s if timeout_s is None else timeout_s),
        "trials": int(defaults.trials if trials is None else trials),
    }


def options_key(settings: dict[str, Any]) -> str:
    """A stable hash of run settings (key order does not matter)."""
    blob = json.dumps(settings, sort_keys=True, separators=(",", ":"), default=str)
    return hashlib.sha256(blob.encode("utf-8")).hexdigest()[:16]


def stamp(result: dict[str, Any], settings: dict[str, Any]) -> dict[str, Any]:
    """Record the options key in the result's `method` (in place; returns the result)."""
    method = result.get("method")
    result["method"] = (dict(method) if isinstance(method, dict) else {}) | {"options_key": options_key(settings)}
    return result


def hardware_label(result: dict[str, Any]) -> str:
    if result.get("device") == "cuda":
        return str((result.get("system") or {}).get("gpu") or "cuda")
    return CPU_LABEL


def result_key(result: dict[str, Any]) -> tuple[str, str, str, str] | None:
    """(row id, program hash, options key, hardware) of a stored result; None when it cannot be matched."""
    method = result.get("method") if isinstance(result.get("method"), dict) else {}
    if not result.get("row_id") or not result.get("program_sha256") or not method.get("options_key"):
        return None
    return (result["row_id"], result["program_sha256"], method["options_key"], hardware_label(result))
