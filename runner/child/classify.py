"""Exception → measured error type, with a bounded message and a traceback trimmed to the program's frames."""

from __future__ import annotations

import traceback
from dataclasses import dataclass

from common.outcomes import ErrorType

MESSAGE_CHARS = 2000
TRACEBACK_CHARS = 6000

_OOM_TYPES = {"OutOfMemoryError", "MemoryError"}
_OOM_TEXT = ("out of memory", "can't allocate memory", "cannot allocate memory", "defaultcpuallocator")
_CUDA_TYPES = {"AcceleratorError", "CudaError", "CUDARuntimeError"}
_CUDA_TEXT = (
    "cuda error", "illegal memory access", "illegal address", "device-side assert", "misaligned address",
    "triton error [cuda]", "cuda driver error", "unspecified launch failure", "cudaerror",
)
# Triton's compile-time failures; InterpreterError wraps errors raised inside a kernel body under
# TRITON_INTERPRET=1, where the compiler would have rejected the kernel (types, shapes, names).
_COMPILE_TYPES = {
    "CompilationError", "CompileTimeAssertionFailure", "UnsupportedLanguageConstruct", "OutOfResources",
    "PTXASError", "InterpreterError",
}
_COMPILER_PATHS = ("/triton/compiler/", "/triton/backends/", "/triton/language/semantic")
# A launch that refuses its arguments before anything compiles (common.outcomes.ErrorType.LAUNCH_ERROR): raised by
# Triton's launch path (`runtime/jit.py`, `runtime/autotuner.py`) or by the binder it generates (`dynamic_func`):
# a missing constexpr, an unknown keyword, conflicting autotune meta-parameters.
_LAUNCH_PATHS = ("/triton/runtime/jit.py", "/triton/runtime/autotuner.py")
_LAUNCH_FUNCTIONS = ("dynamic_func",)
_LAUNCH_TYPES = {"TypeError", "KeyError", "ValueError", "AssertionError"}

# What a failure at each stage is called when nothing more specific applies.
STAGE_DEFAULT = {
    "load": ErrorType.IMPORT_ERROR,
    "init": ErrorType.INIT_ERROR,
    "correctness": ErrorType.RUNTIME_ERROR,
    "timing": ErrorType.RUNTIME_ERROR,
}


@dataclass
class Failure:
    error_type: ErrorType
    message: str
    exception: str
    traceback: str


def _chain(exc: BaseException) -> list[BaseException]:
    seen: list[BaseException] = []
    cur: BaseException | None = exc
    while cur is not None and all(cur is not s for s in seen):
        seen.append(cur)
        cur = cur.__cause__ or (None if cur.__suppress_context__ else cur.__context__)
    return seen


def _names(exc: BaseException) -> set[str]:
    return {k.__name__ for k in type(exc).__mro__}


def _raised_in_compiler(exc: BaseException) -> bool:
    frames = traceback.extract_tb(exc.__traceback__)
    return bool(frames) and any(p in frames[-1].filename.replace("\\", "/") for p in _COMPILER_PATHS)


def _raised_at_launch(exc: BaseException) -> bool:
    frames = traceback.extract_tb(exc.__traceback__)
    if not frames or type(exc).__name__ not in _LAUNCH_TYPES:
        return False
    last = frames[-1]
    return last.name in _LAUNCH_FUNCTIONS or any(p in last.filename.replace("\\", "/") for p in _LAUNCH_PATHS)


def error_type_of(exc: BaseException, stage: str) -> ErrorType:
    chain = _chain(exc)
    texts = [str(e).lower() for e in chain]
    if any(_names(e) & _OOM_TYPES for e in chain) or any(t in s for s in texts for t in _OOM_TEXT):
        return ErrorType.OUT_OF_MEMORY
    if any(_names(e) & _CUDA_TYPES for e in chain) or any(t in s for s in texts for t in _CUDA_TEXT):
        return ErrorType.CUDA_ERROR
    if any(_names(e) & _COMPILE_TYPES for e in chain) or any(_raised_in_compiler(e) for e in chain):
        return ErrorType.COMPILE_ERROR
    if _raised_at_launch(exc):
        return ErrorType.LAUNCH_ERROR
    return STAGE_DEFAULT.get(stage, ErrorType.RUNTIME_ERROR)


def bounded(text: str, limit: int, keep: str = "head") -> str:
    if len(text) <= limit:
        return text
    cut = len(text) - limit
    if keep == "tail":
        return f"[... {cut} chars cut]\n" + text[-limit:]
    return text[:limit] + f"\n[... {cut} chars cut]"


def program_traceback(exc: BaseException, program_path: str, limit: int = TRACEBACK_CHARS) -> str:
    """Format the exception chain keeping, per exception, the program's own frames plus the frame that raised;
    all frames when none are the program's."""
    parts: list[str] = []
    chain = _chain(exc)
    for i, e in enumerate(reversed(chain)):
        frames = traceback.extract_tb(e.__traceback__)
        mine = [f for f in frames if f.filename == program_path]
        if mine:
            keep = mine + ([frames[-1]] if frames[-1].filename != program_path else [])
            if len(keep) < len(frames):
                parts.append(f"  [{len(frames) - len(keep)} harness/library frames hidden]\n")
        else:
            keep = frames
        parts.append("Traceback (most recent call last):\n")
        parts.extend(traceback.format_list(keep))
        parts.extend(traceback.format_exception_only(type(e), e))
        if i < len(chain) - 1:
            parts.append("\nwhich caused:\n\n")
    return bounded("".join(parts), limit, keep="tail")


def qualified_name(exc: BaseException) -> str:
    cls = type(exc)
    return cls.__name__ if cls.__module__ == "builtins" else f"{cls.__module__}.{cls.__qualname__}"


def classify(exc: BaseException, stage: str, program_path: str, context: str = "") -> Failure:
    text = f"{type(exc).__name__}: {exc}"
    if context:
        text = f"{context}: {text}"
    return Failure(
        error_type=error_type_of(exc, stage),
        message=bounded(text, MESSAGE_CHARS),
        exception=qualified_name(exc),
        traceback=program_traceback(exc, program_path),
    )
