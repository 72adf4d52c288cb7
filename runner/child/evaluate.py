"""The judge: reference outputs, comparison and the verdict, in a process that never imports the candidate
(design §4). The candidate's process (`runner.child.candidate`) runs ModelNew on inputs it makes from the same
seeds and hands back its outputs over the link; the judge runs the reference part of the program
(`runner.child.reference`) and compares.

`evaluate_program` reads as the phases of an evaluation, in order, and returns the verdict as a `RunResult` (the
parent adds id, hash and times); it never raises for anything the program does. Inputs and models are made on the
job's device (`torch.device` as the default device while `get_inputs()`/`get_init_inputs()`, `Model(...)` and
`ModelNew(...)` run, same seeds) unless `inputs_device="cpu"` (KernelBench's way: made on the CPU, then moved).
Both processes make the same inputs; a digest of them travels with the first trial's outputs and the recheck's
and must match the judge's (else `inputs_differ`).

The order of a job: both load (in parallel); correctness trials (the first with ModelNew run before Model, so
that memory the reference freed cannot hold its answer; the others reference first); one untimed ModelNew call
with its kernel launches recorded (`runner.child.launches`: `no_triton_launch`, `launches`); on CUDA, ModelNew
timed in its process, then Model in the judge's, holding the GPU's exclusive gate; then the recheck: fresh
values written into the same input tensors ModelNew was timed on, one call, compared with Model on those values
(a mismatch fails the run with `output_reused`). On a GPU shared by several jobs (`runner.gpu.gate`), the judge
holds the shared gate around each step either process takes on the GPU and the exclusive gate for timing; a
program that autotunes makes its first ModelNew call twice there (configs compiled under the shared gate, then
benchmarked with the GPU alone: `runner.child.autotune`)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from common.hardware import result_device
from common.outcomes import ErrorType
from common.settings import CUDA_IPC_ENV, cuda_ipc_wanted
from runner.child import launches, pinning, timing
from runner.child.candidate_client import CandidateProcess, open_for
from runner.child.compare import compare_outputs, flatten
from runner.child.integrity import Snapshot
from runner.child.loop_check import LOOP_CHECK_SEED_OFFSET, timed_work_short
from runner.child.reference import RejectedReference, reference_source
from runner.child.steps import Steps, Stop, fail, import_file, inputs_digest
from runner.gpu.gate import EXCLUSIVE, NO_GATE, SHARED, WAITING_FOR_GPU, ChildGate
from runner.options import EvalOptions
from runner.profiles import LADDER
from runner.result import REF_TIMING_REUSED as REUSED_FLAG
from runner.result import OutputDiff, RunResult

REFERENCE_MODULE = "tlx_reference"
EXCESSIVE_SPEEDUP = 10.0
TIMING_SEED_OFFSET, RECHECK_SEED_OFFSET = 1000, 2000
OUTPUT_SLACK_BYTES = 1 << 20
TIMING_BELOW_KERNELS = 0.5  # a timed median under this share of one call's Triton kernel time: work not timed


def _nbytes(leaves: list[Any]) -> int:
    import torch

    return sum(t.numel() * t.element_size() for t in leaves if isinstance(t, torch.Tensor))


class Judge:
    def __init__(self, path: str, options: EvalOptions, device: str, emit: Callable[[str], None],
                 gate: ChildGate, candidate: CandidateProcess, reference_timing: dict[str, Any] | None = None) -> None:
        self.path, self.options, self.device = path, options, device
        self.reference_timing = reference_timing  # Model's timing measured by an earlier job (`runner.gpu.reference_timings`)
        self.candidate = candidate

        def emit(text: str, _emit: Callable[[str], None] = emit) -> None:
            candidate.stage = text
            _emit(text)

        self.emit = emit
        self.steps = Steps(str(Path(path).with_name("reference.py")), options, device, emit, gate)
        self.gate = self.steps.gate
        self.flags: list[str] = []
        self.correct_trials = 0
        self.outputs: dict[int, OutputDiff] = {}
        self.outputs_complete = True  # every trial run compared every output
        self.autotunes = False
        self.launches: dict[str, Any] = launches.not_checked("the run stopped before the launch check")
        self.timing_cpu: dict[str, Any] | None = None  # the core the timing threads ran on (runner.gpu.cpu_plan)
        self.ipc_wanted = device == "cuda" and cuda_ipc_wanted()
        self.snapshot: Snapshot | None = None  # taken before the reference part is imported
        self.timed_call_checked: bool | None = None  # whether a call of the timing loop was checked (CUDA only)
        self.ipc, self.handover = False, "host copies: " + ("not a CUDA job" if device != "cuda" else "not probed")

    # -- loading ---------------------------------------------------------------------------------------------
    def load(self, cache_dir: str) -> tuple[Any, Any]:
        """Both sides load at once, without the GPU gate: the candidate imports the program while the judge imports
        the reference part (CPU work, after the candidate has warmed up: `ready`). Then, holding the shared gate,
        both build (init inputs, ModelNew and Model on the device). The candidate's failure wins (it is the
        program's)."""
        self.emit("load: waiting for the candidate's process to warm up")
        self.candidate.ready()
        self.emit("load: importing the program")
        open_for(Path(self.path), self.candidate.identity)
        self.candidate.ask("load", program=self.path, options=self.options.to_dict(), device=self.device,
                           triton_cache_dir=cache_dir)
        module, problem = self._both(self._reference)
        self.emit("load: importing the program")  # what a candidate that dies now was doing
        answer = self.candidate.answer()
        self.autotunes = bool(answer.get("autotunes"))
        if problem is not None:
            raise problem
        self.emit("init: building Model and ModelNew")
        with self.gate.hold(SHARED):
            self.candidate.ask("build", ipc=self.ipc_wanted)
            model, problem = self._both(lambda: self.steps.model(module, "Model", self.steps.init_inputs(module)))
            answer = self.candidate.answer()
        if problem is not None:
            raise problem
        self.untouched("building Model")
        self.flags += [str(f) for f in answer.get("flags") or [] if isinstance(f, str)][:20]
        self.probe_ipc(answer)
        return module, model

    @staticmethod
    def _both(step: Callable[[], Any]) -> tuple[Any, Stop | None]:
        """The judge's half of a step both processes take at once: its value, or its failure kept until the
        candidate has answered (whose failure wins)."""
        try:
            return step(), None
        except Stop as stop:
            return None, stop

    def probe_ipc(self, answer: dict[str, Any]) -> None:
        """Outputs come as CUDA IPC handles if the candidate's probe opened here with its values, else as bytes."""
        if self.device != "cuda":
            return
        if not self.ipc_wanted:
            self.handover = f"host copies: {CUDA_IPC_ENV}=0"
        elif "ipc_probe" in answer:
            from runner.child import cuda_ipc

            refused = cuda_ipc.probe_matches(answer["ipc_probe"])
            self.ipc = refused is None
            self.handover = "CUDA IPC handles" if self.ipc else f"host copies: the IPC probe failed: {refused}"
        else:
            self.handover = f"host copies: the candidate could not export: {answer.get('ipc_refused')}"

    def _reference(self) -> Any:
        with open(self.path, encoding="utf-8", errors="replace") as fh:
            program = fh.read()
        try:
            source = reference_source(program)
        except SyntaxError:
            raise fail(ErrorType.SYNTAX_ERROR, "the program does not parse") from None
        except RejectedReference as exc:
            raise fail(ErrorType.REFERENCE_REJECTED, f"the judge does not run this program's reference: {exc}") from None
        ref_path = Path(self.steps.path)
        ref_path.write_text(source, encoding="utf-8", errors="surrogatepass")
        self.snapshot = Snapshot()
        module = self.steps.guarded("load", "importing the reference part", import_file, str(ref_path),
                                    REFERENCE_MODULE)
        self.untouched("importing the reference part")
        return module

    def untouched(self, step: str) -> None:
        """Refuse the run when the reference part replaced what the judge's comparison rests on
        (`runner.child.integrity`)."""
        changed = self.snapshot.changed() if self.snapshot is not None else []
        if changed:
            raise fail(ErrorType.REFERENCE_REJECTED, f"the reference part changed {', '.join(changed[:5])} while "
                       f"{step}: the judge does not compare under it")

    # -- correctness -----------------------------------------------------------------------------------------
    def reference_output(self, module: Any, model: Any, seed: int, context: str, digest: bool) -> tuple[Any, str | None]:
        """Model's output on the inputs made after `seed`, and their digest when asked (the first trial and the
        recheck: the inputs are made the same way every time)."""
        import torch

        inputs = self.steps.inputs(module, seed)
        digest = self.steps.guarded("correctness", "digest of the inputs", inputs_digest, inputs) if digest else None
        with torch.no_grad():
            ref = self.steps.guarded("correctness", context, self.steps.forward, model, inputs)
        self.untouched(f"making the inputs and running {context}")
        return ref, digest

    def candidate_output(self, header: dict[str, Any], ref: Any, digest: str | None) -> list[Any]:
        if digest is not None and header.get("digest") != digest:
            self.flags.append("inputs_differ")
            raise fail(ErrorType.OUTPUT_MISMATCH, "the candidate's process made other inputs than the reference's "
                       "from the same seed (get_inputs is not deterministic, or the candidate redefines it)")
        limit = 2 * _nbytes(flatten(ref)) + OUTPUT_SLACK_BYTES
        return self.steps.guarded("correctness", "receiving ModelNew's outputs",
                                  lambda: self.candidate.outputs(header, self.device, limit, self.ipc))

    def trial(self, module: Any, model: Any, trial: int) -> Any:
        """One trial's comparison; the first runs ModelNew before Model."""
        n, seed = self.options.trials, self.options.seed + 1 + trial
        alone = trial == 0 and self.compile_autotuned(seed)
        label = f"ModelNew forward (trial {trial + 1}{', autotuning alone' if alone else ''})"
        self.emit(f"correctness: {label}")
        with self.gate.hold(EXCLUSIVE if alone else SHARED):
            first = trial == 0
            if first:
                header = self.candidate.request("forward", seed=seed, digest=True, ipc=self.ipc)
                ref, digest = self.reference_output(module, model, seed, f"Model forward (trial {trial + 1})", True)
            else:
                ref, digest = self.reference_output(module, model, seed, f"Model forward (trial {trial + 1})", False)
                self.emit(f"correctness: {label}")
                header = self.candidate.request("forward", seed=seed, ipc=self.ipc)
            out = self.candidate_output(header, ref, digest)
            cmp = self.steps.guarded("correctness", "comparing outputs", compare_outputs, ref, out, self.options,
                                     _structure(header), hold=None)
        self.record_outputs(cmp.outputs, cmp.error_type)
        if cmp.error_type is not ErrorType.OK:
            return cmp.error_type, f"trial {trial + 1} of {n}: {cmp.message}"
        self.correct_trials += 1
        return None

    def correctness(self, module: Any, model: Any) -> None:
        """All trials; a trial whose values differ beyond the tolerance fails the run but the other trials
        still run (their differences make `tolerance_passed` hold for every trial). Any other failure stops."""
        mismatch: Stop | None = None
        for trial in range(self.options.trials):
            failed = self.trial(module, model, trial)
            if failed is None:
                continue
            error_type, message = failed
            if error_type is ErrorType.OUTPUT_MISMATCH:
                mismatch = mismatch or fail(error_type, message)
                continue
            raise fail(error_type, message)
        if mismatch is not None:
            raise mismatch

    def compile_autotuned(self, seed: int) -> bool:
        """On a shared GPU, when the program autotunes: one ModelNew call with every autotuner compiling its
        configs and timing nothing (`runner.child.autotune.compile_pass`). True when an autotuner ran: the next
        call then tunes with the GPU alone."""
        if self.gate is NO_GATE or not self.autotunes:
            return False
        self.emit("correctness: ModelNew forward (trial 1, compiling autotuned configs)")
        with self.gate.hold(SHARED):
            return bool(self.candidate.request("compile_pass", seed=seed).get("tuners"))

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

    # -- what ran, timing, recheck ---------------------------------------------------------------------------
    def record_launches(self) -> None:
        """One more call on the first trial's inputs, its launches recorded: a candidate that answers an input it
        has seen from a cache launches nothing (`no_triton_launch`). On CUDA the timing stage records them (with
        the GPU alone, so that other jobs' kernels do not stretch their times); this call then only profiles a
        call in which no Triton kernel ran, to say what ran instead."""
        self.emit("launches: ModelNew forward (recording launches)")
        with self.gate.hold(SHARED):
            self.take_launches(self.candidate.request("launches", seed=self.options.seed + 1).get("launches"))

    def take_launches(self, record: Any) -> None:
        self.launches = record if isinstance(record, dict) else launches.not_checked("no launch record came back")

    def time_reference(self, model: Any, inputs: Any, opts: Any) -> tuple[Any, list[str]]:
        """Model's timing and flags: measured here (the GPU held alone), or the one an earlier job of a bulk run
        measured for the same reference text, settings and GPU (`runner.gpu.reference_timings`)."""
        import torch

        from runner.result import Timing

        reused = Timing.from_dict((self.reference_timing or {}).get("timing"))
        if reused is not None:
            self.flags.append(REUSED_FLAG)
            return reused, [str(f) for f in self.reference_timing.get("flags") or []]
        ref_opts = opts if opts.method == "cuda_events" else type(opts)(**{**opts.__dict__, "method": "cuda_events"})
        with torch.no_grad():
            return self.steps.guarded("timing", "timing Model",
                                      lambda: timing.time_callable(lambda: model(*inputs), ref_opts), hold=None)

    def time_both(self, module: Any, model: Any) -> RunResult:
        """Time ModelNew (in its process), then Model (here, unless its timing is reused), holding the GPU's
        exclusive gate."""
        from runner.result import Timing

        seed = self.options.seed + TIMING_SEED_OFFSET
        opts = self.options.timing
        inputs = self.steps.inputs(module, seed, stage="timing")
        self.emit(f"timing: {WAITING_FOR_GPU}")
        cpu = pinning.timing_cpu()
        with self.gate.exclusive():
            self.emit("timing: timing ModelNew")
            answer = self.candidate.request("time", seed=seed, timing=opts.__dict__, cpu=cpu,
                                            loop_seed=self.options.seed + LOOP_CHECK_SEED_OFFSET)
            with pinning.pinned(cpu) as judge_pinned:
                t_ref, f_ref = self.time_reference(model, inputs, opts)
        self.timing_cpu = {"cpu": cpu, "model_new_pinned": answer.get("pinned") is True, "model_pinned": judge_pinned}
        t_new = Timing.from_dict(answer.get("timing"))
        if t_new is None:
            raise fail(ErrorType.RUNTIME_ERROR, "the candidate's timing came back empty")
        self.take_launches(answer.get("launches"))
        self.flags += [str(f) for f in answer.get("flags") or [] if isinstance(f, str)][:20] + [f"ref_{f}" for f in f_ref]
        kernels_ms = self.launches.get("triton_ms") if self.launches.get("checked") else None  # with the GPU alone
        if kernels_ms and t_new.median_ms < TIMING_BELOW_KERNELS * kernels_ms:
            self.flags.append("timing_below_kernel_time")  # the call took less than its Triton kernels alone
        if timed_work_short(_number(self.launches.get("timed_triton_ms")), kernels_ms):
            self.flags.append("timed_work_below_checked")  # the timed calls ran less Triton work than a checked one
        speedup = t_ref.median_ms / t_new.median_ms if t_new.median_ms > 0 else None
        if speedup is not None and speedup > EXCESSIVE_SPEEDUP:
            self.flags.append("excessive_speedup")
        msg = f"correct; ModelNew median {t_new.median_ms:.4g} ms (n={t_new.n}), speedup {speedup:.3g}x"
        return RunResult.passed(msg, timing=t_new, ref_timing=t_ref, speedup=speedup)

    def recheck(self, module: Any, model: Any) -> None:
        """Fresh values in the tensors ModelNew was timed on (or called on once, without timing), one call,
        compared with Model on those values: an output kept from an earlier call fails here."""
        seed = self.options.seed + RECHECK_SEED_OFFSET
        self.emit("recheck: ModelNew forward on fresh values in the same input tensors")
        with self.gate.hold(SHARED):
            header = self.candidate.request("recheck", seed=seed, first_seed=self.options.seed + TIMING_SEED_OFFSET,
                                            ipc=self.ipc)
            ref, digest = self.reference_output(module, model, seed, "Model forward (recheck)", True)
            out = self.candidate_output(header, ref, digest)
            cmp = self.steps.guarded("recheck", "comparing outputs", compare_outputs, ref, out, self.options,
                                     _structure(header), hold=None)
        if cmp.error_type is not ErrorType.OK:
            self.flags.append("output_reused")
            raise fail(cmp.error_type, "after the timed calls, ModelNew's output on fresh values written into the "
                       f"same input tensors is wrong (an output kept from an earlier call?): {cmp.message}")

    def loop_check(self, module: Any, model: Any) -> None:
        """The timing loop's call on fresh inputs (`runner.child.loop_check`), compared with Model on those values:
        a candidate that did less work inside the timing loop than in a checked call fails here (CUDA: an interpreted
        run has no timing loop)."""
        if self.device != "cuda":
            return
        self.emit("loop check: ModelNew's output from inside the timing loop, on fresh values")
        with self.gate.hold(SHARED):
            header = self.candidate.request("loop_check", ipc=self.ipc)
            if header.get("checked") is not True:
                self.timed_call_checked = False
                return
            ref, digest = self.reference_output(module, model, self.options.seed + LOOP_CHECK_SEED_OFFSET,
                                                "Model forward (loop check)", True)
            out = self.candidate_output(header, ref, digest)
            cmp = self.steps.guarded("loop check", "comparing outputs", compare_outputs, ref, out, self.options,
                                     _structure(header), hold=None)
        self.timed_call_checked = True
        if cmp.error_type is not ErrorType.OK:
            self.flags.append("timed_call_differs")
            raise fail(cmp.error_type, "a call inside the timing loop, on fresh values, gave a wrong output (ModelNew "
                       f"does other work when timed than when checked): {cmp.message}")

    def launches_and_timing(self, module: Any, model: Any) -> RunResult:
        """The verdict of a correct program: on CUDA both timed (the launch record taken with the timing where it
        is pending), interpreted an untimed pass after the launch record; the launch flags either way."""
        if self.device != "cuda":
            self.record_launches()
            verdict = RunResult.passed("correct; interpreted, no timing")
        else:
            verdict = self.time_both(module, model)
            if self.launches.get("profile_pending"):
                self.record_launches()
        self.flags += launches.flags_of(self.launches)
        return verdict

    def completed(self, verdict: RunResult, candidate_flags: list[str], tf32: bool) -> RunResult:
        """`verdict` with what the judge gathered: trials, output differences, flags, launches, the method."""
        options, device = self.options, self.device
        if device != "cuda" and "interpreted_no_timing" not in self.flags:
            self.flags.append("interpreted_no_timing")
        if self.candidate.identity is None:  # its user is the judge's: what keeps the judge's memory apart is in `method`
            self.flags.append("candidate_same_user")
        outputs = [self.outputs[i] for i in sorted(self.outputs)]
        abs_diffs = [o.max_abs_diff for o in outputs if o.max_abs_diff is not None]
        rel_diffs = [o.max_rel_diff for o in outputs if o.max_rel_diff is not None]
        verdict.correct_trials, verdict.trials = self.correct_trials, options.trials
        verdict.max_abs_diff = max(abs_diffs) if abs_diffs else None
        verdict.max_rel_diff = max(rel_diffs) if rel_diffs else None
        verdict.outputs, verdict.tolerance_passed = outputs, self.tolerance_passed()
        verdict.device = result_device(device)
        verdict.flags = list(dict.fromkeys(self.flags + verdict.flags + candidate_flags))
        verdict.launches = self.launches
        verdict.method = {**method_record(options, device, tf32),
                          "judge": {"separate_process": True, "candidate_uid": self.candidate.uid,
                                    "candidate_user": self.candidate.identity_note,
                                    "candidate_kept_from_judge": {"judge_non_dumpable": self.candidate.judge_private,
                                                                  "candidate_capabilities": self.candidate.capabilities},
                                    "reference": "the program's text before the candidate's cut (runner.child.reference)",
                                    "recheck": "fresh values in the timed input tensors, one call",
                                    "timed_call_checked": self.timed_call_checked,
                                    "outputs_handed_over_as": self.handover},
                          "timing_cpu": self.timing_cpu,
                          "reference_timing": ({"reused_from": self.reference_timing.get("from")}
                                               if REUSED_FLAG in self.flags else "measured in this run")}
        return verdict


def _number(value: Any) -> float | None:
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else None


def _structure(header: dict[str, Any]) -> str:
    """The nesting of the candidate's outputs as it reported it (`compare.structure`), bounded."""
    return str(header.get("structure"))[:100_000]


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
                     gate: ChildGate, candidate: CandidateProcess, cache_dir: str, tf32: bool,
                     reference_timing: dict[str, Any] | None = None) -> RunResult:
    """One evaluation, its phases in order (in the manner of kernelbot's `run_evaluation`). Before them the judge's
    entry (`runner.child.main`) resolved the device and set the limits, the runtime and the audit hook; after them
    it collects the system, and the sandbox (`runner.sandbox.run`) makes the verdict of a job that sent none."""
    judge = Judge(path, options, device, emit, gate, candidate, reference_timing)
    try:
        module, model = judge.load(cache_dir)  # 1. load: the reference here, ModelNew in the candidate's process
        judge.correctness(module, model)  # 2. correctness: the trials, every output compared
        verdict = judge.launches_and_timing(module, model)  # 3. launches recorded; on CUDA both timed, GPU alone
        judge.loop_check(module, model)  # 4. a call inside the timing loop, on fresh values, compared
        judge.recheck(module, model)  # 5. recheck: fresh values in the timed input tensors, one call compared
    except Stop as stop:  # a phase failed: its verdict is the job's
        verdict = stop.verdict
        if device != "cuda":
            verdict.message = f"{verdict.message} (interpreted, no timing)"
    emit("finish: collecting the candidate's flags")  # 6. the candidate's flags and CPU time
    candidate_flags, verdict.cpu_s = candidate.finish()
    return judge.completed(verdict, candidate_flags, tf32)  # 7. the record: outputs, flags, launches, method
