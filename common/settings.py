"""Frozen settings read from `TLX_*` environment variables: the one reader of them all (README, Configuration).

`load_settings()` gives a process's `Settings`, with the runner's `TLX_RUNNER_*` part as `Settings.runner` (a
`RunnerConfig`). Each process reads them once, at its entry (the explorer's session, `python -m queries`,
`python -m runner` and its subcommands), and passes the frozen object down; the sandboxed child gets what it needs
through its job's options (`Settings.job_placement`):

| variable | meaning | default |
|---|---|---|
| `TLX_RUNNER_URL` | the service the explorer and `submit` talk to | `http://127.0.0.1:8765` |
| `TLX_RUNNER_TOKEN` | the service's bearer token | none (a loopback service makes one) |
| `TLX_RUNNER_JOBS_PER_GPU` | jobs sharing one GPU through their CPU-bound stages (`runner.gpu.gate`) | min(6, cores / 2) |
| `TLX_RUNNER_PREWARM` | `0`/`false`/`no`/`off`: no pre-warmed spare children | on |
| `TLX_RUNNER_FORKSERVER` | `0`/`false`/`no`/`off`: each job's judge starts as a program, not forked from a server with torch imported (`runner.sandbox.zygote`) | on (where the runner is root and jobs are isolated) |
| `TLX_RUNNER_CPU_THREADS` | torch CPU threads in a CUDA job (sent to the child in its options) | min(4, cores / 4) |
| `TLX_RUNNER_PIN_TIMING` | `0`/`false`/`no`/`off`: no core kept for each GPU's timing thread (`runner.gpu.cpu_plan`) | on |
| `TLX_RUNNER_REUSE_REFERENCE_TIMING` | `0`/`false`/`no`/`off`: a bulk run times Model in every job (`runner.gpu.reference_timings`) | on |

Standard library only (the explorer, the runner and the sandboxed child import it).
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

REPO_ROOT = Path(__file__).resolve().parent.parent
SAMPLE_DIR = REPO_ROOT / "data" / "sample"

DEFAULT_HOST = "127.0.0.1"
DEFAULT_PORT = 8765
DEFAULT_URL = f"http://{DEFAULT_HOST}:{DEFAULT_PORT}"
MAX_DEFAULT_JOBS_PER_GPU = 6  # one H200, 16 cores, 48 real rows: 6 jobs 32.4 runs/min, 4 jobs 29.2 (BENCHMARKS.md)
CORES_PER_JOB = 2  # 16 cores per H200: 8 jobs' worth, capped at 6; ~22 host CPU-s per row, 43% of 16 cores busy
HOST_BYTES_PER_JOB = 8 << 30  # the judge, the candidate and their spares' two processes: ~2 GiB each
URL_ENV, TOKEN_ENV = "TLX_RUNNER_URL", "TLX_RUNNER_TOKEN"
JOBS_PER_GPU_ENV, PREWARM_ENV, CPU_THREADS_ENV = "TLX_RUNNER_JOBS_PER_GPU", "TLX_RUNNER_PREWARM", "TLX_RUNNER_CPU_THREADS"
PIN_TIMING_ENV = "TLX_RUNNER_PIN_TIMING"  # runner.gpu.cpu_plan
FORKSERVER_ENV = "TLX_RUNNER_FORKSERVER"  # runner.sandbox.zygote_client
REUSE_REFERENCE_ENV = "TLX_RUNNER_REUSE_REFERENCE_TIMING"  # runner.bulk.backends
CANDIDATE_UID_ENV = "TLX_RUNNER_CANDIDATE_UID"  # read by the judge (runner.child.candidate_client)
LOCK_DIR_ENV = "TLX_RUNNER_LOCK_DIR"  # the GPU gates' lock files, shared by the host's runners (runner.gpu.host_lock)
CUDA_IPC_ENV = "TLX_RUNNER_CUDA_IPC"  # read by the judge (runner.child.evaluate): 0 sends outputs as host bytes
CHILD_ENV = (CANDIDATE_UID_ENV, CUDA_IPC_ENV)  # passed into the sandbox's scrubbed environment

DEFAULT_INDEX_BUILD_MB = 1152  # TLX_INDEX_BUILD_MB: memory one code part's search index build may use (BENCHMARKS.md, issue 48 fourth pass)

_TRUE = {"1", "true", "yes", "on"}
_OFF = ("0", "false", "no", "off")


def lock_dir(env: Mapping[str, str] | None = None) -> Path:
    """Where the runners of this host keep their GPU gates' lock files (`TLX_RUNNER_LOCK_DIR`)."""
    raw = (os.environ if env is None else env).get(LOCK_DIR_ENV, "").strip()
    return Path(raw) if raw else Path(tempfile.gettempdir()) / "tlx-gpu-locks"


def cuda_ipc_wanted(env: Mapping[str, str] | None = None) -> bool:
    """Whether the judge takes the candidate's CUDA outputs as IPC handles (`TLX_RUNNER_CUDA_IPC`, default on)."""
    return (os.environ if env is None else env).get(CUDA_IPC_ENV, "").strip().lower() not in _OFF


def _flag(env: Mapping[str, str], name: str) -> bool:
    return env.get(name, "").strip().lower() in _TRUE


def _positive_int(raw: str | None, default: int) -> int:
    try:
        return max(1, int(raw)) if raw is not None else default
    except ValueError:
        return default


def host_memory_bytes() -> int | None:
    try:
        with open("/proc/meminfo", encoding="ascii") as fh:
            for line in fh:
                if line.startswith("MemTotal:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    return None


def default_jobs_per_gpu(gpus: int = 1, cores: int | None = None, memory_bytes: int | None = None) -> int:
    """Jobs per GPU when not set, from the host's share per GPU: `CORES_PER_JOB` cores (a job is the judge and its
    candidate, compiling, beside their spares warming up) and `HOST_BYTES_PER_JOB` of memory each, at most
    `MAX_DEFAULT_JOBS_PER_GPU`. GPU memory is not divided up front: a job out of GPU memory beside others runs
    again with the GPU to itself (`runner.gpu.oom_rerun`)."""
    gpus = max(1, gpus)
    cores = cores if cores is not None else (os.cpu_count() or 1)
    memory = memory_bytes if memory_bytes is not None else host_memory_bytes()
    by_memory = memory // gpus // HOST_BYTES_PER_JOB if memory else MAX_DEFAULT_JOBS_PER_GPU
    return max(1, min(MAX_DEFAULT_JOBS_PER_GPU, cores // gpus // CORES_PER_JOB, by_memory))


@dataclass(frozen=True)
class RunnerConfig:
    url: str = DEFAULT_URL
    token: str | None = None
    jobs_per_gpu: int | None = None  # None: `default_jobs_per_gpu` for the GPUs found
    prewarm: bool = True
    forkserver: bool = True  # judges forked from a server with torch imported (runner.sandbox.zygote)
    cpu_threads: int | None = None  # None: min(4, cores / 4)
    pin_timing: bool = True  # a core per GPU for its timing thread (runner.gpu.cpu_plan)
    reuse_reference_timing: bool = True  # bulk runs time Model once per reference text and GPU

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None) -> RunnerConfig:
        env = os.environ if env is None else env
        return cls(
            url=(env.get(URL_ENV) or DEFAULT_URL).strip().rstrip("/"),
            token=(env.get(TOKEN_ENV) or "").strip() or None,
            jobs_per_gpu=_positive_int(env.get(JOBS_PER_GPU_ENV), 0) or None,
            prewarm=env.get(PREWARM_ENV, "1").strip().lower() not in _OFF,
            forkserver=env.get(FORKSERVER_ENV, "1").strip().lower() not in _OFF,
            cpu_threads=_positive_int(env.get(CPU_THREADS_ENV), 0) or None,
            pin_timing=env.get(PIN_TIMING_ENV, "1").strip().lower() not in _OFF,
            reuse_reference_timing=env.get(REUSE_REFERENCE_ENV, "1").strip().lower() not in _OFF,
        )



def child_cpu_threads(configured: int | None) -> int:
    """Torch's CPU threads in a CUDA job: `configured` (`RunnerConfig.cpu_threads`) or a few (see
    `runner.child.process.cuda_cpu_threads`)."""
    return configured or max(1, min(4, (os.cpu_count() or 1) // 4))


@dataclass(frozen=True)
class Settings:
    store: Path
    store_is_sample: bool
    cache_dir: Path
    runs_dir: Path
    read_only: bool
    runner_url: str
    runner_token: str | None
    label_unit: str
    duckdb_threads: int
    duckdb_memory: str
    query_timeout_s: float
    search_cache_mb: int  # decompressed search-index lines a process keeps (queries.search.index)
    index_build_mb: int  # memory one code part's search index build may use (queries.ingest.search_build)
    runner: RunnerConfig = RunnerConfig()  # the `TLX_RUNNER_*` part

    def job_placement(self) -> dict[str, Any]:
        """The `EvalOptions` fields these settings decide for every sandboxed job: the runner's folders kept out
        of its view, spare children, the timing core, torch's CPU threads in the child."""
        return {"hidden_roots": (str(self.runs_dir), str(self.store), str(self.cache_dir)),
                "prewarm": self.runner.prewarm, "forkserver": self.runner.forkserver, "pin_timing": self.runner.pin_timing,
                "cpu_threads": self.runner.cpu_threads}


def load_settings(env: Mapping[str, str] | None = None) -> Settings:
    env = os.environ if env is None else env
    cache_dir = Path(env.get("TLX_CACHE_DIR") or Path.home() / ".cache" / "tlx").expanduser()
    store_var = env.get("TLX_STORE", "").strip()
    runner = RunnerConfig.from_env(env)
    return Settings(
        store=Path(store_var).expanduser() if store_var else cache_dir / "sample-store",
        store_is_sample=not store_var,
        cache_dir=cache_dir,
        runs_dir=Path(env.get("TLX_RUNS_DIR") or cache_dir / "runs").expanduser(),
        read_only=_flag(env, "TLX_READ_ONLY"),
        runner_url=runner.url,
        runner_token=runner.token,
        label_unit=env.get("TLX_LABEL_UNIT", "ms"),
        duckdb_threads=int(env.get("TLX_DUCKDB_THREADS", "2")),
        duckdb_memory=env.get("TLX_DUCKDB_MEMORY", "2GB"),
        query_timeout_s=float(env.get("TLX_QUERY_TIMEOUT_S", "10")),
        search_cache_mb=int(env.get("TLX_SEARCH_CACHE_MB", "1200")),
        index_build_mb=int(env.get("TLX_INDEX_BUILD_MB", str(DEFAULT_INDEX_BUILD_MB))),
        runner=runner,
    )
