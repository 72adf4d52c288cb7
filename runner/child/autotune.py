"""Triton autotuning in the runner: configs compiled beside the other jobs, benchmarked alone and briefly.

Triton's autotuner benchmarks every config of a kernel (do_bench) the first time it meets a key. Beside other
jobs' GPU work a slow config can win by chance, and the job's timing then settles 1.3-2x off from one run to the
next (H200, 4 jobs per GPU: BENCHMARKS.md). Taking the GPU alone for each config's benchmark fixed that, but cost
a gate exchange per config, most with a compile inside (1,758 exclusive holds over 247 real rows; the GPU busy
62% of the time instead of 79%). So when the program autotunes, the evaluation makes its first ModelNew call twice
(`runner.child.evaluate`):

1. a compile pass under the shared gate (`compile_pass`): every autotuner compiles each config and runs it once,
   timing nothing (its "benchmark" reports equal times, so the choice it records means nothing and is forgotten
   after the pass);
2. the same call holding the GPU alone: the autotuners benchmark the compiled configs back to back, in one
   exclusive hold; this call's output is the one compared.

How long each config is benchmarked: Triton's default do_bench spends 25 ms warming up and 100 ms measuring per
config, ~110 s of the GPU held alone over 272 real rows. An autotuner that leaves the benchmark to Triton (no
`do_bench`, `warmup` or `rep` of its own) is benchmarked by `runner.child.timing.brief_do_bench` instead: do_bench's
method (L2 cleared before each call, CUDA events, the quantiles asked for) over `TimingOptions.autotune_warmup_ms`
and `autotune_rep_ms`, but never fewer than `AUTOTUNE_MIN_REPS` measured calls (do_bench measures a 16 ms config
once in 25 ms, and a run on another machine then picked a config 13% slower). One whose author chose a benchmark keeps it.

In the compile pass, each autotuner's configs for the call in hand are compiled side by side before any runs
(`precompile`: `compile_threads` threads, Triton's `run(..., warmup=True)`, which compiles and launches nothing),
with the GPU gate given back once for all of them. Config by config, each compile gave the gate back and asked
again behind every waiting timing stage, and the configs' compiles ran one after the other: 4.4 s of a 12.7 s
job on the H200 (BENCHMARKS.md, issue 22). A config that fails to compile there is compiled again by the pass
itself, which meets the same error and handles it as Triton does.

`install()` wraps `Autotuner._bench` and `Autotuner.prune_configs` in the child (after importing triton); a Triton
whose autotuner lacks `_bench` or `do_bench` benchmarks for real in the compile pass too, which is slower but
still correct."""

from __future__ import annotations

import contextlib
import functools
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from typing import Any

_compile_only = False
_tuners: dict[int, Any] = {}  # the autotuners that ran in the current compile pass, by id
_brief_bench: Callable[..., Any] | None = None  # do_bench for autotuners left at Triton's default benchmark
_default_bench: Callable[..., Any] | None = None  # Triton's default (triton.testing.do_bench)
_compile_threads = 1  # configs compiled at once in the compile pass (1: one by one, as Triton does)


def install(warmup_ms: float | None = None, rep_ms: float | None = None, compile_threads: int = 1) -> None:
    """Make `Autotuner._bench` obey `compile_pass` and benchmark default-benchmark autotuners with
    `brief_do_bench(warmup_ms, rep_ms)` (either None: Triton's own do_bench), and compile each autotuner's configs
    `compile_threads` at a time in the compile pass; a second call wraps nothing twice."""
    global _brief_bench, _default_bench, _compile_threads
    try:
        from triton.runtime.autotuner import Autotuner
        from triton.testing import do_bench
    except ImportError:
        return
    from runner.child.timing import brief_do_bench

    _default_bench = do_bench
    brief = warmup_ms is not None and rep_ms is not None
    _brief_bench = functools.partial(brief_do_bench, warmup_ms=warmup_ms, rep_ms=rep_ms) if brief else None
    bench = getattr(Autotuner, "_bench", None)
    if callable(bench) and not getattr(bench, "_tlx_wrapped", False):
        Autotuner._bench = _obeying_compile_pass(bench)
    _compile_threads = max(1, compile_threads)
    prune = getattr(Autotuner, "prune_configs", None)
    if callable(prune) and not getattr(prune, "_tlx_wrapped", False):
        Autotuner.prune_configs = _precompiling(prune)


def _run_once(kernel_call: Callable[[], Any], quantiles: Any = None, **_: Any) -> Any:
    """Stands for do_bench in the compile pass: compile and run the config once, report a time that decides
    nothing."""
    kernel_call()
    return [1.0] * len(quantiles) if quantiles else 1.0


def _benchmark_for(tuner: Any) -> Callable[..., Any] | None:
    """The do_bench this tuner's config benchmark should use instead of its own; None: its own."""
    if not (hasattr(type(tuner), "do_bench") or "do_bench" in tuner.__dict__):
        return None
    if _compile_only:
        return _run_once
    own = tuner.__dict__.get("do_bench", _default_bench)  # cached_property: Triton's default once asked for
    if _brief_bench is not None and tuner.__dict__.get("_do_bench", 0) is None and own is _default_bench:
        return _brief_bench  # the author chose no benchmark of their own
    return None


def _obeying_compile_pass(real: Callable[..., Any]) -> Callable[..., Any]:
    def bench(tuner: Any, *args: Any, **kwargs: Any) -> Any:
        substitute = _benchmark_for(tuner)
        if substitute is None:
            return real(tuner, *args, **kwargs)
        if _compile_only:
            _tuners[id(tuner)] = tuner
        had = "do_bench" in tuner.__dict__
        saved = tuner.__dict__.get("do_bench")
        tuner.do_bench = substitute
        try:
            return real(tuner, *args, **kwargs)
        finally:
            if had:
                tuner.do_bench = saved
            else:
                del tuner.do_bench

    bench._tlx_wrapped = True  # type: ignore[attr-defined]
    return bench


def _precompiling(real: Callable[..., Any]) -> Callable[..., Any]:
    """`Autotuner.prune_configs` (called once per benchmark, just before it) that, in the compile pass, first
    compiles the configs it keeps."""
    def prune_configs(tuner: Any, kwargs: dict[str, Any], *args: Any, **more: Any) -> Any:
        configs = real(tuner, kwargs, *args, **more)
        if _compile_only and _compile_threads > 1 and len(configs) > 1:
            precompile(tuner, configs, kwargs)
        return configs

    prune_configs._tlx_wrapped = True  # type: ignore[attr-defined]
    return prune_configs


def precompile(tuner: Any, configs: list[Any], meta: dict[str, Any]) -> None:
    """Compile `tuner`'s `configs` for the call in hand (its arguments in `tuner.nargs`, the launch's keywords
    in `meta`), `_compile_threads` at a time, launching nothing, with the job's GPU gate given back meanwhile.
    Errors are left for the benchmark, which compiles a failed config again."""
    from runner.gpu.gate import current

    call = {**(getattr(tuner, "nargs", None) or {}), **{k: v for k, v in meta.items() if k != "warmup"}}
    device = _current_cuda_device()

    def compile_one(config: Any) -> None:
        if device is not None:
            import torch

            torch.cuda.set_device(device)  # a thread starts on device 0; Triton compiles for the current one
        with contextlib.suppress(Exception):
            tuner.fn.run(**call, **config.all_kwargs(), warmup=True)

    with current().paused(), ThreadPoolExecutor(min(_compile_threads, len(configs)),
                                                thread_name_prefix="tlx-compile") as pool:
        list(pool.map(compile_one, configs))


def _current_cuda_device() -> int | None:
    import torch

    return torch.cuda.current_device() if torch.cuda.is_initialized() else None


@contextlib.contextmanager
def compile_pass() -> Iterator[dict[int, Any]]:
    """Inside, autotuners compile and run each config once and benchmark nothing; on leaving, the choices of those
    that ran are forgotten, so the next call tunes again. Yields the autotuners that ran (empty: none did)."""
    global _compile_only
    _tuners.clear()
    _compile_only = True
    try:
        yield _tuners
    finally:
        _compile_only = False
        for tuner in _tuners.values():
            cache = getattr(tuner, "cache", None)
            if isinstance(cache, dict):
                cache.clear()
