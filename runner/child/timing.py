"""CUDA timing (design §4) that agrees with `triton.testing.do_bench` and still catches side-stream work.

Timed trials run like do_bench's: per trial an L2 flush (a 256 MB write), a start event, the call, an end event,
with no host synchronize between trials inside a batch of CHECK_EVERY trials (the host runs ahead, so launch
overhead is not timed as GPU time); the device is synchronized after each batch (which also waits for work on
other streams) and the stopping rule is looked at. Events only see the current stream, so a check pass first
times SIDE_CHECK_TRIALS calls one by one, each followed by a device synchronize, taking both the event time and
the host wall time. An empty call timed the same way once per process (`calibrate`) gives the host overhead of a
synced trial. When the wall median exceeds the event median by more than that overhead plus max(0.05 ms, half
the event median), work ran outside the current stream: the result is flagged `side_stream_suspect` and synced
wall times minus the overhead become the timing (`decide`). The batched trials also time how long each call takes
to return on the host; when that launch cost is at least 90% of the GPU time the result is flagged `launch_bound`
(such timings follow host load from run to run). Warm-up calls stay out of the timed set; trials stop
adaptively on the relative standard error of the median (after min_trials, or after min_time_s and
MIN_TRIALS_AFTER_MIN_TIME for slow calls), a time budget or max_trials. The side-stream check takes fewer trials
(down to MIN_SIDE_CHECK_TRIALS) when a call is slow, SIDE_CHECK_BUDGET_S at most.

Slow calls (SLOW_CALL_S or more each: the GPU's own run-to-run spread dwarfs a host synchronize there, whose
event time it does not enter) cost the GPU's exclusive time, which bounds a shared GPU's throughput, so nothing is
done twice for them: warm-up stops after WARMUP_BUDGET_S of calls (the correctness trials already ran the call),
the side-stream check's event times are the first samples when no side-stream work is suspected, and trials come
SLOW_BATCH_S of calls at a time (a 1.4 s call: 5 calls in all, within its 5 s budget, where it took 16; a 10 ms
call: 23, where it took 53 before issue 22's second cut). At least one batch of queued trials follows the
side checks, so every call gets its launch cost measured (`launch_bound`)."""

from __future__ import annotations

import math
import statistics
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from runner.options import TimingOptions
from runner.result import Timing

MIN_TRIALS_UNDER_BUDGET = 3  # the budget may stop a slow program before min_trials, never before this
CHECK_EVERY = 10  # trials between two looks at the stopping rule
CALIBRATION_TRIALS = 50
SIDE_CHECK_TRIALS = 20
MIN_SIDE_CHECK_TRIALS = 3
SIDE_CHECK_BUDGET_S = 0.1
MIN_TRIALS_AFTER_MIN_TIME = 5
WARMUP_BUDGET_S = 0.1  # warm-up stops once its calls took this long (after one call at least)
SLOW_CALL_S = 0.005  # a call at least this long: its side-check trials are samples, its batches SLOW_BATCH_S long
SLOW_BATCH_S = 0.1
SIDE_STREAM_MIN_MS = 0.05  # wall - event - overhead above max(this, SIDE_STREAM_FRACTION * event): suspect
SIDE_STREAM_FRACTION = 0.5
AUTOTUNE_MIN_REPS = 5  # measured calls per autotune config, however slow (Triton's 100 ms: 6 of a 16 ms config)
AUTOTUNE_ESTIMATE_CALLS = 3  # calls that estimate a config's time (they warm up too)
LAUNCH_BOUND_FRACTION = 0.9  # host launch time of a call / its GPU time at or above which it is launch-bound
# (on an H200, GPU-bound rows measured at most 0.7, the rows whose timings moved 15-45% between runs 1.04-1.6)
MIN_FRESH_TRIALS, FRESH_BUDGET_S = 1, 0.25  # slow calls: fewer pairs, about this many seconds of calls
FRESH_TRIALS = 5  # calls timed with repeated, and with fresh, values written into the inputs (`time_repeated_and_fresh`)
FRESH_SLOWER_FACTOR, FRESH_SLOWER_MIN_MS = 1.5, 0.01  # over both: `faster_on_repeated_inputs`
DO_BENCH_FLAG = "timing_do_bench"  # on results timed by the do_bench cross-check
SOURCE_EVENTS = "cuda_events"
SOURCE_WALL = "wall_minus_host_overhead"

_host_overhead_ms: float | None = None  # calibrated once per process (each job is its own process)


def _percentile(sorted_ms: list[float], q: float) -> float:
    k = (len(sorted_ms) - 1) * q
    lo, hi = math.floor(k), math.ceil(k)
    return sorted_ms[lo] + (sorted_ms[hi] - sorted_ms[lo]) * (k - lo)


def rel_err_of_median(times_ms: list[float]) -> float:
    """Relative standard error of the median: 1.2533 * sigma / sqrt(n) / median, sigma estimated robustly as
    1.4826 * MAD (the median's error depends on how dense the samples are around it, which a few far outliers
    do not change). With the standard deviation as sigma (before issue 22), a few outliers of a GPU-bound call
    (3.7 ms, a CV of 0.32 where the MAD's was 0.045) kept the loop going to max_trials: 1,000 calls, 4 s of
    the GPU alone for one model where 100 calls already gave the median within 1%."""
    n = len(times_ms)
    if n < 2:
        return math.inf
    med = statistics.median(times_ms)
    if med <= 0:
        return math.inf
    mad = statistics.median(abs(t - med) for t in times_ms)
    return 1.2533 * 1.4826 * mad / math.sqrt(n) / med


def summarize(times_ms: list[float], loop_s: float | None = None, **extra: Any) -> Timing:
    s = sorted(times_ms)
    mean = statistics.fmean(s)
    std = statistics.stdev(s) if len(s) > 1 else 0.0
    return Timing(
        median_ms=statistics.median(s), mean_ms=mean, std_ms=std, min_ms=s[0], max_ms=s[-1], n=len(s),
        cv=std / mean if mean > 0 else None, p10_ms=_percentile(s, 0.1), p90_ms=_percentile(s, 0.9),
        rel_err=rel_err_of_median(s) if len(s) > 1 else None, loop_s=loop_s, **extra,
    )


@dataclass(frozen=True)
class Decision:
    """Which samples to report: the event times, or (side-stream work suspected) the wall times minus overhead."""

    side_stream_suspect: bool
    samples_ms: list[float]
    event_median_ms: float
    wall_median_ms: float
    host_overhead_ms: float

    @property
    def source(self) -> str:
        return SOURCE_WALL if self.side_stream_suspect else SOURCE_EVENTS


def decide(event_ms: list[float], wall_ms: list[float], host_overhead_ms: float) -> Decision:
    """Compare per-trial event and wall times (same trials) given the empty call's wall median."""
    if not event_ms or len(event_ms) != len(wall_ms):
        raise ValueError(f"need as many wall as event samples (>0), got {len(wall_ms)} and {len(event_ms)}")
    ev, wall = statistics.median(event_ms), statistics.median(wall_ms)
    unexplained = wall - ev - host_overhead_ms
    suspect = unexplained > max(SIDE_STREAM_MIN_MS, SIDE_STREAM_FRACTION * ev)
    samples = [max(w - host_overhead_ms, 0.0) for w in wall_ms] if suspect else list(event_ms)
    return Decision(suspect, samples, ev, wall, host_overhead_ms)


_perf_counter = time.perf_counter  # bound at import, before any program runs: patching time.perf_counter is moot
_clocks: dict[str, Any] = {}


def pin_clocks() -> None:
    """Bind the CUDA clock functions now (the child calls this before loading the program), so that a program
    that monkey-patches `torch.cuda.Event` or `torch.cuda.synchronize` does not change what the harness reads."""
    import torch

    event = torch.cuda.Event
    _clocks.update(event=event, record=event.record, elapsed=event.elapsed_time, sync=torch.cuda.synchronize)


def _event() -> Any:
    if not _clocks:
        pin_clocks()
    return _clocks["event"](enable_timing=True)


def _elapsed(start: Any, end: Any) -> float:
    return _clocks["elapsed"](start, end)


def _sync() -> None:
    if not _clocks:
        pin_clocks()
    _clocks["sync"]()


def _trial(fn: Callable[[], Any], flush: Any) -> tuple[float, float]:
    """One timed call: (event ms, wall ms)."""

    if flush is not None:
        flush.zero_()
    start, end = _event(), _event()
    _clocks["record"](start)
    w0 = _perf_counter()
    fn()
    _clocks["record"](end)
    _sync()
    w1 = _perf_counter()
    return _elapsed(start, end), (w1 - w0) * 1000.0


def _flush_buffer(opts: TimingOptions) -> Any:
    import torch

    return torch.empty(opts.l2_flush_bytes // 4, dtype=torch.int32, device="cuda") if opts.l2_flush else None


def calibrate(opts: TimingOptions) -> float:
    """Wall median (ms) of an empty call timed like a trial; measured once per process."""
    global _host_overhead_ms
    if _host_overhead_ms is None:

        flush = _flush_buffer(opts)
        _sync()
        walls = [_trial(lambda: None, flush)[1] for _ in range(CALIBRATION_TRIALS)]
        _host_overhead_ms = statistics.median(walls[CALIBRATION_TRIALS // 5:])  # the first few warm up
        del flush
    return _host_overhead_ms


def _batched_events(fn: Callable[[], Any], flush: Any, k: int, host_ms: list[float]) -> list[float]:
    """k trials queued back to back like do_bench's (flush, start event, call, end event), then one synchronize;
    appends to `host_ms` how long each call took to return on the host (its launch cost)."""

    pairs = [(_event(), _event()) for _ in range(k)]
    for start, end in pairs:
        if flush is not None:
            flush.zero_()
        _clocks["record"](start)
        h0 = _perf_counter()
        fn()
        host_ms.append((_perf_counter() - h0) * 1000.0)
        _clocks["record"](end)
    _sync()
    return [_elapsed(start, end) for start, end in pairs]


def _audit_batch(fn: Callable[[], Any], flush: Any, k: int) -> list[float] | None:
    """k calls queued exactly like a timed batch, with every Triton launch bracketed by CUDA events (their host cost
    is why these calls are not samples): each call's Triton GPU ms (`runner.child.loop_check`); None where the
    record fails (it never fails the job)."""
    from runner.child.launches import counting_triton_launches

    try:
        marks: list[int] = []
        with counting_triton_launches(timed=True) as launched:
            for _ in range(k):
                if flush is not None:
                    flush.zero_()
                fn()
                marks.append(len(launched))
            _sync()
        per_call, prev = [], 0
        for mark in marks:
            per_call.append(sum(_elapsed(s, e) for _, s, e in launched[prev:mark] if s is not None))
            prev = mark
        return per_call
    except Exception:  # noqa: BLE001 - the audit is a check on the program, never the program's verdict
        return None


def brief_do_bench(fn: Callable[[], Any], quantiles: Any = None, *, warmup_ms: float, rep_ms: float) -> Any:
    """The autotuner's config benchmark (`runner.child.autotune`): triton.testing.do_bench's measurement (L2 flushed
    before each call, CUDA events) over `warmup_ms` + `rep_ms` of calls, at least AUTOTUNE_MIN_REPS measured: the
    quantiles asked for (the autotuner's: median, 20%, 80%) of per-call times in ms, else their mean. As in do_bench,
    the estimate that sets the number of calls counts the L2 flush with the call (without it, a 10 us config was
    called 2,500 times, 8x do_bench's count, each after a 256 MB flush: most of the GPU's exclusive time of a pass
    over real rows went to autotuning)."""
    import torch

    flush = _flush_buffer(TimingOptions())
    fn()
    _sync()
    start, end = _event(), _event()
    _clocks["record"](start)
    for _ in range(AUTOTUNE_ESTIMATE_CALLS):
        if flush is not None:
            flush.zero_()
        fn()
    _clocks["record"](end)
    _sync()
    estimate_ms = max(_elapsed(start, end) / AUTOTUNE_ESTIMATE_CALLS, 1e-3)
    for _ in range(int(warmup_ms / estimate_ms)):
        fn()
    times = _batched_events(fn, flush, max(AUTOTUNE_MIN_REPS, int(rep_ms / estimate_ms)), [])
    if quantiles:
        return torch.quantile(torch.tensor(times), torch.tensor(quantiles, dtype=torch.float)).tolist()
    return statistics.fmean(times)


def launch_bound(event_median_ms: float, host_call_median_ms: float | None) -> bool:
    """The host needs about as long to launch the call as the GPU needs to run it: the GPU waits
    for the host between kernels, so the time measures Python and launch overhead as much as the kernels, and
    moves with host load from run to run (in do_bench too)."""
    return host_call_median_ms is not None and host_call_median_ms >= LAUNCH_BOUND_FRACTION * event_median_ms


def _adaptive(batch: Callable[[int], list[float]], opts: TimingOptions, first: list[float] | None = None,
              batch_size: int = CHECK_EVERY) -> tuple[list[float], list[str]]:
    """Collect samples a batch (of `batch_size`) at a time, after the `first` ones, until the stopping rule, the
    time budget or max_trials."""
    samples: list[float] = list(first or [])
    flags: list[str] = []
    start = _perf_counter() - sum(samples) / 1000.0  # the first samples' calls count towards min_time_s
    deadline = start + opts.time_budget_s
    while len(samples) < opts.max_trials:
        samples.extend(batch(min(batch_size, opts.max_trials - len(samples))))
        n, now = len(samples), _perf_counter()
        if now > deadline and n >= MIN_TRIALS_UNDER_BUDGET:
            flags.append("timing_budget_spent")
            if n < opts.min_trials:
                flags.append("timing_below_min_trials")
            return samples, flags
        enough = n >= opts.min_trials or (now - start >= opts.min_time_s and n >= MIN_TRIALS_AFTER_MIN_TIME)
        if enough and rel_err_of_median(samples) < opts.target_rel_err:
            if n < opts.min_trials:
                flags.append("timing_min_time_stop")
            return samples, flags
    flags.append("timing_max_trials")
    return samples, flags


def _warm_up(fn: Callable[[], Any], calls: int) -> float:
    """Up to `calls` untimed calls, fewer once they took WARMUP_BUDGET_S; returns the seconds per call (0.0
    without warm-up)."""
    _sync()
    w0 = _perf_counter()
    done = 0
    while done < calls and (done == 0 or _perf_counter() - w0 < WARMUP_BUDGET_S):
        fn()
        _sync()
        done += 1
    return (_perf_counter() - w0) / done if done else 0.0


def time_cuda_events(fn: Callable[[], Any], opts: TimingOptions) -> tuple[Timing, list[str]]:
    """Time `fn` on the current CUDA device; returns the summary and flags about the loop and the decision."""

    t0 = _perf_counter()
    overhead = calibrate(opts)
    _sync()
    per_call_s = _warm_up(fn, opts.warmup)
    flush = _flush_buffer(opts)
    n_checks = max(MIN_SIDE_CHECK_TRIALS, min(SIDE_CHECK_TRIALS, int(SIDE_CHECK_BUDGET_S / max(per_call_s, 1e-9))))
    checks = [_trial(fn, flush) for _ in range(n_checks)]
    d = decide([c[0] for c in checks], [c[1] for c in checks], overhead)
    host_ms: list[float] = []
    slow = per_call_s >= SLOW_CALL_S
    if d.side_stream_suspect:
        def batch(k: int) -> list[float]:
            return [max(_trial(fn, flush)[1] - overhead, 0.0) for _ in range(k)]
    else:
        def batch(k: int) -> list[float]:
            return _batched_events(fn, flush, k, host_ms)
    first = [c[0] for c in checks] if slow and not d.side_stream_suspect else None
    size = max(1, min(CHECK_EVERY, int(SLOW_BATCH_S / per_call_s))) if slow else CHECK_EVERY
    if callable(getattr(fn, "arm", None)):  # a `runner.child.loop_check.LoopCheck`: its work audited, one call checked
        fn.audited_ms = None if d.side_stream_suspect else _audit_batch(fn, flush, size)
        fn.arm(size)
    samples, flags = _adaptive(batch, opts, first, size)
    if d.side_stream_suspect:
        flags.append("side_stream_suspect")
    host_call = statistics.median(host_ms) if host_ms else None
    timing = summarize(samples, _perf_counter() - t0, source=d.source, event_median_ms=d.event_median_ms,
                       wall_median_ms=d.wall_median_ms, host_overhead_ms=d.host_overhead_ms,
                       host_call_ms=host_call)
    if launch_bound(timing.median_ms, host_call):
        flags.append("launch_bound")
    return timing, flags


def time_do_bench(fn: Callable[[], Any], opts: TimingOptions) -> tuple[Timing, list[str]]:
    """Cross-check: triton.testing.do_bench's median (its own warm-up, flush and repetition rules)."""
    import triton.testing

    t0 = _perf_counter()
    rep_ms = min(1000.0, max(100.0, opts.time_budget_s * 1000.0))
    times = [float(v) for v in triton.testing.do_bench(fn, warmup=25, rep=rep_ms, return_mode="all")]
    timing = summarize(times, _perf_counter() - t0, source="triton_do_bench")
    return timing, [DO_BENCH_FLAG]


def fresh_pairs(median_ms: float) -> int:
    """Pairs of the repeated/fresh check: `FRESH_TRIALS`, fewer for slow calls (about `FRESH_BUDGET_S` of calls),
    never under `MIN_FRESH_TRIALS`."""
    return max(MIN_FRESH_TRIALS, min(FRESH_TRIALS, int(FRESH_BUDGET_S * 1000.0 / max(2 * median_ms, 1e-6))))


def time_repeated_and_fresh(fn: Callable[[], Any], restore: Callable[[], None], refill: Callable[[int], None],
                            opts: TimingOptions, pairs: int = FRESH_TRIALS) -> tuple[float, float]:
    """Median CUDA-event ms of `pairs` calls after `restore()` wrote the timed values back into the inputs
    and of as many after `refill(k)` wrote fresh ones, interleaved and timed alike (the writes outside the events,
    L2 flushed as in the loop). An honest call takes as long either way; one whose output depends on having seen
    the same values before (an output cached by value) is much faster on the repeated ones."""
    flush = _flush_buffer(opts)
    repeated, fresh = [], []
    for k in range(pairs):
        restore()
        _sync()
        repeated.append(_trial(fn, flush)[0])
        refill(k)
        _sync()
        fresh.append(_trial(fn, flush)[0])
    return statistics.median(repeated), statistics.median(fresh)


def faster_on_repeated_inputs(repeated_median_ms: float, fresh_median_ms: float) -> bool:
    return fresh_median_ms > max(FRESH_SLOWER_FACTOR * repeated_median_ms, repeated_median_ms + FRESH_SLOWER_MIN_MS)


def time_callable(fn: Callable[[], Any], opts: TimingOptions) -> tuple[Timing, list[str]]:
    return time_do_bench(fn, opts) if opts.method == "do_bench" else time_cuda_events(fn, opts)


def method_record(opts: TimingOptions) -> dict[str, Any]:
    """The timing method and all its parameters, stored with every result."""
    if opts.method == "do_bench":
        name = "triton_do_bench_median"
    else:
        name = "cuda_events_l2flush_batched_like_do_bench_adaptive+synced_wall_side_stream_check"
    params = {k: getattr(opts, k) for k in opts.__dataclass_fields__}
    return {"name": name, **params, "side_stream_rule": {
        "min_ms": SIDE_STREAM_MIN_MS, "fraction_of_event": SIDE_STREAM_FRACTION,
        "calibration_trials": CALIBRATION_TRIALS, "check_trials": SIDE_CHECK_TRIALS,
        "check_trials_min": MIN_SIDE_CHECK_TRIALS, "check_budget_s": SIDE_CHECK_BUDGET_S, "batch": CHECK_EVERY,
        "min_trials_after_min_time": MIN_TRIALS_AFTER_MIN_TIME, "warmup_budget_s": WARMUP_BUDGET_S,
        "slow_call_s": SLOW_CALL_S, "slow_batch_s": SLOW_BATCH_S,
        "fallback": SOURCE_WALL}, "launch_bound_rule": {"host_call_fraction_of_median": LAUNCH_BOUND_FRACTION},
        "autotune_min_reps": AUTOTUNE_MIN_REPS,
        "fresh_values_rule": {"trials": FRESH_TRIALS, "trials_min": MIN_FRESH_TRIALS, "budget_s": FRESH_BUDGET_S,
                              "slower_factor": FRESH_SLOWER_FACTOR,
                              "slower_min_ms": FRESH_SLOWER_MIN_MS}}
