"""Inside the child: load the program, build Model and ModelNew, check correctness, time on CUDA (design §4).

`evaluate_program` returns the verdict as a `RunResult` (the parent adds id, hash and times); it never raises for
anything the program does. Inputs and models are made on the job's device (`torch.device` as the default device
while `get_inputs()`/`get_init_inputs()`, `Model(...)` and `ModelNew(...)` run, same seeds) unless
`inputs_device="cpu"` (KernelBench's way: made on the CPU, then moved; building a 268M-parameter KernelBench
reference on one CPU thread takes 1.5 s, twice a row, with the GPU's shared gate held). On a GPU shared by several
jobs (`runner.pool.gate`), the harness's GPU work of the init and correctness stages runs under the GPU's shared gate and the
timing stage under its exclusive gate: no other job's harness work runs on the GPU while one job is timed. A program
that autotunes makes its first ModelNew call twice there: configs compiled under the shared gate, then benchmarked
with the GPU alone (`runner.child.autotune`)."""

from __future__ import annotations

import contextlib
import importlib.util
import random
import sys
import traceback
from collections.abc import Callable
from typing import Any

from common.hardware import result_device
from runner.child import autotune, timing
from runner.child.classify import classify
from runner.child.compare import compare_outputs
from runner.options import EvalOptions
from runner.pool.gate import EXCLUSIVE, NO_GATE, SHARED, ChildGate
from runner.profiles import LADDER
from runner.result import ErrorType, OutputDiff, RunResult

REQUIRED = ("Model", "ModelNew", "get_inputs", "get_init_inputs")
MODULE_NAME = "tlx_program"
EXCESSIVE_SPEEDUP = 10.0


class _Stop(Exception):
    """Ends the evaluation early with a verdict."""

    def __init__(self, verdict: RunResult) -> None:
        super().__init__(verdict.message)
        self.verdict = verdict


def set_seed(seed: int) -> None:
    import torch

    random.seed(seed)
    torch.manual_seed(seed)  # seeds every CUDA device too
    np = sys.modules.get("numpy")
    if np is not None:
        np.random.seed(seed % (1 << 32))


class Evaluation:
    def __init__(self, path: str, options: EvalOptions, device: str, emit: Callable[[str], None],
                 gate: ChildGate = NO_GATE) -> None:
        self.path, self.options, self.device, self.emit = path, options, device, emit
        self.gate = gate if device == "cuda" else NO_GATE
        self.flags: list[str] = []
        self.correct_trials = 0
        self.outputs: dict[int, OutputDiff] = {}
        self.outputs_complete = True  # every trial run compared every output
        self.autotunes = False  # the program's text names Triton's autotuner

    def fail(self, error_type: ErrorType, message: str, **extra: Any) -> _Stop:
        return _Stop(RunResult.failed(error_type, message, **extra))

    def guarded(self, stage: str, context: str, fn: Callable[..., Any], *args: Any, hold: str | None = SHARED) -> Any:
        """Run one step of the program; anything it raises becomes the verdict. `hold`: the gate mode the step
        runs under (SHARED: it may use the GPU; EXCLUSIVE: it needs the GPU alone; None: it holds already)."""
        self.emit(f"{stage}: {context}")
        try:
            with self.gate.hold(hold) if hold else contextlib.nullcontext():
                return fn(*args)
        except _Stop:
            raise
        except BaseException as exc:  # noqa: BLE001 - SystemExit and friends from the program are verdicts too
            if isinstance(exc, KeyboardInterrupt):
                raise
            f = classify(exc, stage, self.path, context)
            raise self.fail(f.error_type, f.message, exception=f.exception, traceback=f.traceback) from None

    # -- stages ---------------------------------------------------------------------------------------------
    def load(self) -> Any:
        self.emit("load: compile")
        with open(self.path, encoding="utf-8", errors="replace") as fh:
            source = fh.read()
        try:
            compile(source, self.path, "exec")
        except (SyntaxError, ValueError) as exc:
            f = classify(exc, "load", self.path)
            tb = "".join(traceback.format_exception_only(type(exc), exc))
            raise self.fail(ErrorType.SYNTAX_ERROR, f.message, exception=f.exception, traceback=tb) from None
        self.autotunes = "autotune" in source
        if self.device == "cuda":
            timing.pin_clocks()
        spec = importlib.util.spec_from_file_location(MODULE_NAME, self.path)
        module = importlib.util.module_from_spec(spec)
        sys.modules[MODULE_NAME] = module
        self.guarded("load", "importing the program", lambda: spec.loader.exec_module(module))  # may use the GPU
        missing = [name for name in REQUIRED if not callable(getattr(module, name, None))]
        if missing:
            raise self.fail(ErrorType.MISSING_SYMBOL, f"program does not define {', '.join(missing)}")
        return module

    def to_device(self, values: Any) -> list[Any]:
        import torch

        values = list(values) if isinstance(values, (list, tuple)) else [values]
        return [v.to(self.device) if isinstance(v, torch.Tensor) else v for v in values]

    @property
    def inputs_device(self) -> str:
        return self.device if self.options.inputs_device == "device" else "cpu"

    def make(self, factory: Callable[[], Any]) -> Callable[[], list[Any]]:
        """`factory` (get_inputs or get_init_inputs) made on the inputs' device, its tensors then moved to the
        job's device (a program that names a device keeps it until then)."""
        return self._on_inputs_device(factory, self.to_device)

    def construct(self, cls: Any, init: list[Any]) -> Callable[[], Any]:
        """`cls(*init)` with its parameters made on the inputs' device, then moved to the job's device."""
        return self._on_inputs_device(lambda: cls(*init), lambda model: model.to(self.device))

    def _on_inputs_device(self, make: Callable[[], Any], move: Callable[[Any], Any]) -> Callable[[], Any]:
        """A step that runs `make` with the inputs' device as torch's default device, then `move`s what it made."""
        import torch

        def step() -> Any:
            with torch.device(self.inputs_device):
                made = make()
            return move(made)

        return step

    def build(self, module: Any) -> tuple[Any, Any]:
        seed = self.options.seed
        set_seed(seed)
        init = self.guarded("init", "get_init_inputs()", self.make(module.get_init_inputs))
        set_seed(seed)
        model = self.guarded("init", "building Model", self.construct(module.Model, init))
        set_seed(seed)
        new = self.guarded("init", "building ModelNew", self.construct(module.ModelNew, init))
        self.guarded("init", "loading Model's state into ModelNew", lambda: self.load_state(model, new))
        return model, new

    def load_state(self, model: Any, new: Any) -> None:
        ref, cand = model.state_dict(), new.state_dict()
        same = {k: v for k, v in ref.items() if k in cand and tuple(cand[k].shape) == tuple(v.shape)}
        if same:
            new.load_state_dict({**cand, **same})
            self.flags.append(f"state_loaded:{len(same)}/{len(cand)}")

    def inputs(self, module: Any, seed: int) -> list[Any]:
        set_seed(seed)
        return self.guarded("correctness", "get_inputs()", self.make(module.get_inputs))

    def sync(self) -> None:
        if self.device == "cuda":
            import torch

            torch.cuda.synchronize()

    def correctness(self, module: Any, model: Any, new: Any) -> None:
        """All trials; a trial whose values differ beyond the tolerance fails the run but the other trials
        still run (their differences make `tolerance_passed` hold for every trial). Any other failure stops."""
        import torch

        n = self.options.trials
        mismatch: _Stop | None = None
        for trial in range(n):
            seed = self.options.seed + 1 + trial
            inputs = self.inputs(module, seed)
            clones = self.guarded("correctness", "copying the inputs", _cloned, inputs)
            with torch.no_grad():
                ref = self.guarded("correctness", f"Model forward (trial {trial + 1})", self._run, model, inputs)
                alone = trial == 0 and self.compile_autotuned(new, clones)
                context = f"ModelNew forward (trial {trial + 1}{', autotuning alone' if alone else ''})"
                out = self.guarded("correctness", context, self._run, new, clones, hold=EXCLUSIVE if alone else SHARED)
            cmp = self.guarded("correctness", "comparing outputs", compare_outputs, ref, out, self.options)
            del ref, out, inputs, clones
            self.record_outputs(cmp.outputs, cmp.error_type)
            if cmp.error_type is ErrorType.OUTPUT_MISMATCH:
                mismatch = mismatch or self.fail(cmp.error_type, f"trial {trial + 1} of {n}: {cmp.message}")
                continue
            if cmp.error_type is not ErrorType.OK:
                raise self.fail(cmp.error_type, f"trial {trial + 1} of {n}: {cmp.message}")
            self.correct_trials += 1
        if mismatch is not None:
            raise mismatch

    def compile_autotuned(self, new: Any, clones: list[Any]) -> bool:
        """On a shared GPU, when the program autotunes: call ModelNew once on copies of its inputs with every
        autotuner compiling its configs and timing nothing (`runner.child.autotune.compile_pass`; the RNG state is put
        back after). True when an autotuner ran: the next call then tunes with the GPU alone."""
        import torch

        if self.gate is NO_GATE or not self.autotunes:
            return False
        devices = [torch.cuda.current_device()] if self.device == "cuda" else []
        with torch.random.fork_rng(devices=devices), autotune.compile_pass() as tuners:
            self.guarded("correctness", "ModelNew forward (trial 1, compiling autotuned configs)",
                         lambda: self._run(new, _cloned(clones)))
        return bool(tuners)

    def record_outputs(self, records: list[OutputDiff], error_type: ErrorType) -> None:
        if error_type not in (ErrorType.OK, ErrorType.OUTPUT_MISMATCH, ErrorType.NAN_OUTPUT):
            self.outputs_complete = False
        for rec in records:
            seen = self.outputs.get(rec.index)
            self.outputs[rec.index] = rec if seen is None else seen.merged(rec)

    def tolerance_passed(self) -> float | None:
        """The tightest ladder tolerance every output passed on every trial run; None if any did not, or if no
        comparison was complete."""
        passed = [o.tolerance_passed for o in self.outputs.values()]
        if not passed or not self.outputs_complete or None in passed:
            return None
        return max(passed, default=LADDER[0])

    def _run(self, model: Any, inputs: list[Any]) -> Any:
        out = model(*inputs)
        self.sync()
        return out

    def time_both(self, module: Any, model: Any, new: Any) -> RunResult:
        """Time ModelNew, then Model, holding the GPU's exclusive gate (waiting for it is its own stage)."""
        import torch

        inputs = self.inputs(module, self.options.seed + 1000)
        opts = self.options.timing
        ref_opts = opts if opts.method == "cuda_events" else type(opts)(**{**opts.__dict__, "method": "cuda_events"})
        self.emit("timing: waiting for the GPU")
        with self.gate.exclusive(), torch.no_grad():
            t_new, f_new = self.guarded("timing", "timing ModelNew",
                                        lambda: timing.time_callable(lambda: new(*inputs), opts), hold=None)
            t_ref, f_ref = self.guarded("timing", "timing Model",
                                        lambda: timing.time_callable(lambda: model(*inputs), ref_opts), hold=None)
        self.flags += f_new + [f"ref_{f}" for f in f_ref]
        speedup = t_ref.median_ms / t_new.median_ms if t_new.median_ms > 0 else None
        if speedup is not None and speedup > EXCESSIVE_SPEEDUP:
            self.flags.append("excessive_speedup")
        msg = f"correct; ModelNew median {t_new.median_ms:.4g} ms (n={t_new.n}), speedup {speedup:.3g}x"
        return RunResult.passed(msg, timing=t_new, ref_timing=t_ref, speedup=speedup)

    def run(self) -> RunResult:
        module = self.load()
        model, new = self.build(module)
        self.correctness(module, model, new)
        if self.device != "cuda":
            self.flags.append("interpreted_no_timing")
            return RunResult.passed("correct; interpreted, no timing")
        return self.time_both(module, model, new)


def _cloned(values: list[Any]) -> list[Any]:
    """Copies of the tensors among `values` (the candidate may write into its inputs); other values as they are."""
    import torch

    return [v.clone() if isinstance(v, torch.Tensor) else v for v in values]


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


def _cpu_threads() -> int:
    import torch

    return torch.get_num_threads()


def method_record(options: EvalOptions, device: str, tf32: bool) -> dict[str, Any]:
    """The evaluation method stored with the result: profile, tolerances, flags, inputs, timing parameters."""
    profile = options.evaluation_profile
    atol, rtol = profile.tolerances("float32")
    by_dtype = {name: profile.tolerances(name)[0] for name in ("float32", "float64", "float16", "bfloat16")}
    return {
        "profile": profile.name, "atol": atol, "rtol": rtol, "tf32": tf32,
        "inputs_device": "cuda" if device == "cuda" and options.inputs_device == "device" else "cpu",
        "correctness": {"trials": options.trials, "seed": options.seed, "tolerance_by_dtype": by_dtype,
                        "tf32_forced_off": profile.tf32_off, "tolerance_ladder": list(LADDER)},
        "timing": timing.method_record(options.timing) if device == "cuda" else None,
        "cpu_threads": _cpu_threads(),
        "timeout_s": options.timeout_s,
    }


def evaluate_program(path: str, options: EvalOptions, device: str, emit: Callable[[str], None],
                     gate: ChildGate = NO_GATE) -> RunResult:
    tf32 = apply_backend_flags(options, device)
    ev = Evaluation(path, options, device, emit, gate)
    try:
        verdict = ev.run()
    except _Stop as stop:
        verdict = stop.verdict
        if device != "cuda":
            verdict.message = f"{verdict.message} (interpreted, no timing)"
    if device != "cuda" and "interpreted_no_timing" not in ev.flags:
        ev.flags.append("interpreted_no_timing")
    outputs = [ev.outputs[i] for i in sorted(ev.outputs)]
    abs_diffs = [o.max_abs_diff for o in outputs if o.max_abs_diff is not None]
    rel_diffs = [o.max_rel_diff for o in outputs if o.max_rel_diff is not None]
    verdict.correct_trials, verdict.trials = ev.correct_trials, options.trials
    verdict.max_abs_diff = max(abs_diffs) if abs_diffs else None
    verdict.max_rel_diff = max(rel_diffs) if rel_diffs else None
    verdict.outputs, verdict.tolerance_passed = outputs, ev.tolerance_passed()
    verdict.device = result_device(device)
    verdict.flags = ev.flags + verdict.flags
    verdict.method = method_record(options, device, tf32)
    return verdict
