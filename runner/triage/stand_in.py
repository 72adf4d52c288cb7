"""The stand-in GPU of a CPU triage: CUDA answered on torch's `meta` device, Triton launches compiled for a named
target and not run.

`install(target)` is called once in a triage worker, after torch and triton are imported and before any program:
- torch: factories and moves that name `cuda` make `meta` tensors (a `TorchFunctionMode`); `torch.cuda`'s
  queries answer as one device of the target's kind (`is_available`, `device_count`, `get_device_capability`,
  `get_device_properties`, streams, events, synchronize); `Tensor.is_cuda` holds for meta tensors;
- compiling runs only the stages that raise errors (`runner.triage.stages`: through TritonGPU IR and its shared
  memory allocation; an autotuner's configs after the first that fits, through the front end only);
- triton: a stand-in active driver whose `get_current_target()` is the target (`GPUTarget("cuda", 90, 32)` for
  `sm_90`); every `JITFunction.run` is a compile-only warm-up (`warmup=True`), so a launch compiles its kernel and
  raises the compiler's own error; a compiled kernel that needs more shared memory than the target has raises
  `OutOfResources` as loading it on the GPU would; the autotuner compiles configs instead of timing them (a config
  that is out of resources is skipped, as the real autotuner skips it).

`launches` records each compile (kernel name, cache hit or miss, seconds) for the triage's phases.
"""

from __future__ import annotations

import contextlib
import os
import time
import types
from dataclasses import dataclass, field

from runner.triage import stages

TARGETS = {"sm_80": (80, 166912, 108), "sm_86": (86, 101376, 84), "sm_89": (89, 101376, 128),
           "sm_90": (90, 232448, 132)}  # capability, max shared memory a block (bytes), SMs


@dataclass
class Compiles:
    """What the stand-in compiled since the last `reset()`."""

    kernels: list[str] = field(default_factory=list)
    current: str | None = None  # the kernel of the launch in progress (named by a launch error too)
    hits: int = 0  # launches that compiled nothing
    misses: int = 0  # launches that compiled
    from_disk: int = 0  # of the hits, those Triton's cache folder served: a compile of an earlier program's
    seconds: float = 0.0

    def reset(self) -> None:
        self.kernels.clear()
        self.current = None
        self.hits = self.misses = self.from_disk = 0
        self.seconds = 0.0


launches = Compiles()


def target_spec(name: str) -> tuple[int, int, int]:
    """(capability, shared memory a block, SMs) of a target name such as `sm_90`; ValueError names the known ones."""
    if name in TARGETS:
        return TARGETS[name]
    raise ValueError(f"unknown target {name!r}: one of {', '.join(TARGETS)}")


def _is_cuda(device) -> bool:
    import torch

    if isinstance(device, torch.device):
        return device.type == "cuda"
    if isinstance(device, str):
        return device.split(":")[0] == "cuda"
    return isinstance(device, int) and not isinstance(device, bool)


def _cuda_named(value) -> bool:
    import torch

    return isinstance(value, str | torch.device) and _is_cuda(value)


def _meta_mode_class():
    import torch
    from torch.overrides import TorchFunctionMode

    class CudaOnMeta(TorchFunctionMode):
        """Every `cuda` device a torch call names becomes `meta`; `.cuda()` moves to `meta`."""

        def __torch_function__(self, func, types, args=(), kwargs=None):
            kwargs = dict(kwargs or {})
            if func is torch.Tensor.cuda:
                return args[0].to("meta")
            if _is_cuda(kwargs.get("device", "cpu")):
                kwargs["device"] = "meta"
            if func is torch.Tensor.to:
                args = tuple("meta" if _cuda_named(a) else a for a in args)
            return func(*args, **kwargs)

    return CudaOnMeta


def _fake_cuda(capability: int, shared: int, sms: int, name: str) -> None:
    import torch

    props = types.SimpleNamespace(
        name=name, major=capability // 10, minor=capability % 10, multi_processor_count=sms,
        total_memory=80 * 2**30, max_shared_memory_per_block_optin=shared, warp_size=32,
        L2_cache_size=50 * 2**20, regs_per_multiprocessor=65536, max_threads_per_multi_processor=2048)
    stream = types.SimpleNamespace(cuda_stream=0, synchronize=lambda: None, wait_stream=lambda *a: None,
                                   __enter__=None)
    cuda = torch.cuda
    for attr, value in {
        "is_available": lambda: True, "device_count": lambda: 1, "current_device": lambda: 0,
        "set_device": lambda *a, **k: None, "synchronize": lambda *a, **k: None,
        "get_device_capability": lambda *a, **k: (capability // 10, capability % 10),
        "get_device_properties": lambda *a, **k: props, "get_device_name": lambda *a, **k: name,
        "empty_cache": lambda: None, "manual_seed": lambda *a: None, "manual_seed_all": lambda *a: None,
        "current_stream": lambda *a, **k: stream, "default_stream": lambda *a, **k: stream,
        "stream": lambda *a, **k: contextlib.nullcontext(), "device": lambda *a, **k: contextlib.nullcontext(),
        "Stream": lambda *a, **k: stream, "Event": _Event, "is_initialized": lambda: True, "init": lambda: None,
        "max_memory_allocated": lambda *a, **k: 0, "memory_allocated": lambda *a, **k: 0,
        "reset_peak_memory_stats": lambda *a, **k: None,
    }.items():
        setattr(cuda, attr, value)
    torch.Tensor.is_cuda = property(lambda self: self.device.type in ("cuda", "meta"))


class _Event:
    def __init__(self, *args, **kwargs):
        pass

    def record(self, *args, **kwargs):
        pass

    def synchronize(self):
        pass

    def elapsed_time(self, other) -> float:
        return 0.0


def _driver_class(capability: int, shared: int, sms: int):
    import torch
    from triton.backends.compiler import GPUTarget
    from triton.backends.driver import DriverBase

    class StandInDriver(DriverBase):
        """The active Triton driver of a triage: names the target, launches nothing."""

        def __init__(self):
            self.utils = types.SimpleNamespace(get_device_properties=lambda device: {
                "max_shared_mem": shared, "multiprocessor_count": sms, "max_num_regs": 65536, "warpSize": 32,
                "sm_clock_rate": 1980000, "mem_clock_rate": 2619000, "mem_bus_width": 5120},
                set_current_device=lambda device: None)

        @classmethod
        def is_active(cls):
            return False

        def map_python_to_cpp_type(self, ty: str) -> str:
            return ty

        def get_current_target(self):
            return GPUTarget("cuda", capability, 32)

        def get_active_torch_device(self):
            return torch.device("meta")

        def get_current_device(self):
            return 0

        def set_current_device(self, device):
            return None

        def get_current_stream(self, device=None):
            return 0

        def get_device_capability(self, device=None):
            return capability // 10, capability % 10

        def get_device_interface(self):
            return torch.cuda

        def get_benchmarker(self):
            return stages.compile_once

        def get_empty_cache_for_benchmark(self):
            return torch.empty(1, device="meta")

        def clear_cache(self, cache):
            return None

    return StandInDriver


def _compile_only(shared: int):
    from triton.runtime import driver
    from triton.runtime.errors import OutOfResources
    from triton.runtime.jit import JITFunction

    real_run = JITFunction.run

    def run(self, *args, grid, warmup, **kwargs):
        launches.current = self.__name__
        before = _cache_entries()
        in_memory = self.device_caches[driver.active.get_current_device()][0]  # this process's compiled kernels
        known = len(in_memory)
        start = time.perf_counter()
        kernel = real_run(self, *args, grid=grid, warmup=True, **kwargs)
        launches.seconds += time.perf_counter() - start
        launches.kernels.append(self.__name__)
        if _cache_entries() > before:  # a new entry in Triton's cache folder: compiled here
            launches.misses += 1
        else:
            launches.hits += 1
            launches.from_disk += len(in_memory) > known
        needed = getattr(getattr(kernel, "metadata", None), "shared", 0) or 0
        if needed > shared:
            raise OutOfResources(needed, shared, "shared memory")
        return kernel

    JITFunction.run = run


def _launches_named():
    """`kernel[grid]` names the kernel (an autotuner's or heuristics' wrapped function) before its arguments bind."""
    from triton.runtime.jit import KernelInterface

    real_getitem = KernelInterface.__getitem__

    def getitem(self, grid):
        fn = self
        while not hasattr(fn, "__name__") and hasattr(fn, "fn"):
            fn = fn.fn
        launches.current = getattr(fn, "__name__", None) or getattr(getattr(self, "base_fn", None), "__name__", None)
        return real_getitem(self, grid)

    KernelInterface.__getitem__ = getitem


def _cache_entries() -> int:
    """Entries in Triton's on-disk cache (`TRITON_CACHE_DIR`), keyed by each kernel's source and specialization."""
    try:
        return len(os.listdir(os.environ.get("TRITON_CACHE_DIR") or os.path.expanduser("~/.triton/cache")))
    except OSError:
        return 0


def install(target: str = "sm_90") -> None:
    """Make this process's CUDA a stand-in for `target`, with Triton compiling launches for it and running none."""
    import torch
    from triton.runtime import driver

    capability, shared, sms = target_spec(target)
    name = f"stand-in for {target} (triage, no GPU)"
    _fake_cuda(capability, shared, sms, name)
    driver.set_active(_driver_class(capability, shared, sms)())
    _compile_only(shared)
    stages.install()
    _launches_named()
    torch.set_default_device("meta")
    _meta_mode_class()().__enter__()
