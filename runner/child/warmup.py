"""What a spare child warms up while it waits for its job (`runner.child.main`), beyond importing torch and triton.

Both processes import triton (the judge sets its runtime up for every job, and most programs' reference parts
import it). On a CUDA machine (not in interpreter mode) each creates the CUDA context on its visible device and
runs one tiny matmul (cuBLAS) and one tiny convolution (cuDNN), holding the GPU's host lock shared meanwhile where
its parent passed it one (`gpu_held`: no timing stage runs beside a context being made), and, in the candidate's
process only, one tiny Triton kernel (Triton's compiler, driver utilities and launcher machinery): the judge runs
no Triton kernel, and compiling that one costs each spare over a CPU-second. Those are first-use costs of every
job, not of the program under test; paying them before the job arrives is most of what a re-run costs beyond its
timing loops. The warm-up kernel is compiled into the spare's own temp dir, never into the shared per-program
cache. Nothing here may fail a job: errors are swallowed, and the job then pays those costs itself.
"""

from __future__ import annotations

import contextlib
import fcntl
import functools
import os
import time
from collections.abc import Iterator, Sequence
from typing import Any

from runner.procfs import stat_fields


def _process_start() -> float:
    """When this process started (wall clock), from /proc; now where that cannot be read."""
    try:
        ticks = int(stat_fields("self")[19])
        with open("/proc/uptime") as uptime:
            return time.time() - float(uptime.read().split()[0]) + ticks / os.sysconf("SC_CLK_TCK")
    except (OSError, ValueError, IndexError):
        return time.time()


STARTED = _process_start()
_marks: dict[str, float] = {}  # when each warm-up step ended (wall clock)


def durations(ready_at: float | None = None) -> dict[str, float]:
    """Wall seconds of this process's warm-up steps, for the verdict: `imports` (from the process's start),
    `gpu_wait` (for the host lock), `cuda` (context, cuBLAS, cuDNN), `triton` (the warm-up kernel, mostly its
    compile) and, given when the job asked for the process (`ready_at`), `idle` (warm before the job asked;
    negative: the job waited that long)."""
    steps, last, out = ("imports", "gpu_wait", "cuda", "triton"), STARTED, {}
    for step in steps:
        if step in _marks:
            out[step] = round(_marks[step] - last, 3)
            last = _marks[step]
    if ready_at is not None:
        out["idle"] = round(ready_at - last, 3)
    return out


def restart() -> None:
    """Start the warm-up's clock again: a process forked from a warm one (`runner.child.fork`) starts now."""
    global STARTED
    STARTED = time.time()
    _marks.clear()


def _mark(step: str) -> None:
    _marks[step] = time.time()


@functools.lru_cache(maxsize=1)
def _add_one() -> Any:
    import triton
    import triton.language as tl

    @triton.jit
    def add_one(ptr, n, BLOCK: tl.constexpr):
        offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
        mask = offs < n
        tl.store(ptr + offs, tl.load(ptr + offs, mask=mask) + 1.0, mask=mask)

    return add_one


@contextlib.contextmanager
def gpu_held(fds: Sequence[int]) -> Iterator[None]:
    """Inside, hold the GPU's host lock (`runner.gpu.host_lock`) shared through `fds` = (main, intent), as its
    readers do: through `intent`, so that a timing stage already waiting goes first, and none starts while it is
    held. Empty `fds`: nothing is held."""
    if not fds:
        yield
        return
    main, intent = fds
    fcntl.flock(intent, fcntl.LOCK_SH)
    fcntl.flock(main, fcntl.LOCK_SH)
    fcntl.flock(intent, fcntl.LOCK_UN)
    _mark("gpu_wait")
    try:
        yield
    finally:
        fcntl.flock(main, fcntl.LOCK_UN)


def import_runtime() -> None:
    """Import torch and triton, touching no CUDA (what a fork of this process starts with)."""
    import torch  # noqa: F401
    import triton  # noqa: F401
    import triton.language  # noqa: F401

    _mark("imports")


def warm_cuda(triton_kernel: bool = True, lock_fds: Sequence[int] = ()) -> bool:
    """Import triton and warm the CUDA stack of this process (and Triton's compiler and launcher, `triton_kernel`);
    False when there is no CUDA device to warm (or in interpreter mode). With `lock_fds`, the context and the torch
    kernels are made holding the GPU shared (`gpu_held`); Triton's kernel (mostly its compile) after."""
    import torch
    import triton  # noqa: F401

    _mark("imports")
    if os.environ.get("TRITON_INTERPRET") == "1" or not torch.cuda.is_available():
        return False
    with gpu_held(lock_fds):
        x = torch.ones(64, 64, device="cuda")
        (x @ x).sum().item()
        w = torch.ones(1, 1, 3, 3, device="cuda")
        torch.nn.functional.conv2d(x.view(1, 1, 64, 64), w).sum().item()
    _mark("cuda")
    if triton_kernel:
        _add_one()[(1,)](x, x.numel(), BLOCK=128)
        torch.cuda.synchronize()
        _mark("triton")
    return True
