"""What a verdict ran under: versions, GPU, driver, clocks. Every probe is guarded; none can fail the run."""

from __future__ import annotations

import datetime as dt
import platform
import socket
import subprocess
import sys
import threading
from importlib import metadata
from typing import Any

_SMI_FIELDS = (
    "name", "driver_version", "clocks.sm", "clocks.mem", "clocks.max.sm", "clocks.max.mem",
    "temperature.gpu", "power.draw", "pstate", "persistence_mode",
)


def _version(dist: str) -> str | None:
    try:
        return metadata.version(dist)
    except Exception:
        return None


def _nvidia_smi(gpu_id: str | None) -> dict[str, str]:
    cmd = ["nvidia-smi", f"--query-gpu={','.join(_SMI_FIELDS)}", "--format=csv,noheader,nounits"]
    if gpu_id:
        cmd += ["-i", gpu_id]
    try:
        out = subprocess.run(cmd, capture_output=True, text=True, timeout=5, check=True).stdout
    except Exception:
        return {}
    line = out.strip().splitlines()[0] if out.strip() else ""
    values = [v.strip() for v in line.split(",")]
    if len(values) != len(_SMI_FIELDS):
        return {}
    return {f"smi_{k.replace('.', '_')}": v for k, v in zip(_SMI_FIELDS, values, strict=True)}


def _torch_cuda() -> dict[str, Any]:
    torch = sys.modules.get("torch")
    if torch is None:
        return {}
    info: dict[str, Any] = {"torch": torch.__version__, "torch_cuda": torch.version.cuda}
    try:
        if torch.cuda.is_available():
            props = torch.cuda.get_device_properties(torch.cuda.current_device())
            info.update(
                gpu=props.name,
                gpu_capability=f"{props.major}.{props.minor}",
                gpu_memory_bytes=int(props.total_memory),
                gpu_sms=int(props.multi_processor_count),
                gpu_uuid=str(getattr(props, "uuid", "") or "") or None,
            )
    except Exception:
        pass
    return info


def _smi_id(uuid: Any) -> str | None:
    return uuid if uuid and str(uuid).startswith("GPU-") else (f"GPU-{uuid}" if uuid else None)


class SmiProbe(threading.Thread):
    """nvidia-smi for the current device, run in the background (it takes a few hundred ms): started when the
    timing loops start, it reads the clocks under load without adding to the job's time."""

    def __init__(self) -> None:
        super().__init__(daemon=True)
        self.fields: dict[str, str] = {}
        self.gpu_id = _smi_id(_torch_cuda().get("gpu_uuid"))

    def run(self) -> None:
        self.fields = _nvidia_smi(self.gpu_id)

    def result(self) -> dict[str, str]:
        self.join(timeout=10)
        return self.fields


def collect_system(probe_gpu: bool = True, smi: SmiProbe | None = None, gpu_id: str | None = None) -> dict[str, Any]:
    """Versions and machine facts; with probe_gpu (the child of a CUDA run) also the GPU's, even when the program
    failed before touching CUDA, so that every CUDA verdict names its hardware (bulk resume keys on it). `smi`:
    a probe started earlier, whose answer is used instead of running nvidia-smi now. Without probe_gpu, `gpu_id`
    (the parent of a CUDA job that ended without the child's verdict: a timeout, a crash) names the job's GPU
    from nvidia-smi alone, without touching CUDA."""
    info: dict[str, Any] = {
        "hostname": socket.gethostname(),
        "time": dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
        "python": platform.python_version(),
        "platform": platform.platform(),
        "torch": _version("torch"),
        "triton": _version("triton"),
    }
    triton = sys.modules.get("triton")
    if triton is not None:
        info["triton"] = getattr(triton, "__version__", info["triton"])
    if probe_gpu:
        info.update(_torch_cuda())
        if "gpu" in info:
            info.update(smi.result() if smi is not None else _nvidia_smi(_smi_id(info.get("gpu_uuid"))))
            info["driver"] = info.get("smi_driver_version")
    elif gpu_id is not None and (fields := _nvidia_smi(gpu_id)):
        info.update(fields, gpu=fields.get("smi_name"), driver=fields.get("smi_driver_version"))
    return info
