"""The outcomes of evaluating a program, declared once for the runner, CPU triage and the explorer (design §3).

Measured error types (`ErrorType`) name where a failed evaluation stopped; a GPU run and a CPU triage use the same
names, so that a triage's cause and a run's cause compare. `LAUNCH_ERROR` is a Triton launch that refused its
arguments before any kernel compiled or ran (a missing constexpr, an unknown keyword, conflicting autotune
meta-parameters): it depends on the program only, never on the device. Standard library only.
"""

from __future__ import annotations

from enum import StrEnum


class ErrorType(StrEnum):
    """Measured error types (design §3); `ok` is the type of a passing run (stored as error_type null)."""

    OK = "ok"
    SYNTAX_ERROR = "syntax_error"
    IMPORT_ERROR = "import_error"
    MISSING_SYMBOL = "missing_symbol"
    INIT_ERROR = "init_error"
    COMPILE_ERROR = "compile_error"
    LAUNCH_ERROR = "launch_error"
    RUNTIME_ERROR = "runtime_error"
    CUDA_ERROR = "cuda_error"
    SHAPE_MISMATCH = "shape_mismatch"
    OUTPUT_MISMATCH = "output_mismatch"
    NAN_OUTPUT = "nan_output"
    TIMEOUT = "timeout"
    OUT_OF_MEMORY = "out_of_memory"
    CRASHED = "crashed"
    REFERENCE_REJECTED = "reference_rejected"  # the judge refused the reference part (runner/child/reference.py)


# Error types that no device or run changes: the program fails the same way on any GPU, and on the CPU.
DEVICE_INDEPENDENT = frozenset({
    ErrorType.SYNTAX_ERROR, ErrorType.IMPORT_ERROR, ErrorType.MISSING_SYMBOL, ErrorType.INIT_ERROR,
    ErrorType.COMPILE_ERROR, ErrorType.LAUNCH_ERROR, ErrorType.SHAPE_MISMATCH, ErrorType.REFERENCE_REJECTED,
})


class TriageStatus(StrEnum):
    """A CPU triage's verdict (`python -m runner triage`): `passed` = compiles and shapes match, the rest needs a GPU."""

    PASSED = "passed"
    FAILED = "failed"
    NOT_TRIAGED = "not_triaged"
