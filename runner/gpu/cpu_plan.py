"""Which cores a GPU job's processes use (issue 22): each GPU's timing thread gets a core of its own.

Launch-bound timings follow host load: with 12 jobs on a GPU they moved 18-78% against 6. So the host's last core
per GPU is kept for timing: every job's processes (the judge, the candidate, their compilers and threads) run on
the other cores (`--cpus`, set by the child before it imports torch), and the thread that times moves onto its
GPU's core (`--timing-cpu`, `runner.child.pinning`) for the timing loops only. One timing stage runs per GPU at a
time (the gate), so that core is the timing thread's alone. The plan depends only on the GPU's index and the
host (its allowed cores and its `/dev/nvidiaN` devices), so a service and a bulk run on one host agree.
No plan (nothing pinned) for CPU jobs, a job that sees several GPUs, fewer than MIN_CORES_PER_GPU cores per GPU,
or `TLX_RUNNER_PIN_TIMING=0`."""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from pathlib import Path

MIN_CORES_PER_GPU = 4  # below this a reserved core costs the jobs more than it gives the timing


@dataclass(frozen=True)
class CpuPlan:
    job_cpus: tuple[int, ...]  # every process of the job
    timing_cpu: int  # the timing thread's core, this GPU's alone

    def argv(self) -> list[str]:
        return ["--cpus", ",".join(map(str, self.job_cpus)), "--timing-cpu", str(self.timing_cpu)]


def host_gpu_count(dev: Path = Path("/dev")) -> int:
    """The host's NVIDIA GPUs (`/dev/nvidiaN`), whatever this process's CUDA_VISIBLE_DEVICES."""
    try:
        return sum(1 for p in dev.iterdir() if re.fullmatch(r"nvidia\d+", p.name))
    except OSError:
        return 0


def plan_for(visible_devices: str | None, cpus: list[int] | None = None, gpus: int | None = None,
             enabled: bool = True) -> CpuPlan | None:
    """The plan for a job on the GPU `visible_devices` (one physical index), or None: nothing is pinned
    (`enabled` False: `TLX_RUNNER_PIN_TIMING=0`, sent in the job's options)."""
    if not enabled or visible_devices is None or not visible_devices.strip().isdigit():
        return None
    gpu = int(visible_devices)
    cpus = sorted(os.sched_getaffinity(0)) if cpus is None else sorted(cpus)
    gpus = host_gpu_count() if gpus is None else gpus
    if gpu >= gpus or len(cpus) < MIN_CORES_PER_GPU * gpus:
        return None
    return CpuPlan(tuple(cpus[:len(cpus) - gpus]), cpus[len(cpus) - 1 - gpu])
