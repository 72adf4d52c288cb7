"""Which of Triton's compile stages a triage runs (issue 41): only those that have raised an error of their own.

`install()` is called once in a triage worker, by `runner.triage.stand_in.install`:
- every kernel compiles through the front end (Python AST -> Triton IR: 115 of the 116 compile errors of 544 real
  rows), TritonGPU IR, and the shared-memory allocation that LLVM IR's lowering starts with (`ttg.shared`, read as
  `metadata.shared`: the 116th error, a kernel needing more shared memory than the target has); the LLVM lowering,
  its O3 pipeline, PTX and cubin are stood in for (they raised none, and were about three quarters of the compile
  CPU). A launch needs only the kernel's name and an empty binary;
- an autotuner compiles its configs in order, each through the allocation, until one fits the target's shared
  memory: that one is the best (its launch is a cache hit). The configs after it compile through the front end only
  (`front_end_only`), once per distinct set of meta-parameters: a front-end error in any config fails the launch as
  it does on a GPU; its shared memory cannot change the verdict, since the GPU autotuner skips a config that does
  not fit and one already fits. Each is timed `inf`, so it is never chosen.
Triton's cache keys each kernel by its source, specialization and this pipeline (`_key`), so a front-end-only
compile is never taken for a whole one.
"""

from __future__ import annotations

import contextlib
import re
import threading

_PIPELINE = "triage-through-allocation"
_FRONT_END = "triage-front-end"
_PER_LAUNCH = ("num_warps", "num_stages")  # options that reach no front-end check: a config differing only here
_state = threading.local()


def front_end_only() -> bool:
    return getattr(_state, "front_end_only", False)


@contextlib.contextmanager
def _front_end():
    _state.front_end_only = True
    try:
        yield
    finally:
        _state.front_end_only = False


def _key() -> str:
    return _FRONT_END if front_end_only() else _PIPELINE


def _kernel_name(mod) -> str:
    found = re.search(r"tt\.func public @([A-Za-z_][A-Za-z0-9_]*)", str(mod))
    return found.group(1) if found else "triage_kernel"


def _named(mod, metadata) -> str:
    """The end of a front-end-only compile: the kernel's name, no shared memory."""
    metadata["name"] = _kernel_name(mod)
    metadata["shared"] = 0
    return ""


def _allocated(backend, mod, metadata, options, capability) -> str:
    """`make_llir`'s passes up to shared- and tensor-memory allocation, on the TritonGPU module, and the metadata a
    launch reads (`make_llir` reads the same attributes after the same passes)."""
    from triton._C.libtriton import ir, nvidia, passes
    from triton.backends.nvidia.compiler import get_ptx_version_from_options

    ptx_version = get_ptx_version_from_options(options, backend.target.arch)
    pm = ir.pass_manager(mod.context)
    passes.ttgpuir.add_combine_tensor_select_and_if(pm)
    passes.ttgpuir.add_allocate_warp_groups(pm, False)
    passes.convert.add_scf_to_cf(pm)
    passes.gluon.add_inliner(pm)
    nvidia.passes.ttgpuir.add_allocate_shared_memory_nv(pm, capability, ptx_version)
    nvidia.passes.ttnvgpuir.add_allocate_tensor_memory(pm)
    pm.run(mod, "triage_allocation")
    total_num_warps = mod.get_int_attr("ttg.total-num-warps")
    if total_num_warps is not None:
        metadata["num_warps"] = total_num_warps
    metadata["shared"] = mod.get_int_attr("ttg.shared") or 0
    metadata["tmem_size"] = mod.get_int_attr("ttg.tensor_memory_size")
    metadata["name"] = _kernel_name(mod)
    return ""


def _stages_hook():
    from triton import knobs

    def hook(*args):
        if not args:  # JITFunction.run asks for the hook's cache key
            return _key(), _key()
        backend, stages, options, _, capability = args
        if front_end_only():
            stages["ttgir"] = lambda src, metadata: src
            stages["llir"] = _named
        else:
            stages["llir"] = lambda src, metadata: _allocated(backend, src, metadata, options, capability)
        stages["ptx"] = lambda src, metadata: ""
        stages["cubin"] = lambda src, metadata: b""

    knobs.compilation.store_binary_only = True  # no IR text written to Triton's cache: only what a launch reads
    knobs.runtime.add_stages_inspection_hook = hook


def _front_end_key(config) -> str:
    return repr(sorted((k, repr(v)) for k, v in config.all_kwargs().items() if k not in _PER_LAUNCH))


def _autotune_until_one_fits():
    from triton.runtime.autotuner import Autotuner

    real_run, real_bench = Autotuner.run, Autotuner._bench

    def run(self, *args, **kwargs):
        self._triage_round = {"fits": False, "front_ends": set()}  # one benchmark of the configs per call
        return real_run(self, *args, **kwargs)

    def bench(self, *args, config, **meta):
        round_ = self._triage_round
        front = _front_end_key(config)
        if not round_["fits"]:
            timings = real_bench(self, *args, config=config, **meta)
            round_["front_ends"].add(front)
            round_["fits"] = timings[0] != float("inf")
            return timings
        if front not in round_["front_ends"]:
            round_["front_ends"].add(front)
            with _front_end():
                real_bench(self, *args, config=config, **meta)
        return [float("inf")] * 3

    Autotuner.run, Autotuner._bench = run, bench
    Autotuner.do_bench = property(lambda self: compile_once)


def compile_once(kernel_call, quantiles=None, **kwargs) -> list[float]:
    """A benchmark that compiles (`kernel_call` is a compile-only warm-up) and times nothing."""
    kernel_call()
    return [1.0, 1.0, 1.0]


def install() -> None:
    _stages_hook()
    _autotune_until_one_fits()
