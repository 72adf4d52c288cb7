"""Does GPU work outside the gate disturb a timing stage? (issue 22)

Spares warm up (a CUDA context, cuBLAS, cuDNN, a Triton kernel: `runner.child.warmup`) and finished jobs' processes
tear their contexts down without holding the GPU gate. This script times three steady calls with the runner's own
timing (`runner.child.timing`) in this process while `--noise` background processes do exactly that, over and over,
and reports how the samples spread:

- `quiet`: nothing beside the timing;
- `noise`: the background processes warm up and exit with no lock;
- `noise_locked`: each background process holds a lock file shared (flock) from before its warm-up until it has
  exited, and the timing holds it exclusive, as the host lock of `runner.gpu.host_lock` would;
- `noise_warm_locked`: the same, but the lock is given back after the warm-up, before the process exits.

Per call and condition: 1,000 samples in batches of 10 (the timing loop's own batches), their median, CV, a robust
CV (1.4826 MAD / median), the samples over 1.5x the median, and what `time_callable`'s stopping rule made of it
(trials, loop seconds). Needs a CUDA GPU; run from the repository root: `python3 scripts/bench_timing_noise.py
--out DIR`."""

from __future__ import annotations

import argparse
import fcntl
import json
import os
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
LOCK = Path(tempfile.mkdtemp()) / "gpu.lock"
sys.path.insert(0, str(ROOT))

NOISE_CODE = """
import fcntl, os, sys
fd = None
if sys.argv[1] != "-":  # as a reader of runner.gpu.host_lock: through `intent` (writers first), then `main`
    intent, fd = os.open(sys.argv[1] + ".intent", os.O_RDWR), os.open(sys.argv[1], os.O_RDWR)
    fcntl.flock(intent, fcntl.LOCK_SH)
    fcntl.flock(fd, fcntl.LOCK_SH)
    os.close(intent)
from runner.child.warmup import warm_cuda
warm_cuda(True)
if fd is not None and sys.argv[2] == "warm":
    fcntl.flock(fd, fcntl.LOCK_UN)  # the teardown at exit outside the lock
"""  # else the lock file's descriptor stays open until the process is gone: its context's teardown is inside it


class Noise:
    """`count` background processes that warm CUDA up and exit, restarted as they end, until `stop()`."""

    def __init__(self, count: int, lock: str | None, until: str = "exit") -> None:
        self.count, self.lock, self.until = count, lock, until
        self.started = 0
        self._stop = threading.Event()
        self._threads = [threading.Thread(target=self._loop, daemon=True) for _ in range(count)]
        for t in self._threads:
            t.start()

    def _loop(self) -> None:
        env = {**os.environ, "PYTHONPATH": str(ROOT)}
        while not self._stop.is_set():
            subprocess.run([sys.executable, "-c", NOISE_CODE, self.lock or "-", self.until], env=env, check=False,
                           stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            self.started += 1

    def stop(self) -> None:
        self._stop.set()
        for t in self._threads:
            t.join()


def spread(samples: list[float]) -> dict[str, float]:
    med = statistics.median(samples)
    mad = statistics.median(abs(s - med) for s in samples)
    return {"n": len(samples), "median_ms": round(med, 5), "cv": round(statistics.stdev(samples) / statistics.fmean(samples), 4),
            "robust_cv": round(1.4826 * mad / med, 4), "max_ms": round(max(samples), 4),
            "over_1_5x": sum(s > 1.5 * med for s in samples)}


def measure(name: str, fn, lock_fd: int | None) -> dict[str, object]:
    from runner.child import timing
    from runner.options import TimingOptions

    opts = TimingOptions()
    if lock_fd is not None:  # as a writer of runner.gpu.host_lock: `intent` held while it waits for `main`
        intent = os.open(str(LOCK) + ".intent", os.O_RDWR)
        fcntl.flock(intent, fcntl.LOCK_EX)
        fcntl.flock(lock_fd, fcntl.LOCK_EX)
        os.close(intent)
    try:
        timing._warm_up(fn, 3)
        flush = timing._flush_buffer(opts)
        samples: list[float] = []
        while len(samples) < 1000:
            samples += timing._batched_events(fn, flush, 10, [])
        del flush
        t, flags = timing.time_callable(fn, opts)
    finally:
        if lock_fd is not None:
            fcntl.flock(lock_fd, fcntl.LOCK_UN)
    return {"call": name, **spread(samples), "rule_trials": t.n, "rule_median_ms": round(t.median_ms, 5),
            "rule_loop_s": round(t.loop_s or 0.0, 3), "rule_flags": flags}


def calls():
    import torch

    torch.backends.cuda.matmul.allow_tf32 = False
    a = torch.randn(4096, 4096, device="cuda")
    x = torch.randn(64 << 20, device="cuda")
    s = torch.randn(4096, device="cuda")
    return {"matmul_4096_fp32": lambda: a @ a, "scale_256MB": lambda: x * 2.0, "small_add": lambda: s + 1.0}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--noise", type=int, default=4, help="background processes warming up at once")
    ap.add_argument("--rounds", type=int, default=2, help="rounds of every call per condition")
    ap.add_argument("--out", type=Path, required=True)
    args = ap.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    import torch

    fns = calls()
    torch.cuda.synchronize()
    lock_path = LOCK
    for path in (LOCK, Path(str(LOCK) + ".intent")):
        path.touch()
    rows = []
    for condition in ("quiet", "noise", "noise_locked", "noise_warm_locked", "quiet"):
        locked = condition.endswith("_locked")
        until = "warm" if condition == "noise_warm_locked" else "exit"
        noise = Noise(args.noise, str(lock_path) if locked else None, until) if condition.startswith("noise") else None
        fd = os.open(lock_path, os.O_RDWR) if locked else None
        time.sleep(3.0 if noise else 0.0)  # the first background processes reach their warm-up
        t0 = time.monotonic()
        for _ in range(args.rounds):
            for name, fn in fns.items():
                row = {"condition": condition, **measure(name, fn, fd)}
                rows.append(row)
                print(json.dumps(row), flush=True)
        if noise:
            noise.stop()
            print(json.dumps({"condition": condition, "noise_processes": noise.started,
                              "seconds": round(time.monotonic() - t0, 1)}), flush=True)
        if fd is not None:
            os.close(fd)
    (args.out / "timing_noise.json").write_text(json.dumps(rows, indent=1))


if __name__ == "__main__":
    main()
