"""One program's CPU triage, stage by stage (`triage(path, target)` -> a result dict), in a process whose CUDA is
the stand-in (`runner.triage.stand_in.install`).

Stages, in the GPU runner's order and with its error types (`runner.child.classify`, one taxonomy for both):
1. `import`: Python compiles the text (`syntax_error`), the module runs (`import_error`, or `compile_error` from
   a kernel built at import), it defines `Model`, `ModelNew`, `get_inputs`, `get_init_inputs` (`missing_symbol`);
2. `build`: `get_init_inputs()`, `Model(...)` and `ModelNew(...)` from the same seed, Model's state loaded where
   the shapes match (`init_error`), then `get_inputs()` (`runtime_error`, as the runner calls it);
3. `compile`: `Model` then `ModelNew` on the inputs; every Triton launch compiles for the target and runs nothing
   (`compile_error`, `launch_error`, `runtime_error` for a Python error before or between launches);
4. `compare`: the outputs' structure and shapes (`shape_mismatch`, as `runner.child.compare` decides it).
Meta tensors carry no values: a step that needs one (`.item()`, a copy to the host, an op with no meta kernel)
ends the triage as `not_triaged` with the reason, unless the candidate fails to compile anyway. `passed` means
"compiles and shapes match: the rest needs a GPU".
"""

from __future__ import annotations

import importlib.util
import sys
import time
import traceback
from pathlib import Path
from typing import Any

from common.outcomes import ErrorType, TriageStatus
from runner.child.classify import bounded, classify
from runner.child.compare import flatten

MODULE_NAME = "triage_program"
REQUIRED = ("Model", "ModelNew", "get_inputs", "get_init_inputs")
SEED = 42
# What torch says when a step needs the values meta tensors do not have, or a real CUDA device (graphs, streams'
# handles, a driver call): limits of the stand-in, not faults of the program.
_STAND_IN_TEXT = ("meta tensor", "meta device", "'meta' backend", "meta backend", "on meta", "data-dependent",
                  "cannot be called on meta", "item()", "'meta'", "cuda")
_STAND_IN_PATHS = ("/torch/cuda/", "/torch/_subclasses/", "/torch/_meta_registrations", "/torch/_prims")
_DEVICE_FREE = {ErrorType.COMPILE_ERROR, ErrorType.LAUNCH_ERROR}


class Ended(Exception):
    """The triage reached its verdict (`result`) before the last stage."""

    def __init__(self, result: dict):
        super().__init__(result.get("error_type") or result.get("reason"))
        self.result = result


def _needs_a_gpu(exc: BaseException) -> bool:
    """Whether `exc` comes from the stand-in's limits: a value meta tensors do not have, a real CUDA device."""
    chain, seen = [], exc
    while seen is not None and len(chain) < 8:
        chain.append(seen)
        seen = seen.__cause__ or seen.__context__
    text = " ".join(f"{type(e).__name__}: {e}".lower() for e in chain)
    frames = [f.filename.replace("\\", "/") for e in chain for f in traceback.extract_tb(e.__traceback__)[-1:]]
    return any(t in text for t in _STAND_IN_TEXT) or any(p in f for f in frames for p in _STAND_IN_PATHS)


def _failed(exc: BaseException, stage: str, runner_stage: str, path: str, context: str) -> dict:
    f = classify(exc, runner_stage, path, context)
    result = {"triage_status": TriageStatus.FAILED.value, "error_type": f.error_type.value, "message": f.message,
              "exception": f.exception, "traceback": f.traceback, "stage": stage}
    if f.error_type is ErrorType.IMPORT_ERROR:
        result["module"] = getattr(exc, "name", None)
    return result


def _not_triaged(exc: BaseException, stage: str, context: str) -> dict:
    return {"triage_status": TriageStatus.NOT_TRIAGED.value, "error_type": None, "stage": stage,
            "reason": bounded(f"{context} needs a GPU (values meta tensors do not have, or a CUDA device): "
                              f"{type(exc).__name__}: {exc}", 600),
            "exception": type(exc).__name__}


def _step(stage: str, runner_stage: str, context: str, path: str, fn, *args):
    """`fn(*args)`, or `Ended` with the failure classified as the GPU runner would, or as `not_triaged`."""
    from runner.triage import stand_in

    try:
        return fn(*args)
    except Exception as exc:  # every program failure is a verdict
        result = _failed(exc, stage, runner_stage, path, context)
        if result["error_type"] in _DEVICE_FREE:
            result["kernel"] = stand_in.launches.current
        elif not isinstance(exc, ImportError) and _needs_a_gpu(exc):
            result = _not_triaged(exc, stage, context)
        raise Ended(result) from None


def _import(path: str) -> Any:
    spec = importlib.util.spec_from_file_location(MODULE_NAME, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[MODULE_NAME] = module
    spec.loader.exec_module(module)
    return module


def _built(module: Any) -> tuple[Any, Any]:
    import torch

    torch.manual_seed(SEED)
    init = list(module.get_init_inputs())
    torch.manual_seed(SEED)
    model = module.Model(*init)
    torch.manual_seed(SEED)
    new = module.ModelNew(*init)
    if isinstance(model, torch.nn.Module) and isinstance(new, torch.nn.Module):
        own = new.state_dict()
        same = {k: v for k, v in model.state_dict().items() if k in own and own[k].shape == v.shape}
        new.load_state_dict({**own, **same})
    return model, new


def _inputs(module: Any) -> list[Any]:
    import torch

    torch.manual_seed(SEED)
    return list(module.get_inputs())


def _spec(out: Any) -> list[str]:
    return [f"{tuple(v.shape)} {str(v.dtype).removeprefix('torch.')}" if hasattr(v, "shape") else type(v).__name__
            for v in flatten(out)]


def _compare(ref: Any, cand: Any) -> str | None:
    """The runner's shape rule (`runner.child.compare.compare_outputs`) on structure and shapes alone."""
    import torch

    refs, cands = flatten(ref), flatten(cand)
    if len(refs) != len(cands):
        return f"expected {len(refs)} output(s), got {len(cands)}"
    for i, (r, c) in enumerate(zip(refs, cands, strict=True)):
        if isinstance(r, torch.Tensor) and not isinstance(c, torch.Tensor | bool | int | float | complex):
            return f"output {i}: expected a tensor, got {type(c).__name__}"
        if isinstance(r, torch.Tensor) and isinstance(c, torch.Tensor) and tuple(r.shape) != tuple(c.shape):
            return f"output {i}: expected shape {tuple(r.shape)}, got {tuple(c.shape)}"
    return None


_PHASES = ("import", "build", "compile", "compare")


class _Phases:
    """Wall (`wall`) and CPU (`cpu`) seconds of each phase, each lap from the end of the one before; `end()` laps
    the phase a verdict ended (a compile error's row shows its compile time)."""

    def __init__(self):
        self.wall: dict[str, float] = {}
        self.cpu: dict[str, float] = {}
        self._mark = (time.perf_counter(), time.process_time())

    def lap(self, phase: str) -> None:
        now = (time.perf_counter(), time.process_time())
        self.wall[phase], self.cpu[phase] = now[0] - self._mark[0], now[1] - self._mark[1]
        self._mark = now

    def end(self) -> None:
        if "compare" not in self.wall:
            self.lap(_PHASES[len(self.wall)])


def triage(path: str) -> dict:
    """The triage of the program at `path` (fields of the result line but `id`, versions and target)."""
    import torch

    from runner.triage import stand_in

    stand_in.launches.reset()
    phases = _Phases()
    try:
        source = Path(path).read_text(encoding="utf-8", errors="replace")
        try:
            compile(source, path, "exec")
        except SyntaxError as exc:
            raise Ended({"triage_status": TriageStatus.FAILED.value, "error_type": ErrorType.SYNTAX_ERROR.value,
                         "stage": "import", "exception": "SyntaxError",
                         "message": bounded(f"line {exc.lineno}: {exc.msg}", 2000)}) from None
        module = _step("import", "load", "importing the program", path, _import, path)
        missing = [name for name in REQUIRED if not hasattr(module, name)]
        if missing:
            raise Ended({"triage_status": TriageStatus.FAILED.value, "error_type": ErrorType.MISSING_SYMBOL.value,
                         "stage": "import", "message": f"program does not define {', '.join(missing)}"})
        phases.lap("import")
        model, new = _step("build", "init", "building Model and ModelNew", path, _built, module)
        inputs = _step("build", "correctness", "get_inputs()", path, _inputs, module)
        phases.lap("build")
        with torch.no_grad():
            try:
                ref = _step("compile", "correctness", "Model forward", path, model, *inputs)
            except Ended as ended:
                ref = ended  # the reference needs values: the candidate may still fail to compile
            cand = _step("compile", "correctness", "ModelNew forward", path, new, *inputs)
        phases.lap("compile")
        if isinstance(ref, Ended):
            raise ref
        mismatch = _compare(ref, cand)
        phases.lap("compare")
        if mismatch:
            raise Ended({"triage_status": TriageStatus.FAILED.value, "error_type": ErrorType.SHAPE_MISMATCH.value,
                         "stage": "compare", "message": mismatch})
        result = {"triage_status": TriageStatus.PASSED.value, "error_type": None, "stage": None,
                  "message": f"compiles and shapes match: reference {_spec(ref)}, candidate {_spec(cand)}"}
    except Ended as ended:
        result = ended.result
    phases.end()
    result["phases_s"] = {k: round(v, 4) for k, v in phases.wall.items()}
    result["phases_cpu_s"] = {k: round(v, 4) for k, v in phases.cpu.items()}
    result["compile_s"] = round(stand_in.launches.seconds, 4)
    result["kernels"] = sorted(set(stand_in.launches.kernels))
    result["cache"] = {"hits": stand_in.launches.hits, "misses": stand_in.launches.misses,
                       "from_disk": stand_in.launches.from_disk}
    return result


def warm_up() -> None:
    """Triage the bundled warm-up program (`runner/triage/warm_up.py`) in this process, once, before a worker forks
    its first child: torch's and Triton's first-use work is then inherited by every child instead of redone in each.
    A warm-up that does not pass means the stand-in is broken: RuntimeError says so."""
    result = triage(str(Path(__file__).with_name("warm_up.py")))
    if result["triage_status"] != TriageStatus.PASSED.value:
        raise RuntimeError(f"the triage warm-up program did not pass: {result.get('message') or result.get('reason')}")
