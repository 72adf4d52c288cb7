"""What actually ran: the kernels one untimed `ModelNew` call launched (design §4, issue 21).

Triton launches are counted at Triton's own launch entry (`JITFunction.run`, and `InterpretedFunction.run`
under the CPU interpreter), by kernel name. On CUDA, torch's profiler records every GPU kernel of the call with
its GPU time; a kernel is Triton's when its name is one of the program's Triton kernels (found among the
module's objects) or one that the launch hook saw. The record (`RunResult.launches`):

`{"checked", "method", "triton_launches", "triton_ms", "other_launches", "other_ms", "triton_share",
"top_kernels": [{"name", "count", "ms", "triton"}], "reason"}`

Under the interpreter there are no GPU times: the launch count is checked, the GPU-time share is not (None,
with the reason). Flags: `no_triton_launch` (checked, and no Triton kernel ran), `launches_not_checked` (the
accounting itself failed). The accounting runs in the candidate's process, so a program that patches torch's
profiler or Triton's runtime can mislead it; the static checks (ingest) are the second look."""

from __future__ import annotations

import contextlib
from collections import Counter
from collections.abc import Callable, Iterator
from typing import Any

TOP_KERNELS = 5


def _jit_classes() -> list[type]:
    classes = []
    with contextlib.suppress(ImportError):
        from triton.runtime.jit import JITFunction

        classes.append(JITFunction)
    with contextlib.suppress(ImportError):
        from triton.runtime.interpreter import InterpretedFunction

        classes.append(InterpretedFunction)
    return classes


def _kernel_name(fn: Any) -> str:
    inner = getattr(fn, "fn", None)
    return str(getattr(inner, "__name__", None) or getattr(fn, "__name__", None) or type(fn).__name__)


@contextlib.contextmanager
def counting_triton_launches() -> Iterator[Counter]:
    """Count Triton launches by kernel name while the block runs (warm-up compiles and launches that raise do
    not count)."""
    counts: Counter = Counter()
    originals = []
    for cls in _jit_classes():
        original = cls.run

        def run(self: Any, *args: Any, _original: Callable[..., Any] = original, **kwargs: Any) -> Any:
            launched = _original(self, *args, **kwargs)  # a launch that raises launched nothing
            if not kwargs.get("warmup"):
                counts[_kernel_name(self)] += 1
            return launched

        originals.append((cls, original))
        cls.run = run
    try:
        yield counts
    finally:
        for cls, original in originals:
            cls.run = original


def declared_kernels(module: Any) -> set[str]:
    """Names of the Triton kernels a module defines (module globals and class attributes; autotuner and
    heuristics wrappers unwrapped)."""
    classes = tuple(_jit_classes())
    names: set[str] = set()

    def visit(obj: Any, depth: int = 0) -> None:
        while depth < 4 and not isinstance(obj, classes) and hasattr(obj, "fn"):
            obj, depth = obj.fn, depth + 1
        if classes and isinstance(obj, classes):
            names.add(_kernel_name(obj))

    for value in list(vars(module).values()):
        visit(value)
        if isinstance(value, type):
            for attr in list(vars(value).values()):
                visit(attr)
    return names


def _is_triton(name: str, triton_names: set[str]) -> bool:
    return any(name == n or name.startswith(n + "_") for n in triton_names)


def _profiled_kernels(call: Callable[[], Any]) -> list[tuple[str, float]]:
    """(name, GPU ms) of every GPU kernel, copy and set the call launched."""
    import torch
    from torch.autograd import DeviceType
    from torch.profiler import ProfilerActivity, profile

    torch.cuda.synchronize()
    with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as prof:
        call()
        torch.cuda.synchronize()
    return [(e.name, e.time_range.elapsed_us() / 1000.0) for e in prof.events() if e.device_type == DeviceType.CUDA]


def warm_profiler() -> None:
    """Start torch's profiler once (CUPTI's set-up takes seconds) while a spare waits for its job; a failure shows
    up again in the job's launch check."""
    import os

    import torch

    if os.environ.get("TRITON_INTERPRET") == "1" or not torch.cuda.is_available():
        return
    x = torch.ones(8, device="cuda")
    _profiled_kernels(lambda: x.sum())


def account(call: Callable[[], Any], module: Any, device: str) -> dict[str, Any]:
    """Run `call` once and say what it launched (see the module's docstring); `call` raising propagates."""
    declared = declared_kernels(module)
    record: dict[str, Any] = {"checked": True, "triton_ms": None, "other_launches": None, "other_ms": None,
                              "triton_share": None, "top_kernels": [], "reason": None}
    if device != "cuda":
        with counting_triton_launches() as counts:
            call()
        record.update(method="triton_launch_hook", triton_launches=sum(counts.values()),
                      top_kernels=[{"name": n, "count": c, "ms": None, "triton": True} for n, c in counts.most_common(TOP_KERNELS)],
                      reason="the CPU interpreter gives no GPU times: Triton launches counted, GPU-time share not checked")
        return record
    with counting_triton_launches() as counts:
        kernels = _profiled_kernels(call)
    triton_names = declared | set(counts)
    by_name: dict[str, list[float]] = {}
    for name, ms in kernels:
        by_name.setdefault(name, []).append(ms)
    triton = [(n, ms) for n, ms in kernels if _is_triton(n, triton_names)]
    other = [(n, ms) for n, ms in kernels if not _is_triton(n, triton_names)]
    triton_ms, other_ms = sum(ms for _, ms in triton), sum(ms for _, ms in other)
    top = sorted(by_name.items(), key=lambda kv: -sum(kv[1]))[:TOP_KERNELS]
    record.update(method="torch_profiler+triton_launch_hook",
                  triton_launches=max(len(triton), sum(counts.values())), triton_ms=round(triton_ms, 4),
                  other_launches=len(other), other_ms=round(other_ms, 4),
                  triton_share=round(triton_ms / (triton_ms + other_ms), 4) if triton_ms + other_ms > 0 else None,
                  top_kernels=[{"name": n, "count": len(v), "ms": round(sum(v), 4), "triton": _is_triton(n, triton_names)}
                               for n, v in top])
    return record


def not_checked(reason: str) -> dict[str, Any]:
    return {"checked": False, "method": None, "triton_launches": None, "triton_ms": None, "other_launches": None,
            "other_ms": None, "triton_share": None, "top_kernels": [], "reason": reason}


def flags_of(record: dict[str, Any]) -> list[str]:
    if not record.get("checked"):
        return ["launches_not_checked"]
    return ["no_triton_launch"] if not record.get("triton_launches") else []
