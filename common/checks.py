"""Every check and flag the project knows, declared once: static errors and static hack flags (found at ingest,
nothing run) and run-result flags (the runner's). Ingest, parsing, the SQL filters, the UI's labels, tooltips and
legends, and the docs read this table (tests/test_checks_docs.py holds the docs to it).

Each entry: `name` (the stored code), `kind` (`static_error` | `static_flag` | `run_flag`), `label` (how the UI
says it), `meaning` (one line for users) and `hack` (whether the honest leaderboard leaves the row out by default:
a flag means "review", never "reject"). Run flags that carry a value are stored as `name:value` or `name: value`
(`state_loaded:2/2`, `refused: socket.connect ...`), and the runner's timing flags about the reference's timing
get a `ref_` prefix (`ref_launch_bound`); `base_name` maps each stored flag to its entry. Standard library only:
the runner imports this under a GPU machine's bare Python.
"""

from __future__ import annotations

from dataclasses import dataclass

KINDS = ("static_error", "static_flag", "run_flag")
REFERENCE_PREFIX = "ref_"


@dataclass(frozen=True)
class Check:
    name: str
    kind: str
    label: str
    meaning: str
    hack: bool = False


def _e(name: str, label: str, meaning: str) -> Check:
    return Check(name, "static_error", label, meaning)


def _s(name: str, label: str, meaning: str, hack: bool) -> Check:
    return Check(name, "static_flag", label, meaning, hack)


def _r(name: str, label: str, meaning: str, hack: bool = False) -> Check:
    return Check(name, "run_flag", label, meaning, hack)


CHECKS: tuple[Check, ...] = (
    # static errors, in ingest's order of precedence (the first that applies is the row's `static_error`)
    _e("syntax_error", "syntax_error", "Python cannot compile the program (ingest's second stage)."),
    _e("no_model_new", "no ModelNew", "no top-level `class ModelNew`: there is no candidate to run."),
    _e("no_reference", "no Model", "no top-level `class Model`: there is no reference to compare with."),
    _e("no_get_inputs", "no get_inputs", "`get_inputs` or `get_init_inputs` is missing: the harness cannot build "
       "inputs."),
    _e("unavailable_import", "imports a package the runner lacks", "an unguarded top-level import of a package "
       "that is neither the standard library nor torch, triton or numpy."),
    _e("no_triton_kernel", "no Triton kernel", "no `@triton.jit` (or autotune/heuristics) kernel is defined."),
    _e("forward_arity_mismatch", "forward() arguments differ from Model's", "`ModelNew.forward` cannot take the "
       "positional arguments `Model.forward` takes."),
    _e("ok_static", "no static finding", "none of the static errors above applies (not a verdict: nothing ran)."),
    # static hack flags (ingest's second stage, on the syntax tree of the candidate part; KernelBench's static
    # checker's patterns plus kernel_never_called, torch_patch, caller_frames and output_cache)
    _s("try_except_fallback", "try/except around the kernel", "a Triton launch sits in a `try` whose `except` "
       "does not re-raise: a failing kernel can silently fall back to torch (or to nothing).", True),
    _s("torch_compute_in_forward", "torch compute in forward", "`ModelNew.forward` (or a helper it calls) computes "
       "with torch ops (matmul, conv, activations, reductions, `@`) or calls an `nn` compute layer; reshapes, "
       "views and allocations do not count.", False),
    _s("kernel_never_called", "Triton kernel never called", "the program defines Triton kernels but none is "
       "reached from `ModelNew.forward`, through its helper functions and methods (or ModelNew has no forward).",
       True),
    _s("cuda_stream", "CUDA stream", "the candidate creates or switches CUDA streams: work on a side stream can "
       "escape a timer that records events on the default stream.", True),
    _s("threads", "threads or processes", "the candidate uses threading, multiprocessing or concurrent.futures: "
       "work can finish after `forward` returns, outside the timed call.", True),
    _s("timing_patch", "timing patched", "the candidate reassigns a timing function (`torch.cuda.Event`, "
       "`time.perf_counter`, `do_bench`, `torch.cuda.synchronize`, ...).", True),
    _s("torch_patch", "torch patched", "the candidate reassigns a torch function or Tensor method (`torch.allclose`, "
       "`Tensor.__sub__`, ...; backend flags and compiler settings aside): the comparison or the harness can be "
       "fooled.", True),
    _s("caller_frames", "reads caller frames", "the candidate inspects the interpreter's frames or objects "
       "(`sys._getframe`, `f_back`/`f_locals`, `inspect.stack`, `gc.get_objects`): it can find the reference's output "
       "or the verdict channel.", True),
    _s("output_cache", "output cached", "a function reached from `ModelNew.forward` returns what a module-level "
       "dict or list holds, indexes one by a tensor's address (`data_ptr()`), or returns a `self.` attribute it "
       "computed on an earlier call: outputs reused across calls.",
       True),
    _s("reference_not_plain", "reference part not plain", "the text before the candidate's cut is not only "
       "imports, `Model`, `get_inputs`, `get_init_inputs`, their helpers and constants: it lacks one of them, runs "
       "code at module level (a patch of torch), decorates a definition, calls `exec`/`setattr`, or defines "
       "`ModelNew` or a kernel before `Model`. The judge refuses to run such a part (`reference_rejected`).", True),
    _s("tensor_subclass", "tensor subclass", "the candidate subclasses `torch.Tensor` or defines "
       "`__torch_function__`/`__torch_dispatch__` (or calls `as_subclass`): an output can do work when it is read, "
       "after the timed call.", True),
    _s("clock_in_forward", "reads clocks or frames in forward", "a function reached from `ModelNew.forward` reads a "
       "clock (`time.perf_counter`, `time.time`, ...) or the call stack (`sys._getframe`, `inspect.stack`, "
       "`traceback.extract_stack`): it can tell a timing loop from a checked call.", True),
    _s("precision_downcast", "fp16/bf16 downcast", "the candidate converts to float16 or bfloat16 while the "
       "reference uses neither: faster, less precise than the fp32 reference.", False),
    # run flags (the runner's, on a run result)
    _r("no_triton_launch", "no Triton kernel ran", "no Triton kernel ran during an untimed ModelNew call: the "
       "speed is torch's (or cached), not a Triton kernel's.", True),
    _r("output_reused", "output reused across calls", "after timing, fresh values in the same input tensors gave "
       "a wrong output: ModelNew returns a result kept from earlier calls.", True),
    _r("timed_call_differs", "timed call differs", "one call inside the timing loop, on fresh inputs, gave a "
       "wrong output while the checked calls were right: ModelNew does less work when it is timed (it notices the "
       "timing loop).", True),
    _r("timed_work_below_checked", "less work when timed", "calls queued like the timed ones ran under 75% of the "
       "Triton GPU time of an untimed checked call: ModelNew does less work inside the timing loop.", True),
    _r("faster_on_repeated_inputs", "faster on repeated inputs", "calls with fresh values written into the inputs "
       "took over 1.5× (and 10 µs more than) single calls on the timed values: an output cached by value is likely, "
       "and the timed speed is not the kernel's.", True),
    _r("timing_below_kernel_time", "timed below its kernels' time", "the timed median is under half of one "
       "call's Triton kernel time: work the timing did not see (e.g. on a side stream).", True),
    _r("inputs_differ", "inputs differ", "the candidate's process made other inputs than the reference's from the "
       "same seed (`get_inputs` is not deterministic, or the candidate redefines it).", True),
    _r("forged_verdict", "forged verdict", "the verdict channel got a result the child did not send: the "
       "program tried to write its own verdict.", True),
    _r("excessive_speedup", "speedup over 10×", "the measured speedup over the eager reference is above 10×: "
       "real ones exist, but most are hacks; worth a second look.", True),
    _r("refused", "refused by the guard", "the program tried a network connection, a write outside its folders "
       "or a signal to another process, and the guard refused it (the value says what).", True),
    _r("not_isolated", "not OS-isolated", "the job ran without operating-system isolation (no namespaces): only "
       "the in-process guard stood between the program and the machine."),
    _r("candidate_same_user", "candidate ran as the judge's user", "the candidate could not run as another user "
       "(the judge is not root, `TLX_RUNNER_CANDIDATE_UID=same`, or Python lies out of an unprivileged user's reach, "
       "e.g. under /root): the judge is non-dumpable and a root candidate holds no capabilities, so the judge's "
       "memory and the verdict channel's key stay out of its reach (`method.judge` says which held)."),
    _r("launches_not_checked", "launches not checked", "kernel launch accounting could not run (e.g. the CPU "
       "interpreter): `no_triton_launch` and the Triton share are unknown, not passed."),
    _r("side_stream_suspect", "side stream suspected", "CUDA events saw less time than the wall clock: work ran "
       "outside the current stream, so the wall clock (with a device sync) was used instead."),
    _r("launch_bound", "launch-bound", "the host needs about as long to launch the call as the GPU to run it: "
       "the time follows host load from run to run."),
    _r("state_loaded", "reference state loaded", "the reference's parameters were copied into ModelNew where "
       "names and shapes match (value: copied / ModelNew's entries)."),
    _r("interpreted_no_timing", "interpreted, no timing", "ran in Triton's CPU interpreter: correctness only."),
    _r("cuda_remapped_to_cpu", "CUDA remapped to CPU", "the program's `cuda` devices were mapped to the CPU for "
       "the interpreter."),
    _r("autotune_first_config_only", "first autotune config only", "the interpreter tried only the first "
       "autotune configuration."),
    _r("rerun_alone_oom", "re-run alone after OOM", "ran out of GPU memory beside other jobs, then ran again with "
       "the GPU to itself."),
    _r("harness_warm_up_failed", "harness warm-up failed", "the runner's own warm-up (CUDA context and a Triton "
       "kernel, before the job) failed in the candidate's process: a failure there may be the process's, not the "
       "program's."),
    _r("rerun_harness", "re-run in fresh processes", "failed in a candidate whose warm-up had failed, then ran "
       "again in processes started for it (no spare, no fork server)."),
    _r("timing_budget_spent", "timing budget spent", "timing stopped at its time budget before the spread was "
       "tight."),
    _r("timing_below_min_trials", "fewer trials than asked", "the time budget ran out before the minimum number "
       "of timed calls."),
    _r("timing_min_time_stop", "stopped on minimum time", "timing stopped after its minimum time with fewer than "
       "the usual trials, the spread being tight."),
    _r("timing_max_trials", "max trials reached", "timing reached its maximum number of calls before the spread "
       "was tight."),
    _r("reference_timing_reused", "Model's timing reused", "a bulk run timed Model once for this reference text, "
       "settings and GPU; this row's speedup uses that timing (method.reference_timing names the run)."),
    _r("timing_do_bench", "timed by do_bench", "timed with Triton's do_bench as a cross-check method."),
    _r("candidate_crashed", "candidate process crashed", "the process running ModelNew died or stopped answering."),
    _r("candidate_protocol_error", "candidate protocol error", "the process running ModelNew answered the judge "
       "with something other than the protocol's messages."),
    _r("harness_error", "harness error", "the harness itself failed around the program (not the program's "
       "verdict)."),
    _r("no_cuda_device", "no CUDA device", "asked for CUDA, but the job saw no GPU."),
    _r("sandbox_error", "sandbox error", "the sandboxed process could not be started."),
    _r("cancelled", "cancelled", "the job was cancelled before it finished."),
    _r("too_many_processes", "too many processes", "the program started more processes than allowed and was "
       "killed."),
    _r("disk_full", "job disk full", "the program filled the job's folders to their size cap (2 GiB by default): "
       "writes past it failed."),
)

BY_NAME: dict[str, Check] = {c.name: c for c in CHECKS}
STATIC_ERRORS = tuple(c.name for c in CHECKS if c.kind == "static_error")
STATIC_FLAGS = tuple(c.name for c in CHECKS if c.kind == "static_flag")
RUN_FLAGS = tuple(c.name for c in CHECKS if c.kind == "run_flag")
HACK_FLAGS = tuple(c.name for c in CHECKS if c.hack)
FLAGS = STATIC_FLAGS + RUN_FLAGS
NO_STATIC_ERROR = STATIC_ERRORS[-1]  # `ok_static`, last: what a row without a finding gets


def first_static_error(found: set[str] | frozenset[str]) -> str:
    """A row's `static_error`: of the static errors `found` for it, the first in `STATIC_ERRORS`' order (the
    table's); `ok_static` when none."""
    return next((name for name in STATIC_ERRORS if name in found), NO_STATIC_ERROR)


def outranked_by(name: str) -> tuple[str, ...]:
    """The `static_error` values that `name` replaces when a later stage of ingest finds it (those after it in
    the order): a finding never takes the place of one that comes before it."""
    return STATIC_ERRORS[STATIC_ERRORS.index(name) + 1:]


def base_name(flag: str) -> str:
    """The entry name of a stored flag: without its `:value` / `: value` and its `ref_` prefix."""
    name = str(flag).split(":", 1)[0].strip()
    if name not in BY_NAME and name.startswith(REFERENCE_PREFIX) and name[len(REFERENCE_PREFIX):] in BY_NAME:
        return name[len(REFERENCE_PREFIX):]
    return name


def lookup(code: str) -> Check | None:
    """The entry of a stored code or flag (`state_loaded:2/2`, `ref_launch_bound` included), None if unknown."""
    return BY_NAME.get(base_name(code))


def label(code: str) -> str:
    """How the UI names a stored code: the entry's label, with a flag's value and the reference's prefix."""
    check = lookup(code)
    if check is None:
        return str(code)
    text = check.label
    if str(code).startswith(REFERENCE_PREFIX) and check.name != code.split(":", 1)[0]:
        text = f"reference: {text}"
    _, sep, value = str(code).partition(":")
    return f"{text} ({value.strip()})" if sep and value.strip() else text


def meaning(code: str) -> str:
    """The one-line meaning of a stored code (for tooltips and legends); unknown codes say so."""
    check = lookup(code)
    if check is None:
        return "not a code this version knows"
    prefix = "About the reference Model's timing: " if label(code).startswith("reference: ") else ""
    return prefix + check.meaning + (" Excluded from the honest leaderboard by default (review, not reject)."
                                     if check.hack else "")


def is_hack(flag: str) -> bool:
    check = lookup(flag)
    return check is not None and check.hack
