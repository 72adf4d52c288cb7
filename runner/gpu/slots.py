"""Where jobs run: a `Slot` per concurrent job (`jobs_per_gpu` per visible GPU, or CPU interpreter slots), made by
`make_slots` for the service's workers and bulk's local backend alike.

The parent never initialises CUDA: GPUs are counted in a child process (`detect_gpus`), and each job's sandbox
subprocess gets its GPU through `CUDA_VISIBLE_DEVICES`.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from dataclasses import dataclass, field
from typing import Any

from common.settings import default_jobs_per_gpu

_GPU_PROBE = (
    "import json, torch\n"
    "n = torch.cuda.device_count() if torch.cuda.is_available() else 0\n"
    "print(json.dumps([torch.cuda.get_device_name(i) for i in range(n)]))\n"
)


@dataclass(frozen=True)
class Slot:
    """Where one worker runs its jobs (one job at a time); the `lanes` slots of one GPU share it."""

    name: str  # "gpu0", "gpu0.1", ... (lanes of GPU 0), "cpu0"
    device: str  # "cuda" or "cpu"
    visible_devices: str | None  # CUDA_VISIBLE_DEVICES for the sandbox ("" hides GPUs)
    gpu_name: str | None = None
    triton_cache_dir: str | None = None  # shared Triton cache (RUNS_DIR/triton-cache), one subfolder per program
    lanes: int = 1  # slots (concurrent jobs) on this slot's GPU
    placement: dict[str, Any] = field(default_factory=dict, compare=False)  # `Settings.job_placement` of its jobs


def detect_gpus(timeout: float = 120.0) -> list[str]:
    """Names of the GPUs this process may use (honours CUDA_VISIBLE_DEVICES), found in a child process."""
    if shutil.which("nvidia-smi") is None and not os.path.exists("/dev/nvidiactl"):
        return []
    try:
        out = subprocess.run(
            [sys.executable, "-c", _GPU_PROBE], capture_output=True, text=True, timeout=timeout, check=True
        ).stdout
        names = json.loads(out.strip().splitlines()[-1])
    except (subprocess.SubprocessError, OSError, ValueError, IndexError):
        return []
    return [str(n) for n in names]


def make_slots(device: str = "auto", cpu_workers: int = 1, gpus: list[str] | None = None,
               triton_cache_dir: str | None = None, jobs_per_gpu: int | None = 1,
               placement: dict[str, Any] | None = None) -> list[Slot]:
    """`jobs_per_gpu` slots per GPU for `cuda`/`auto` with GPUs (None: sized from the host's cores and memory per
    GPU, `common.settings.default_jobs_per_gpu`); else `cpu_workers` interpreter slots; all share the cache and
    the `placement` (`Settings.job_placement`) of their jobs."""
    placement = placement or {}
    if device not in ("auto", "cuda", "cpu"):
        raise ValueError(f"device must be auto, cuda or cpu, not {device!r}")
    if jobs_per_gpu is not None and jobs_per_gpu < 1:
        raise ValueError(f"jobs per GPU must be >= 1, not {jobs_per_gpu}")
    if gpus is None:
        gpus = detect_gpus() if device != "cpu" else []
    if device == "cuda" and not gpus:
        raise RuntimeError("--device cuda: no CUDA GPU is visible to this process")
    if device != "cpu" and gpus:
        jobs_per_gpu = jobs_per_gpu or default_jobs_per_gpu(len(gpus))
        parent = os.environ.get("CUDA_VISIBLE_DEVICES")
        physical = [p.strip() for p in parent.split(",")] if parent else [str(i) for i in range(len(gpus))]
        return [Slot(f"gpu{i}" + (f".{lane}" if lane else ""), "cuda", physical[i], name, triton_cache_dir, jobs_per_gpu,
                     placement) for i, name in enumerate(gpus) for lane in range(jobs_per_gpu)]
    return [Slot(f"cpu{i}", "cpu", "", None, triton_cache_dir, placement=placement) for i in range(max(1, cpu_workers))]
