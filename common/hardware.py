"""The hardware label of a run: the GPU's name for CUDA runs, `CPU_LABEL` for runs under Triton's interpreter.

Results carry `device` = "cuda" or `CPU_LABEL`; bulk resume and the explorer's verdicts tell hardware apart by
the label (`hardware_label`). Standard library only.
"""

from __future__ import annotations

from typing import Any

CPU_LABEL = "cpu-interpreter"


def result_device(device: str) -> str:
    """The `device` a result of a run on `device` ("cuda" or "cpu") carries."""
    return "cuda" if device == "cuda" else CPU_LABEL


def hardware_label(result: dict[str, Any]) -> str:
    """The hardware a stored result ran on: its GPU name (`system["gpu"]`), or `CPU_LABEL`."""
    if result.get("device") == "cuda":
        return str((result.get("system") or {}).get("gpu") or "cuda")
    return CPU_LABEL
