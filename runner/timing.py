"""CUDA timing (design §4): warm-up outside the timed set; per trial an L2 flush, a start event, the call, a
device synchronize (waits for side streams too), an end event; adaptive stopping on the relative standard
error of the median, a time budget or max_trials."""

from __future__ import annotations

import math
import statistics
import time
from collections.abc import Callable
from typing import Any

from runner.options import TimingOptions
from runner.result import Timing

MIN_TRIALS_UNDER_BUDGET = 3  # the budget may stop a slow program before min_trials, never before this
CHECK_EVERY = 10  # trials between two looks at the stopping rule


def _percentile(sorted_ms: list[float], q: float) -> float:
    k = (len(sorted_ms) - 1) * q
    lo, hi = math.floor(k), math.ceil(k)
    return sorted_ms[lo] + (sorted_ms[hi] - sorted_ms[lo]) * (k - lo)


def rel_err_of_median(times_ms: list[float]) -> float:
    """Relative standard error of the median (normal approximation: 1.2533 * std / sqrt(n) / median)."""
    n = len(times_ms)
    if n < 2:
        return math.inf
    med = statistics.median(times_ms)
    return 1.2533 * statistics.stdev(times_ms) / math.sqrt(n) / med if med > 0 else math.inf


def summarize(times_ms: list[float], loop_s: float | None = None) -> Timing:
    s = sorted(times_ms)
    mean = statistics.fmean(s)
    std = statistics.stdev(s) if len(s) > 1 else 0.0
    return Timing(
        median_ms=statistics.median(s), mean_ms=mean, std_ms=std, min_ms=s[0], max_ms=s[-1], n=len(s),
        cv=std / mean if mean > 0 else None, p10_ms=_percentile(s, 0.1), p90_ms=_percentile(s, 0.9),
        rel_err=rel_err_of_median(s) if len(s) > 1 else None, loop_s=loop_s,
    )


def time_cuda_events(fn: Callable[[], Any], opts: TimingOptions) -> tuple[Timing, list[str]]:
    """Time `fn` on the current CUDA device; returns the summary and flags about how the loop ended."""
    import torch

    t0 = time.perf_counter()
    for _ in range(opts.warmup):
        fn()
    torch.cuda.synchronize()
    flush = (
        torch.empty(opts.l2_flush_bytes // 4, dtype=torch.int32, device="cuda") if opts.l2_flush else None
    )
    times: list[float] = []
    flags: list[str] = []
    deadline = time.perf_counter() + opts.time_budget_s
    while len(times) < opts.max_trials:
        if flush is not None:
            flush.zero_()
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        fn()
        torch.cuda.synchronize()
        end.record()
        end.synchronize()
        times.append(start.elapsed_time(end))
        n = len(times)
        if time.perf_counter() > deadline and n >= MIN_TRIALS_UNDER_BUDGET:
            flags.append("timing_budget_spent")
            if n < opts.min_trials:
                flags.append("timing_below_min_trials")
            break
        if n >= opts.min_trials and n % CHECK_EVERY == 0 and rel_err_of_median(times) < opts.target_rel_err:
            break
    else:
        flags.append("timing_max_trials")
    del flush
    return summarize(times, time.perf_counter() - t0), flags


def time_do_bench(fn: Callable[[], Any], opts: TimingOptions) -> tuple[Timing, list[str]]:
    """Cross-check: triton.testing.do_bench's median (its own warm-up, flush and repetition rules)."""
    import triton.testing

    t0 = time.perf_counter()
    rep_ms = min(1000.0, max(100.0, opts.time_budget_s * 1000.0))
    times = [float(v) for v in triton.testing.do_bench(fn, warmup=25, rep=rep_ms, return_mode="all")]
    timing = summarize(times, time.perf_counter() - t0)
    return timing, ["timing_do_bench"]


def time_callable(fn: Callable[[], Any], opts: TimingOptions) -> tuple[Timing, list[str]]:
    return time_do_bench(fn, opts) if opts.method == "do_bench" else time_cuda_events(fn, opts)


def method_record(opts: TimingOptions) -> dict[str, Any]:
    """The timing method and all its parameters, stored with every result."""
    name = "triton_do_bench_median" if opts.method == "do_bench" else "cuda_events_l2flush_devsync_adaptive"
    return {"name": name, **{k: getattr(opts, k) for k in opts.__dataclass_fields__}}
