"""The runtime a job's process sets up before it loads program code, the same in the judge and the candidate:
the CPU interpreter (`TRITON_INTERPRET=1`, hard-coded "cuda" sent to the CPU) or CUDA with a few CPU threads,
Triton's autotuner made to obey the runner (`runner.child.autotune`), the profile's backend flags."""

from __future__ import annotations

import os
from typing import Any

from runner.child import process
from runner.options import EvalOptions


def device_runtime(options: EvalOptions, device: str, gate_hooks: bool) -> bool:
    """Set up `device`'s runtime for `options`; returns whether TF32 is allowed. `gate_hooks`: Triton's
    compiles give the GPU gate back while they run (`runner.gpu.gate.install_triton_hooks`)."""
    if device == "cpu":
        os.environ["TRITON_INTERPRET"] = "1"
        from runner.child import cuda_remap

        cuda_remap.install()
    elif device == "cuda":
        import torch

        torch.set_num_threads(process.cuda_cpu_threads(options))
    import triton  # noqa: F401 - imported after TRITON_INTERPRET is settled

    if device == "cuda":
        from runner.child import autotune

        autotune.install(options.timing.autotune_warmup_ms, options.timing.autotune_rep_ms,
                         compile_threads=process.cuda_cpu_threads(options))
        if gate_hooks:
            from runner.gpu.gate import install_triton_hooks

            install_triton_hooks()
    if device == "cpu":
        from runner.child import interpreter_compat

        interpreter_compat.install()
    return apply_backend_flags(options, device)


def apply_backend_flags(options: EvalOptions, device: str) -> bool:
    """Set torch's backend flags for the profile; returns whether TF32 is allowed (for matmuls or cuDNN).
    `kernelbench` leaves torch's defaults; `kernelbench-strict` turns TF32 off (cuDNN turns it on for
    convolutions by default), as its 1e-4 fp32 tolerance assumes a true fp32 reference. A candidate may still
    turn it on for itself; that is its choice and is measured as such."""
    import torch

    if device != "cuda":
        return False
    if options.evaluation_profile.tf32_off:
        torch.backends.cuda.matmul.allow_tf32 = False
        torch.backends.cudnn.allow_tf32 = False
    return bool(torch.backends.cuda.matmul.allow_tf32 or torch.backends.cudnn.allow_tf32)


def runtime_flags(device: str) -> list[str]:
    """What the interpreter's compatibility layers had to do (CPU runs)."""
    if device != "cpu":
        return []
    from runner.child import cuda_remap, interpreter_compat

    flags: list[Any] = []
    if cuda_remap.remapped():
        flags.append("cuda_remapped_to_cpu")
    if interpreter_compat.narrowed():
        flags.append("autotune_first_config_only")
    return flags
