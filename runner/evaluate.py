"""Inside the child: load the program, build Model and ModelNew, check correctness, time on CUDA (design §4).

`evaluate_program` returns the verdict as a dict of RunResult fields (the parent adds id, hash and times);
it never raises for anything the program does."""

from __future__ import annotations

import importlib.util
import random
import sys
import traceback
from collections.abc import Callable
from typing import Any

from runner import timing
from runner.classify import classify
from runner.compare import compare_outputs
from runner.options import EvalOptions
from runner.result import ErrorType

REQUIRED = ("Model", "ModelNew", "get_inputs", "get_init_inputs")
MODULE_NAME = "tlx_program"
EXCESSIVE_SPEEDUP = 10.0


class _Stop(Exception):
    """Ends the evaluation early with a verdict."""

    def __init__(self, verdict: dict[str, Any]) -> None:
        super().__init__(verdict.get("message", ""))
        self.verdict = verdict


def set_seed(seed: int) -> None:
    import torch

    random.seed(seed)
    torch.manual_seed(seed)  # seeds every CUDA device too
    np = sys.modules.get("numpy")
    if np is not None:
        np.random.seed(seed % (1 << 32))


class Evaluation:
    def __init__(self, path: str, options: EvalOptions, device: str, emit: Callable[[str], None]) -> None:
        self.path, self.options, self.device, self.emit = path, options, device, emit
        self.flags: list[str] = []
        self.correct_trials = 0
        self.max_abs: float | None = None
        self.max_rel: float | None = None

    def fail(self, error_type: ErrorType, message: str, **extra: Any) -> _Stop:
        return _Stop({"status": "failed", "error_type": error_type.value, "message": message, **extra})

    def guarded(self, stage: str, context: str, fn: Callable[..., Any], *args: Any) -> Any:
        self.emit(f"{stage}: {context}")
        try:
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
        if self.device == "cuda":
            timing.pin_clocks()
        spec = importlib.util.spec_from_file_location(MODULE_NAME, self.path)
        module = importlib.util.module_from_spec(spec)
        sys.modules[MODULE_NAME] = module
        self.guarded("load", "importing the program", lambda: spec.loader.exec_module(module))
        missing = [name for name in REQUIRED if not callable(getattr(module, name, None))]
        if missing:
            raise self.fail(ErrorType.MISSING_SYMBOL, f"program does not define {', '.join(missing)}")
        return module

    def to_device(self, values: Any) -> list[Any]:
        import torch

        values = list(values) if isinstance(values, (list, tuple)) else [values]
        return [v.to(self.device) if isinstance(v, torch.Tensor) else v for v in values]

    def build(self, module: Any) -> tuple[Any, Any]:
        seed = self.options.seed
        set_seed(seed)
        init = self.to_device(self.guarded("init", "get_init_inputs()", module.get_init_inputs))
        set_seed(seed)
        model = self.guarded("init", "building Model", lambda: module.Model(*init).to(self.device))
        set_seed(seed)
        new = self.guarded("init", "building ModelNew", lambda: module.ModelNew(*init).to(self.device))
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
        return self.to_device(self.guarded("correctness", "get_inputs()", module.get_inputs))

    def sync(self) -> None:
        if self.device == "cuda":
            import torch

            torch.cuda.synchronize()

    def correctness(self, module: Any, model: Any, new: Any) -> None:
        import torch

        n = self.options.trials
        for trial in range(n):
            seed = self.options.seed + 1 + trial
            inputs = self.inputs(module, seed)
            clones = [v.clone() if isinstance(v, torch.Tensor) else v for v in inputs]
            with torch.no_grad():
                ref = self.guarded("correctness", f"Model forward (trial {trial + 1})", self._run, model, inputs)
                out = self.guarded("correctness", f"ModelNew forward (trial {trial + 1})", self._run, new, clones)
            cmp = self.guarded("correctness", "comparing outputs", compare_outputs, ref, out, self.options)
            if cmp.max_abs_diff is not None:
                self.max_abs = max(self.max_abs or 0.0, cmp.max_abs_diff)
                self.max_rel = max(self.max_rel or 0.0, cmp.max_rel_diff or 0.0)
            if cmp.error_type is not ErrorType.OK:
                raise self.fail(cmp.error_type, f"trial {trial + 1} of {n}: {cmp.message}")
            self.correct_trials += 1

    def _run(self, model: Any, inputs: list[Any]) -> Any:
        out = model(*inputs)
        self.sync()
        return out

    def time_both(self, module: Any, model: Any, new: Any) -> dict[str, Any]:
        import torch

        inputs = self.inputs(module, self.options.seed + 1000)
        opts = self.options.timing
        with torch.no_grad():
            t_new, f_new = self.guarded("timing", "timing ModelNew", lambda: timing.time_callable(lambda: new(*inputs), opts))
            ref_opts = opts if opts.method == "cuda_events" else type(opts)(**{**opts.__dict__, "method": "cuda_events"})
            t_ref, f_ref = self.guarded("timing", "timing Model", lambda: timing.time_callable(lambda: model(*inputs), ref_opts))
        self.flags += f_new + [f"ref_{f}" for f in f_ref]
        speedup = t_ref.median_ms / t_new.median_ms if t_new.median_ms > 0 else None
        if speedup is not None and speedup > EXCESSIVE_SPEEDUP:
            self.flags.append("excessive_speedup")
        return {"timing": t_new.to_dict(), "ref_timing": t_ref.to_dict(), "speedup": speedup}

    def run(self) -> dict[str, Any]:
        module = self.load()
        model, new = self.build(module)
        self.correctness(module, model, new)
        if self.device != "cuda":
            self.flags.append("interpreted_no_timing")
            return {"status": "ok", "error_type": None, "message": "correct; interpreted, no timing"}
        timed = self.time_both(module, model, new)
        t = timed["timing"]
        msg = f"correct; ModelNew median {t['median_ms']:.4g} ms (n={t['n']}), speedup {timed['speedup']:.3g}x"
        return {"status": "ok", "error_type": None, "message": msg, **timed}


def _full_fp32() -> None:
    """TF32 off (cuDNN turns it on for convolutions by default): the 1e-4 fp32 tolerance assumes a true fp32
    reference. A candidate may still turn it on for itself; that is its choice and is measured as such."""
    import torch

    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False


def _cpu_threads() -> int:
    import torch

    return torch.get_num_threads()


def evaluate_program(path: str, options: EvalOptions, device: str, emit: Callable[[str], None]) -> dict[str, Any]:
    if device == "cuda":
        _full_fp32()
    ev = Evaluation(path, options, device, emit)
    try:
        verdict = ev.run()
    except _Stop as stop:
        verdict = stop.verdict
        if device != "cuda":
            verdict["message"] = f"{verdict['message']} (interpreted, no timing)"
    if device != "cuda" and "interpreted_no_timing" not in ev.flags:
        ev.flags.append("interpreted_no_timing")
    method = {
        "correctness": {
            "trials": options.trials, "seed": options.seed, "legacy_tolerance": options.legacy_tolerance,
            "atol": options.atol, "rtol": options.rtol, "tolerance_by_dtype": "kernelbench",
            "tf32": False,
        },
        "timing": timing.method_record(options.timing) if device == "cuda" else None,
        "cpu_threads": _cpu_threads(),
        "timeout_s": options.timeout_s,
    }
    return {
        "correct_trials": ev.correct_trials, "trials": options.trials, "max_abs_diff": ev.max_abs,
        "max_rel_diff": ev.max_rel, "timing": None, "ref_timing": None, "speedup": None,
        "device": "cuda" if device == "cuda" else "cpu-interpreter", "flags": ev.flags, "method": method,
        **verdict,
    }
