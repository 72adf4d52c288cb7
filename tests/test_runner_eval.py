"""The runner's evaluation core on CPU (Triton interpreter): verdicts, error types, isolation, CLI."""

from __future__ import annotations

import hashlib
import importlib.util
import json
import os
import signal
import statistics
import subprocess
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
import torch

from common.outcomes import ErrorType
from runner.child import compare
from runner.child.classify import classify, error_type_of
from runner.child.compare import compare_outputs
from runner.child.evaluate import method_record
from runner.child.setup import apply_backend_flags
from runner.child.steps import Steps
from runner.child.timing import SOURCE_EVENTS, SOURCE_WALL, decide, launch_bound, rel_err_of_median, summarize
from runner.options import GIB, EvalOptions
from runner.result import RunResult, Timing
from runner.sandbox import jobdirs
from runner.sandbox.run import close_spares, evaluate_in_sandbox
from runner.sandbox.spares import POOL
from tests.programs import runner_program

REPO = Path(__file__).resolve().parent.parent
DESIGN_KEYS = {
    "id", "status", "error_type", "message", "exception", "traceback", "correct_trials", "trials", "max_abs_diff",
    "max_rel_diff", "timing", "ref_timing", "speedup", "flags", "method", "device", "system",
    "row_id", "program_sha256", "duration_s", "finished_at", "phases_s", "tolerance_passed", "outputs", "launches",
    "cpu_s", "warm_up_s",
    "pair",
}
EXPECTED = {
    "correct_add": None,
    "autotuned": None,
    "wrong_output": ErrorType.OUTPUT_MISMATCH,
    "fake_verdict": ErrorType.OUTPUT_MISMATCH,
    "shape_mismatch": ErrorType.SHAPE_MISMATCH,
    "nan_output": ErrorType.NAN_OUTPUT,
    "compile_error": ErrorType.COMPILE_ERROR,
    "runtime_error": ErrorType.RUNTIME_ERROR,
    "init_error": ErrorType.INIT_ERROR,
    "import_error": ErrorType.IMPORT_ERROR,
    "missing_symbol": ErrorType.MISSING_SYMBOL,
    "syntax_error": ErrorType.SYNTAX_ERROR,
    "timeout_hang": ErrorType.TIMEOUT,
    "memory_bomb": ErrorType.OUT_OF_MEMORY,
    "memory_bomb_shared": ErrorType.OUT_OF_MEMORY,
    "crash_segv": ErrorType.CRASHED,
}
# the job's processes are found from outside by a tag in their command line (inside the isolation a pid is the
# PID namespace's, not the runner's)
GRANDCHILD = '''
import subprocess, sys, time
child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)", {tag!r}])
with open({pid_file!r}, "w") as fh:
    fh.write({tag!r})
time.sleep(600)
'''
TAG_THEN_HANG = GRANDCHILD
ORPHAN_PARENT = '''
import os
import sys
from runner.options import EvalOptions
from runner.sandbox.run import evaluate_in_sandbox
evaluate_in_sandbox(sys.argv[1], EvalOptions(device="cpu", timeout_s=120, work_root=sys.argv[2],
                                             write_roots=(os.path.dirname(sys.argv[2]),)), result_id="o")
'''
ENV_CHECK = '''
import os


def _env_check():  # run at import by an assignment, in both processes: a plain reference part runs no statement
    assert "TLX_TEST_SECRET" not in os.environ, "secret leaked into the sandbox"
    assert os.environ["HOME"] == os.getcwd(), "HOME is not the job's temp dir"
    if __name__ == "tlx_program":  # the candidate's process (the judge has no Triton cache of its own)
        assert os.path.basename(os.getcwd()) == "candidate", "not in the job's candidate folder"
        assert "/tlx-run-" in os.environ["TRITON_CACHE_DIR"], "cache not per job"


_ENV = _env_check()
'''
SHARED_CACHE = '''
import os


def _compile_into_the_cache():  # run at import by an assignment (a plain reference part runs no statement)
    if __name__ != "tlx_program":  # only the candidate's process (in <job>/candidate), which compiles
        return None
    cache = os.environ["TRITON_CACHE_DIR"]
    assert os.path.dirname(cache) == os.path.dirname(os.path.dirname(os.getcwd())), "the job compiles into its own folder"
    assert open(os.path.join(cache, "seeded", "kernel.bin")).read() == "from the shared cache"
    os.makedirs(os.path.join(cache, "compiled"))
    open(os.path.join(cache, "compiled", "kernel.bin"), "w").write("new")
    os.makedirs(os.path.join(cache, "planted"))
    os.symlink("/etc/hostname", os.path.join(cache, "planted", "link"))


_CACHE = _compile_into_the_cache()
'''


def options(**kw) -> EvalOptions:
    base = {"device": "cpu", "timeout_s": 60.0, "trials": 2, "memory_limit_bytes": int(1.5 * GIB)}
    return EvalOptions(**{**base, **kw})


def tagged(tag: str) -> list[int]:
    """Live processes with `tag` in their command line."""
    found = []
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as fh:
                if tag.encode() in fh.read() and alive(int(pid)):
                    found.append(int(pid))
        except OSError:
            continue
    return found


def alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as fh:
            return fh.read().rsplit(")", 1)[1].split()[0] != "Z"
    except FileNotFoundError:
        return False


def wait_for_file(path: Path, timeout: float = 60.0) -> str:
    deadline = time.monotonic() + timeout
    while not (path.exists() and path.read_text()) and time.monotonic() < deadline:
        time.sleep(0.1)
    return path.read_text() if path.exists() else ""


def orphaned_child(folder: Path) -> dict[str, object]:
    """SIGKILL a process in the middle of a sandbox job; report whether its child outlived it."""
    pid_file = folder / "pid"
    work_root = folder / "jobs"
    work_root.mkdir()
    tag = f"tlx-orphan-{os.getpid()}-{time.monotonic_ns()}"
    program = TAG_THEN_HANG.format(pid_file=str(pid_file), tag=tag)
    parent = subprocess.Popen([sys.executable, "-c", ORPHAN_PARENT, program, str(work_root)], cwd=REPO,
                              env={**os.environ, "PYTHONPATH": str(REPO)})
    child = wait_for_file(pid_file) and tagged(tag)
    parent.send_signal(signal.SIGKILL)
    parent.wait()
    deadline = time.monotonic() + 5
    while child and tagged(tag) and time.monotonic() < deadline:
        time.sleep(0.1)
    survived = tagged(tag)
    jobdirs.remove_stale(work_root)  # as the next runner would: the dead one's job folders and their size caps
    return {"child": child, "survived": survived}


def cancelled_job(work: Path) -> tuple[RunResult, float]:
    cancel = threading.Event()
    threading.Timer(3.0, cancel.set).start()
    r = evaluate_in_sandbox(runner_program("timeout_hang"), options(work_root=str(work)),
                            result_id="cancel", cancel=cancel)
    return r, r.duration_s


def run_cli(folder: Path) -> subprocess.CompletedProcess:
    program = folder / "wrong_output.py"
    program.write_text(runner_program("wrong_output"))
    return subprocess.run(
        [sys.executable, "-m", "runner", "eval", str(program), "--device", "cpu",
         "--trials", "1", "--timeout", "60", "--json"],
        capture_output=True, text=True, cwd=REPO, timeout=120, env={**os.environ, "PYTHONPATH": str(REPO)},
    )


@pytest.fixture(scope="module")
def verdicts(tmp_path_factory) -> dict[str, object]:
    """Every sandbox job of this file, run once, four at a time (each job is its own process; the waiting ones
    cost no CPU)."""
    work = tmp_path_factory.mktemp("jobs")
    pid_file = tmp_path_factory.mktemp("grandchild") / "pid"
    os.chmod(pid_file.parent, 0o777)  # the candidate may run as uid 65534 (its job's folders reachable by it)
    os.environ["TLX_TEST_SECRET"] = "hunter2"  # must not reach the sandbox (see "env" below)
    jobs = {name: (runner_program(name), 5.0 if name == "timeout_hang" else 60.0) for name in EXPECTED}
    # generous: the timeout counts from the job's start, and under load (four jobs at once on two cores, beside
    # other work) the child took over 30 s to reach the program twice (the verdict is a timeout either way; the
    # test is about the kill reaching the grandchild)
    jobs["grandchild"] = (GRANDCHILD.format(pid_file=str(pid_file), tag=f"tlx-grandchild-{os.getpid()}"), 60.0)
    jobs["env"] = (ENV_CHECK + runner_program("correct_add"), 60.0)

    def run(name: str) -> tuple[str, object]:
        if name == "cli":
            return name, run_cli(tmp_path_factory.mktemp("cli"))
        if name == "orphan":
            return name, orphaned_child(tmp_path_factory.mktemp("orphan"))
        if name == "cancel":
            return name, cancelled_job(work)
        if name == "shared_cache":
            shared = tmp_path_factory.mktemp("triton-cache")
            program = SHARED_CACHE + runner_program("correct_add")
            sha = hashlib.sha256(program.encode()).hexdigest()
            (shared / sha / "seeded").mkdir(parents=True)
            (shared / sha / "seeded" / "kernel.bin").write_text("from the shared cache")
            r = evaluate_in_sandbox(program, options(work_root=str(work), triton_cache_dir=str(shared)),
                                    result_id=name)
            return name, (r, shared / sha)
        program, timeout = jobs[name]
        side_channel = (str(pid_file.parent),)  # where "grandchild" writes its pid (runner.child.guard refuses others)
        return name, evaluate_in_sandbox(program, options(timeout_s=timeout, work_root=str(work),
                                                          write_roots=side_channel), result_id=name)

    try:
        with ThreadPoolExecutor(max_workers=4) as pool:
            first = ["grandchild", "timeout_hang", "orphan", "cancel"]
            results = dict(pool.map(run, [*first, *jobs.keys() - set(first), "shared_cache", "cli"]))
    finally:
        del os.environ["TLX_TEST_SECRET"]
    spares = POOL.spares()
    close_spares()
    results["_spares"] = spares
    results["_work_left"] = list(work.iterdir())
    results["_grandchild_tag"] = pid_file.read_text() if pid_file.exists() else None
    return results


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_error_type(verdicts, name):
    r = verdicts[name]
    expected = EXPECTED[name]
    assert r.error_type == (expected.value if expected else None), r.message
    assert r.status == ("ok" if expected is None else "failed")
    if expected is not None:
        assert r.message
    assert set(r.to_dict()) == DESIGN_KEYS
    assert RunResult.from_dict(json.loads(json.dumps(r.to_dict()))) == r


def test_correct_program_on_cpu(verdicts):
    r = verdicts["correct_add"]
    assert (r.correct_trials, r.trials) == (2, 2)
    assert r.max_abs_diff == 0.0 and r.tolerance_passed == 1e-5
    assert [(o.index, o.shape, o.dtype, o.tolerance_passed) for o in r.outputs] == [(0, [64], "float32", 1e-5)]
    assert (r.method["profile"], r.method["atol"], r.method["rtol"]) == ("kernelbench", 1e-2, 1e-2)
    assert r.method["tf32"] is False and r.method["inputs_device"] == "cpu"
    assert r.device == "cpu-interpreter"
    assert r.timing is None and r.ref_timing is None and r.speedup is None
    assert "interpreted, no timing" in r.message
    stages = {k.split(":")[0] for k in r.phases_s}
    assert {"child_ready", "start", "load", "init", "correctness", "system", "harness"} <= stages, r.phases_s
    assert "correctness: ModelNew forward" in r.phases_s  # trials pooled: no "(trial 2)" keys
    assert not any("trial" in k for k in r.phases_s)
    assert sum(r.phases_s.values()) == pytest.approx(r.duration_s, abs=0.05)
    assert set(r.warm_up_s) == {"judge_imports", "judge_idle", "candidate_imports", "candidate_idle"}, r.warm_up_s
    assert all(abs(s) < 600 for s in r.warm_up_s.values()), r.warm_up_s
    assert {"interpreted_no_timing", "cuda_remapped_to_cpu"} <= set(r.flags)
    assert r.system["torch"] and r.system["triton"] and r.system["python"]
    assert len(r.program_sha256) == 64 and r.duration_s > 0 and r.finished_at


def test_autotuned_kernel_runs_first_config_under_interpreter(verdicts):
    assert "autotune_first_config_only" in verdicts["autotuned"].flags


def test_wrong_program_reports_difference(verdicts):
    r = verdicts["wrong_output"]
    assert r.max_abs_diff == pytest.approx(0.5, abs=1e-6)
    assert "max abs diff 0.5" in r.message
    assert (r.correct_trials, r.trials) == (0, 2)  # every trial ran: the differences hold for all of them
    assert r.tolerance_passed is None and r.outputs[0].max_abs_diff == pytest.approx(0.5, abs=1e-6)


def test_failures_keep_exception_and_program_traceback(verdicts):
    r = verdicts["compile_error"]
    assert "InterpreterError" in r.exception
    assert "n_undefined" in r.traceback and "program.py" in r.traceback
    assert verdicts["runtime_error"].exception == "ZeroDivisionError"
    assert "program.py" in verdicts["runtime_error"].traceback
    assert "line 40" in verdicts["syntax_error"].traceback
    assert "get_init_inputs" in verdicts["missing_symbol"].message


def test_crash_and_timeout_carry_stacks(verdicts):
    assert verdicts["crash_segv"].exception == "SIGSEGV"
    assert "program.py" in (verdicts["crash_segv"].traceback or "")
    hang = verdicts["timeout_hang"]
    assert "5 s" in hang.message
    assert hang.duration_s < 20


def test_fake_stdout_verdict_is_ignored(verdicts):
    assert verdicts["fake_verdict"].message != "fake"


def test_temp_dirs_removed_and_spares_reaped(verdicts):
    assert verdicts["_spares"], "no pre-warmed spare was kept for the next job"
    assert all(p.name.startswith("tlx-runner-") and not any(p.iterdir()) for p in verdicts["_work_left"])
    deadline = time.monotonic() + 5
    while any(map(alive, verdicts["_spares"])) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not any(map(alive, verdicts["_spares"])), "close_spares left a spare running"


def test_cancel_kills_the_job(verdicts):
    r, duration = verdicts["cancel"]
    assert r.error_type == ErrorType.CRASHED.value and "cancelled" in r.flags, r.message
    assert 2.9 < duration < 8


def test_child_dies_with_its_parent(verdicts):
    orphan = verdicts["orphan"]
    assert orphan["child"], "the sandboxed program never ran"
    assert not orphan["survived"], f"sandbox child {orphan['child']} outlived its killed parent"


def test_a_job_runs_in_the_waiting_spare(tmp_path):
    pid_file = tmp_path / "cwd"  # the candidate's folder lies in its judge's (the spare's) job folder
    program = runner_program("correct_add") + (f"\nimport os\nopen({str(pid_file)!r}, 'w')"
                                               ".write(os.path.dirname(os.getcwd()))\n")
    opts = options(trials=1, work_root=str(tmp_path), write_roots=(str(tmp_path),))
    try:
        evaluate_in_sandbox(program, opts, result_id="warm-up")  # leaves spares for this configuration

        def mine() -> list[int]:
            return [pid for pid in POOL.spares() if os.readlink(f"/proc/{pid}/cwd").startswith(str(tmp_path))]

        deadline = time.monotonic() + 30
        while len(mine()) < opts.spares and time.monotonic() < deadline:
            time.sleep(0.05)
        oldest, *younger = mine()
        assert len(younger) == opts.spares - 1
        oldest_folder = os.readlink(f"/proc/{oldest}/cwd")
        r = evaluate_in_sandbox(program, opts, result_id="warm")
        assert r.status == "ok", r.message
        assert pid_file.read_text() == oldest_folder  # the job ran in the oldest spare
        close_spares()
        cold = evaluate_in_sandbox(program, options(trials=1, work_root=str(tmp_path), write_roots=(str(tmp_path),),
                                                    prewarm=False), result_id="c")
        assert cold.status == "ok" and POOL.spares() == []
    finally:
        close_spares()


def test_spares_warmed_before_the_first_job_take_it(tmp_path):
    """`runner serve` warms its GPU slots' spares at start (`warm_gpu_slots`); `ChildPool.warm` is that step, here
    for a CPU configuration: the spares start with no job, and the first job runs in the oldest of them."""
    from runner.gpu.oom_rerun import warm_gpu_slots
    from runner.gpu.slots import make_slots

    pid_file = tmp_path / "cwd"
    program = runner_program("correct_add") + (f"\nimport os\nopen({str(pid_file)!r}, 'w')"
                                               ".write(os.path.dirname(os.getcwd()))\n")
    opts = options(trials=1, work_root=str(tmp_path), write_roots=(str(tmp_path),))

    def mine() -> list[int]:
        return [pid for pid in POOL.spares() if os.readlink(f"/proc/{pid}/cwd").startswith(str(tmp_path))]

    try:
        assert warm_gpu_slots(make_slots("cpu", 1)) == 0  # CPU slots: at their first job
        assert not POOL.warm(options(trials=1, work_root=str(tmp_path), prewarm=False))
        time.sleep(0.5)
        assert mine() == []
        assert POOL.warm(opts)
        deadline = time.monotonic() + 60
        while len(mine()) < opts.spares and time.monotonic() < deadline:
            time.sleep(0.05)
        oldest = mine()[0]
        oldest_folder = os.readlink(f"/proc/{oldest}/cwd")
        r = evaluate_in_sandbox(program, opts, result_id="first")
        assert r.status == "ok", r.message
        assert pid_file.read_text() == oldest_folder  # the first job ran in a spare warmed before it
    finally:
        close_spares()


def test_hang_is_killed_with_its_process_tree(verdicts):
    r = verdicts["grandchild"]
    assert r.error_type == ErrorType.TIMEOUT.value, (r.message, r.traceback)
    tag = verdicts["_grandchild_tag"]
    assert tag, "the program did not get to start its grandchild"
    deadline = time.monotonic() + 5
    while tagged(tag) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not tagged(tag), "the grandchild survived the timeout kill"


def test_environment_is_scrubbed(verdicts):
    r = verdicts["env"]
    assert r.status == "ok", r.message


def test_shared_triton_cache_is_keyed_by_program_hash(verdicts):
    r, shared = verdicts["shared_cache"]
    assert r.status == "ok", (r.message, r.traceback)
    assert (shared / "compiled" / "kernel.bin").read_text() == "new"  # published back: the next run reuses it
    assert not (shared / "planted").exists()  # a symlink in an entry: not published


def test_cli_eval_json_exit_zero(verdicts):
    proc = verdicts["cli"]
    assert proc.returncode == 0, proc.stderr
    out = json.loads(proc.stdout)
    assert out["status"] == "failed" and out["error_type"] == "output_mismatch"


# -- pure functions (no subprocess) ---------------------------------------------------------------------------
def test_profiles_set_tolerance_and_flags():
    default, strict = EvalOptions(), EvalOptions(profile="kernelbench-strict")
    assert default.profile == "kernelbench"
    assert default.tolerance("torch.float32") == default.tolerance("bfloat16") == (1e-2, 1e-2)
    assert strict.tolerance("torch.float32") == (1e-4, 1e-4) and strict.tolerance("torch.float16") == (1e-2, 1e-2)
    custom = EvalOptions(atol=1e-3)
    assert custom.profile == "custom" and custom.tolerance("torch.float32") == (1e-3, 1e-3)
    assert EvalOptions(atol=1e-3, rtol=1e-5).tolerance("float16") == (1e-3, 1e-5)
    assert EvalOptions.from_dict(custom.to_dict()) == custom
    assert EvalOptions.from_dict(EvalOptions(trials=2).to_dict()) == EvalOptions(trials=2)
    for bad, match in (({"bogus": 1}, "unknown eval options"), ({"profile": "kb"}, "unknown profile"),
                       ({"profile": "custom"}, "needs atol"), ({"atol": -1.0}, "atol must be"),
                       ({"profile": "kernelbench-strict", "atol": 1e-3}, "custom profile")):
        with pytest.raises(ValueError, match=match):
            EvalOptions.from_dict(bad)
    # flags: kernelbench leaves torch's as they are, strict turns TF32 off (on a CUDA job)
    saved = torch.backends.cuda.matmul.allow_tf32, torch.backends.cudnn.allow_tf32
    try:
        torch.backends.cuda.matmul.allow_tf32, torch.backends.cudnn.allow_tf32 = False, True  # torch's defaults
        assert apply_backend_flags(default, "cuda") is True and torch.backends.cudnn.allow_tf32
        assert apply_backend_flags(strict, "cuda") is False
        assert not torch.backends.cudnn.allow_tf32 and not torch.backends.cuda.matmul.allow_tf32
        assert apply_backend_flags(default, "cpu") is False
    finally:
        torch.backends.cuda.matmul.allow_tf32, torch.backends.cudnn.allow_tf32 = saved
    record = method_record(strict, "cuda", False)
    assert (record["profile"], record["atol"], record["rtol"], record["tf32"]) == ("kernelbench-strict", 1e-4, 1e-4, False)
    assert record["inputs_device"] == "cuda" and record["correctness"]["tolerance_by_dtype"]["bfloat16"] == 1e-2
    assert method_record(EvalOptions(inputs_device="cpu"), "cuda", True)["inputs_device"] == "cpu"


def test_run_spec_settings_and_key():
    from runner.spec import RunSpec

    spec = RunSpec("cuda")
    assert (spec.profile, spec.atol, spec.inputs_device) == ("kernelbench", None, "device")
    assert RunSpec.build("cuda", atol=1e-3, trials=None).profile == "custom"
    assert RunSpec.build("cuda", atol=1e-3).rtol == 1e-3
    assert RunSpec.from_dict(spec.to_dict()) == spec and RunSpec.from_dict({"device": "cpu"}) == RunSpec("cpu")
    keys = {spec.key(), RunSpec("cuda", profile="kernelbench-strict").key(), RunSpec("cuda", atol=1e-3).key(),
            RunSpec("cuda", inputs_device="cpu").key(), RunSpec("cpu").key()}
    assert len(keys) == 5
    options = RunSpec("cpu", trials=2, profile="kernelbench-strict").eval_options(visible_devices="", spares=3)
    assert (options.trials, options.profile, options.spares, options.visible_devices) == (2, "kernelbench-strict", 3, "")
    with pytest.raises(ValueError):
        RunSpec("auto")
    with pytest.raises(ValueError, match="unknown run settings"):
        RunSpec.from_dict({"device": "cpu", "legacy_tolerance": True})


def test_compare_outputs_cases():
    opts, strict = EvalOptions(), EvalOptions(profile="kernelbench-strict")
    ref = torch.ones(4)
    same = compare_outputs(ref, ref.clone(), opts)
    assert same.error_type is ErrorType.OK and same.outputs[0].tolerance_passed == 1e-5
    assert compare_outputs(ref, torch.ones(5), opts).error_type is ErrorType.SHAPE_MISMATCH
    assert compare_outputs((ref, ref), ref, opts).error_type is ErrorType.SHAPE_MISMATCH
    nan = ref.clone()
    nan[1] = float("nan")
    nan_cmp = compare_outputs(ref, nan, opts)
    assert nan_cmp.error_type is ErrorType.NAN_OUTPUT and nan_cmp.outputs[0].tolerance_passed is None
    off = compare_outputs(ref, ref + 1e-3, strict)  # correct at 1e-2 (and 1e-3), not at 1e-4
    assert off.error_type is ErrorType.OUTPUT_MISMATCH and off.max_abs_diff == pytest.approx(1e-3, rel=1e-3)
    assert off.outputs[0].tolerance_passed == 1e-3
    assert compare_outputs(ref, ref + 1e-3, opts).error_type is ErrorType.OK
    assert compare_outputs(ref, ref + 1e-3, EvalOptions(atol=1e-4)).error_type is ErrorType.OUTPUT_MISMATCH
    half = torch.ones(4, dtype=torch.float16)
    assert compare_outputs(half, half + 1e-3, strict).error_type is ErrorType.OK
    far = compare_outputs(ref, ref + 1.0, opts)
    assert far.error_type is ErrorType.OUTPUT_MISMATCH and far.outputs[0].tolerance_passed is None
    inf = torch.tensor([1.0, float("inf")])
    assert compare_outputs(inf, inf.clone(), opts).outputs[0].tolerance_passed == 1e-5  # the same infinity
    two = compare_outputs((ref, {"b": ref * 2}), (ref, {"b": ref * 2 + 2e-4}), opts)
    assert [(o.index, o.tolerance_passed) for o in two.outputs] == [(0, 1e-5), (1, 1e-4)]
    assert compare_outputs(3, 3, opts).outputs[0].tolerance_passed == 1e-5


def test_chunked_compare_on_large_tensors(monkeypatch):
    """Outputs compared a chunk at a time (here 16,384 values per chunk over 1.5M values, non-contiguous too) give
    the same verdict, differences and count as one pass; a chunk that runs out of memory says the sizes."""
    monkeypatch.setattr(compare, "CHUNK", 1 << 14)
    gen = torch.Generator().manual_seed(0)
    ref = torch.randn(768, 2048, generator=gen)
    ref[3, 3] = 0.5
    cand = ref.clone()
    cand[700, 7] += 0.5  # one value far off, late in the tensor
    cand[3, 3] += 5e-3  # passes 1e-2, not 1e-3
    cmp = compare_outputs(ref, cand, EvalOptions())
    assert cmp.error_type is ErrorType.OUTPUT_MISMATCH and "1 of 1572864 values" in cmp.message
    assert cmp.max_abs_diff == pytest.approx(0.5, rel=1e-6)
    whole = (cand.double() - ref.double()).abs()
    assert cmp.max_rel_diff == pytest.approx(float((whole / ref.double().abs().clamp_min(1e-2)).max()), rel=1e-9)
    transposed = compare_outputs(ref.t(), cand.t(), EvalOptions())  # not contiguous: sliced by rows
    assert (transposed.error_type, transposed.max_abs_diff) == (cmp.error_type, cmp.max_abs_diff)
    cand[700, 7] = ref[700, 7]
    ok = compare_outputs(ref, cand, EvalOptions())
    assert ok.error_type is ErrorType.OK and ok.outputs[0].tolerance_passed == 1e-2

    def no_memory(*_args):
        raise torch.OutOfMemoryError("CUDA out of memory")

    monkeypatch.setattr(compare, "_chunk_stats", no_memory)
    oom = compare_outputs(ref, cand, EvalOptions())
    assert oom.error_type is ErrorType.OUT_OF_MEMORY
    assert "(768, 2048) torch.float32 0.01 GiB" in oom.message and "candidate torch.float32" in oom.message


def test_inputs_made_on_the_jobs_device(tmp_path):
    """get_inputs()/get_init_inputs() run with the inputs' device as torch's default (the job's device unless
    inputs_device='cpu'), with the same seed each time; on a CPU job both are the CPU."""
    program = tmp_path / "p.py"
    program.write_text("import torch\nseen = []\ndef get_inputs():\n    seen.append(torch.empty(0).device.type)\n"
                       "    return [torch.randn(3)]\n")
    spec = importlib.util.spec_from_file_location("p_inputs", program)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    ev = Steps(str(program), EvalOptions(device="cpu"), "cpu", lambda _stage: None)
    first, again = ev.inputs(module, 7), ev.inputs(module, 7)
    assert torch.equal(first[0], again[0]) and module.seen == ["cpu", "cpu"]
    meta = Steps(str(program), EvalOptions(device="cpu"), "meta", lambda _stage: None)
    assert meta.inputs(module, 7)[0].device.type == "meta" and module.seen[-1] == "meta"
    on_cpu = Steps(str(program), EvalOptions(device="cpu", inputs_device="cpu"), "meta", lambda _stage: None)
    assert on_cpu.inputs(module, 7)[0].device.type == "meta" and module.seen[-1] == "cpu"  # made on CPU, moved


def test_models_made_on_the_jobs_device():
    """Model(...) and ModelNew(...) are built with the inputs' device as torch's default, then moved."""
    seen = []

    class Net(torch.nn.Module):
        def __init__(self):
            super().__init__()
            seen.append(torch.empty(0).device.type)
            self.linear = torch.nn.Linear(4, 4)

    on_job = Steps("p.py", EvalOptions(device="cpu"), "meta", lambda _stage: None).constructed(Net, [])()
    on_cpu = Steps("p.py", EvalOptions(device="cpu", inputs_device="cpu"), "meta", lambda _s: None).constructed(Net, [])()
    assert seen == ["meta", "cpu"]
    assert on_job.linear.weight.device.type == on_cpu.linear.weight.device.type == "meta"


def test_results_the_parent_makes_count_under_their_profile():
    """A timeout or crash (made by the parent, not the child) records the profile and tolerances it ran under;
    what the child recorded is kept."""
    from common.outcomes import ErrorType
    from runner.result import RunResult
    from runner.spec import RunSpec

    spec = RunSpec("cuda", profile="kernelbench-strict")
    timeout = RunResult.failed(ErrorType.TIMEOUT, "no verdict after 60 s").stamped(spec)
    assert (timeout.method["profile"], timeout.method["atol"], timeout.method["options_key"]) == (
        "kernelbench-strict", 1e-4, spec.key())
    child = RunResult.passed("correct", method={"profile": "kernelbench-strict", "tf32": False}).stamped(spec)
    assert child.method["tf32"] is False and child.method["options_key"] == spec.key()


def test_classify_by_type_and_message():
    def raised(exc: BaseException) -> BaseException:
        try:
            raise exc
        except BaseException as e:
            return e

    assert error_type_of(raised(MemoryError()), "correctness") is ErrorType.OUT_OF_MEMORY
    cuda = raised(RuntimeError("CUDA error: an illegal memory access was encountered"))
    assert error_type_of(cuda, "correctness") is ErrorType.CUDA_ERROR
    assert error_type_of(raised(ValueError("x")), "init") is ErrorType.INIT_ERROR
    assert error_type_of(raised(AttributeError("x")), "load") is ErrorType.IMPORT_ERROR
    from triton.compiler.errors import CompilationError

    try:
        try:
            raise CompilationError("src", None, "bad")
        except CompilationError as inner:
            raise RuntimeError("wrapped") from inner
    except RuntimeError as outer:
        f = classify(outer, "correctness", "/nowhere.py")
    assert f.error_type is ErrorType.COMPILE_ERROR and f.exception == "RuntimeError"


def test_launch_bound_rule():
    assert launch_bound(0.10, 0.12)  # the host needs longer to launch the call than the GPU to run it
    assert not launch_bound(0.50, 0.35)
    assert not launch_bound(0.10, None)  # no batched trials (the wall-time fallback)


def test_side_stream_decision():
    events = [0.020] * 50
    plain = decide(events, [0.080 + 0.001 * (i % 3) for i in range(50)], host_overhead_ms=0.060)
    assert not plain.side_stream_suspect and plain.source == SOURCE_EVENTS and plain.samples_ms == events
    hidden = decide([0.005] * 50, [1.060] * 50, host_overhead_ms=0.060)  # 1 ms of work the events did not see
    assert hidden.side_stream_suspect and hidden.source == SOURCE_WALL
    assert hidden.samples_ms == pytest.approx([1.0] * 50)
    assert (hidden.event_median_ms, hidden.wall_median_ms) == (0.005, 1.060)
    # the threshold is max(0.05 ms, half the event median) beyond the calibrated overhead
    assert not decide([0.010] * 5, [0.010 + 0.060 + 0.049] * 5, 0.060).side_stream_suspect
    assert decide([0.010] * 5, [0.010 + 0.060 + 0.051] * 5, 0.060).side_stream_suspect
    assert not decide([2.0] * 5, [2.0 + 0.060 + 0.99] * 5, 0.060).side_stream_suspect
    assert decide([2.0] * 5, [2.0 + 0.060 + 1.01] * 5, 0.060).side_stream_suspect
    with pytest.raises(ValueError, match="as many wall as event"):
        decide([1.0], [], 0.0)


def test_timing_summary():
    t = summarize([1.0, 2.0, 3.0, 4.0, 100.0], loop_s=0.5)
    assert (t.median_ms, t.min_ms, t.max_ms, t.n) == (3.0, 1.0, 100.0, 5)
    assert t.p10_ms == pytest.approx(1.4) and t.loop_s == 0.5
    assert Timing.from_dict(t.to_dict()) == t
    assert rel_err_of_median([1.0] * 50) == 0.0
    assert rel_err_of_median([1.0, 2.0] * 50) < rel_err_of_median([1.0, 2.0] * 5)


def test_far_outliers_do_not_keep_the_timing_loop_going():
    """The median's error comes from the samples around it: 5 far outliers in 100 tight samples leave it within
    1% (the loop stops at min_trials), where the standard deviation's estimate said 6%; a wide spread does not."""
    tight = [1.0 + 0.0004 * (k % 50) for k in range(95)] + [20.0] * 5
    assert rel_err_of_median(tight) < 0.001
    assert 1.2533 * statistics.stdev(tight) / 10 / statistics.median(tight) > 0.05
    wide = [1.0 + 0.5 * (k % 2) for k in range(100)]
    assert rel_err_of_median(wide) > 0.01


def test_slow_calls_stop_after_min_time(monkeypatch):
    """A 50 ms call with a tight spread stops after min_time_s of timed trials (10+), not at min_trials; a fast one
    still takes min_trials; a noisy slow one goes on until its spread is tight or the budget is spent."""
    from runner.child import timing
    from runner.options import TimingOptions

    clock = [0.0]
    monkeypatch.setattr(timing, "_perf_counter", lambda: clock[0])

    def batch_of(ms: float, noise: float = 0.0):
        def batch(k: int) -> list[float]:
            clock[0] += k * ms / 1000
            return [ms * (1 + noise * ((i % 2) * 2 - 1)) for i in range(k)]
        return batch

    opts = TimingOptions()
    slow, flags = timing._adaptive(batch_of(50.0, 0.001), opts)
    assert timing.MIN_TRIALS_AFTER_MIN_TIME <= len(slow) < 20 and "timing_min_time_stop" in flags
    fast, flags = timing._adaptive(batch_of(0.1, 0.001), opts)
    assert len(fast) == opts.min_trials and not flags
    noisy, flags = timing._adaptive(batch_of(50.0, 0.3), opts)
    assert len(noisy) >= opts.min_trials or "timing_budget_spent" in flags


def _simulated_cuda(monkeypatch, call_ms: float):
    """timing's clocks over a fake clock: each call of the returned fn takes `call_ms` on it, events read it."""
    from runner.child import timing

    clock, calls = [0.0], [0]

    class Event:
        def __init__(self, enable_timing: bool = True) -> None:
            self.t = 0.0

    def record(event: Event) -> None:
        event.t = clock[0]

    monkeypatch.setattr(timing, "_perf_counter", lambda: clock[0])
    monkeypatch.setattr(timing, "_clocks", {"event": Event, "record": record, "sync": lambda: None,
                                            "elapsed": lambda a, b: (b.t - a.t) * 1000.0})
    monkeypatch.setattr(timing, "_flush_buffer", lambda opts: None)
    monkeypatch.setattr(timing, "_host_overhead_ms", 0.0)

    def fn() -> None:
        calls[0] += 1
        clock[0] += call_ms / 1000.0
    return fn, calls


@pytest.mark.parametrize("call_ms, calls_at_most, samples",
                         [(1400.0, 5, 4), (60.0, 7, 5), (10.0, 23, 20), (2.0, 73, 50), (0.1, 123, 100)])
def test_slow_calls_are_not_called_twice_for_one_sample(monkeypatch, call_ms, calls_at_most, samples):
    """The GPU's exclusive time bounds a shared GPU's throughput: a 1.4 s call is timed with 5 calls (one warm-up,
    three side checks that are samples too, one more: its 5 s budget), not 16; a 10 ms call with 23 (3 warm-ups,
    10 side checks that are samples, one batch of 10), not 53; a 2 ms call stops after 0.1 s of trials (3 + 20 side
    checks + 50); a fast call keeps the full method (3 warm-ups, 20 side checks, 100 trials)."""
    from runner.child import timing
    from runner.options import TimingOptions

    fn, calls = _simulated_cuda(monkeypatch, call_ms)
    t, flags = timing.time_cuda_events(fn, TimingOptions())
    assert calls[0] <= calls_at_most and t.n == samples, (calls[0], t.n)
    assert t.median_ms == pytest.approx(call_ms) and "side_stream_suspect" not in flags


def test_autotune_benchmarks_count_the_flush_as_do_bench_does(monkeypatch):
    """A 10 us config behind a 70 us L2 flush: do_bench sizes its 25 ms of measuring by flush + call (~310
    calls); sized by the call alone it made 2,500 calls, 8x the GPU's exclusive time."""
    from runner.child import timing

    fn, calls = _simulated_cuda(monkeypatch, 0.01)
    clock_fn = timing._perf_counter

    class Flush:
        def zero_(self) -> None:
            before = clock_fn()
            while clock_fn() < before + 0.07e-3:  # advance the fake clock by 70 us through fn's clock
                fn()
                calls[0] -= 1

    monkeypatch.setattr(timing, "_flush_buffer", lambda opts: Flush())
    timing.brief_do_bench(fn, warmup_ms=5.0, rep_ms=25.0)
    assert 250 < calls[0] < 800, calls[0]  # measured ~310 (+ warm-up ~60 + estimate), not 2,500


def test_children_find_the_checkout_without_an_installed_package():
    """A GPU machine runs the checkout without `pip install -e .`: the children's PYTHONPATH must be the checkout."""
    from runner.sandbox.spares import base_env

    root = Path(base_env(EvalOptions())["PYTHONPATH"])
    assert (root / "runner" / "child" / "main.py").is_file() and (root / "common" / "settings.py").is_file()


def test_the_judge_starts_its_candidate_without_importing_torch(tmp_path):
    """The candidate's process must start as soon as the judge's does: the judge deciding who the candidate runs
    as once imported torch and triton first (4-5 s on an H200), and every job waited for its candidate so."""
    code = ("import sys; from pathlib import Path; "
            "from runner.child.candidate_client import _runtime_paths, candidate_identity; "
            f"print(candidate_identity(Path({str(tmp_path / 'a' / 'b')!r}), {{}})[1], _runtime_paths()); "
            "print(sorted({'torch', 'triton'} & set(sys.modules)))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=REPO)
    assert out.stdout.splitlines()[-1] == "[]", out.stdout


def test_an_unprivileged_candidate_can_reach_its_job_whatever_the_umask(tmp_path):
    """On the H200 the runner ran with umask 077: the job folders' parent and the program file must still be
    reachable by the candidate's unprivileged user (mkdir's mode is masked by the umask; the judge opens the
    program file for it)."""
    from runner.child.candidate_client import open_for
    from runner.sandbox.jobdirs import make_job_dir

    old = os.umask(0o077)
    try:
        job = make_job_dir(str(tmp_path))
        program = job / "work" / "program.py"
        program.write_text("x = 1\n")
        assert program.stat().st_mode & 0o777 == 0o600
        open_for(program, (65534, 65534))
    finally:
        os.umask(old)
    assert job.parent.stat().st_mode & 0o777 == 0o711
    assert program.stat().st_mode & 0o777 == 0o644


@pytest.mark.skipif(os.geteuid() != 0, reason="needs root to act as the candidate's unprivileged user")
@pytest.mark.parametrize("replace", [True, False])
def test_the_candidate_can_replace_files_in_its_seeded_triton_cache(tmp_path, replace):
    """A re-run seeds the job's Triton cache with the judge's (root's) copies of the program's entries; Triton,
    run by the candidate as uid 65534, then replaces files in them (write to a temp folder, os.replace). On the
    H200 every warm re-run failed there while the cache's folders were sticky; the judge's own folders stay so."""
    import shutil
    import tempfile

    from runner.child.candidate_client import open_for
    from runner.sandbox import triton_cache

    root = Path(tempfile.mkdtemp(prefix="tlx-seeded-"))  # pytest's tmp_path is root's alone: not for uid 65534
    os.chmod(root, 0o755)
    try:
        _replace_in_seeded_cache(root, replace, open_for, triton_cache)
    finally:
        shutil.rmtree(root, ignore_errors=True)


def _replace_in_seeded_cache(root: Path, replace: bool, open_for, triton_cache) -> None:
    shared, cache = root / "shared" / "sha", root / "job-cache"
    (shared / "KEY").mkdir(parents=True)
    (shared / "KEY" / "kernel.source").write_text("old")
    cache.mkdir()
    triton_cache.seed(shared, cache)
    open_for(cache, (65534, 65534), replace=replace)
    pid = os.fork()
    if pid == 0:  # the candidate's side: as uid 65534, Triton's FileCacheManager.put
        code = 1
        try:
            os.setgid(65534)
            os.setuid(65534)
            temp = cache / "KEY" / "tmp.pid_1"
            temp.mkdir()
            (temp / "kernel.source").write_text("new")
            code = 2
            os.replace(temp / "kernel.source", cache / "KEY" / "kernel.source")
            code = 0
        except OSError:
            code += 1  # 2: it could not even write its temp file; 3: the replace was refused
        finally:
            os._exit(code)
    _, status = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(status) == (0 if replace else 3)
