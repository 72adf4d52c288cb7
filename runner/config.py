"""The runner's configuration from the environment: the one place that reads the `TLX_RUNNER_*` variables.

| variable | meaning | default |
|---|---|---|
| `TLX_RUNNER_URL` | the service the explorer and `submit` talk to | `http://127.0.0.1:8765` |
| `TLX_RUNNER_TOKEN` | the service's bearer token | none (a loopback service makes one) |
| `TLX_RUNNER_JOBS_PER_GPU` | jobs sharing one GPU through their CPU-bound stages (`runner.pool.gate`) | min(6, cores / 2) |
| `TLX_RUNNER_PREWARM` | `0`/`false`/`no`/`off`: no pre-warmed spare children | on |
| `TLX_RUNNER_CPU_THREADS` | torch CPU threads in a CUDA job (read inside the child) | min(4, cores / 4) |

Standard library only (the explorer and the child import it)."""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field

DEFAULT_HOST = "127.0.0.1"
DEFAULT_PORT = 8765
DEFAULT_URL = f"http://{DEFAULT_HOST}:{DEFAULT_PORT}"
MAX_DEFAULT_JOBS_PER_GPU = 6  # one H200, 16 cores, 48 real rows: 6 jobs 32.4 runs/min, 4 jobs 29.2 (BENCHMARKS.md)
URL_ENV, TOKEN_ENV = "TLX_RUNNER_URL", "TLX_RUNNER_TOKEN"
JOBS_PER_GPU_ENV, PREWARM_ENV, CPU_THREADS_ENV = "TLX_RUNNER_JOBS_PER_GPU", "TLX_RUNNER_PREWARM", "TLX_RUNNER_CPU_THREADS"
CHILD_ENV = (CPU_THREADS_ENV,)  # passed into the sandbox's scrubbed environment
_OFF = ("0", "false", "no", "off")


def _positive_int(raw: str | None, default: int) -> int:
    try:
        return max(1, int(raw)) if raw is not None else default
    except ValueError:
        return default


def default_jobs_per_gpu(cores: int | None = None) -> int:
    """Jobs per GPU when not set: each job compiles on about one core and its timing wants one free, so half the
    host's cores, at most MAX_DEFAULT_JOBS_PER_GPU (more jobs also hold more GPU memory at once)."""
    cores = cores if cores is not None else (os.cpu_count() or 1)
    return max(1, min(MAX_DEFAULT_JOBS_PER_GPU, cores // 2))


@dataclass(frozen=True)
class RunnerConfig:
    url: str = DEFAULT_URL
    token: str | None = None
    jobs_per_gpu: int = field(default_factory=default_jobs_per_gpu)
    prewarm: bool = True
    cpu_threads: int | None = None  # None: min(4, cores / 4)

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None) -> RunnerConfig:
        env = os.environ if env is None else env
        return cls(
            url=(env.get(URL_ENV) or DEFAULT_URL).strip().rstrip("/"),
            token=(env.get(TOKEN_ENV) or "").strip() or None,
            jobs_per_gpu=_positive_int(env.get(JOBS_PER_GPU_ENV), default_jobs_per_gpu()),
            prewarm=env.get(PREWARM_ENV, "1").strip().lower() not in _OFF,
            cpu_threads=_positive_int(env.get(CPU_THREADS_ENV), 0) or None,
        )

    def child_cpu_threads(self) -> int:
        """Torch's CPU threads in a CUDA job: a few (see `runner.child.main.cuda_cpu_threads`)."""
        return self.cpu_threads or max(1, min(4, (os.cpu_count() or 1) // 4))
