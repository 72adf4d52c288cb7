"""The GPU gate (`runner.gpu.gate`): jobs share a GPU through their CPU-bound stages, timing stages never overlap.

On CPU: the gate itself under many threads; the real scheduler (LocalBackend lanes, sandbox children speaking the
gate protocol) with an instrumented gate, checked from inside the children; and the evaluation holding the
exclusive gate around its timing loops."""

from __future__ import annotations

import dataclasses
import json
import threading
import time
from pathlib import Path

import pytest
import torch

from common.outcomes import ErrorType
from runner.bulk.backends import LocalBackend, Task
from runner.child import timing
from runner.child.evaluate import Judge
from runner.child.steps import Stop, inputs_digest
from runner.gpu.gate import EXCLUSIVE, NO_GATE, SHARED, GpuGate
from runner.gpu.slots import Slot, make_slots
from runner.options import GIB, EvalOptions
from runner.result import Timing
from runner.sandbox.run import close_spares, evaluate_in_sandbox
from runner.spec import RunSpec
from tests.programs import runner_program


class RecordingGate(GpuGate):
    """A real gate that also records who held it how, and fails the test on any overlap with an exclusive hold."""

    def __init__(self) -> None:
        super().__init__("fake")
        self.lock = threading.Lock()
        self.holders: dict[str, int] = {SHARED: 0, EXCLUSIVE: 0}
        self.violations: list[str] = []
        self.max_shared = 0

    def acquire(self, mode, abort=None):
        got = super().acquire(mode, abort)
        if got:
            with self.lock:
                self.holders[mode] += 1
                if self.holders[EXCLUSIVE] > 1 or (self.holders[EXCLUSIVE] and self.holders[SHARED]):
                    self.violations.append(f"{dict(self.holders)} after acquiring {mode}")
                self.max_shared = max(self.max_shared, self.holders[SHARED])
        return got

    def release(self, mode):
        with self.lock:
            self.holders[mode] -= 1
        super().release(mode)


def test_gate_prefers_timing_and_never_overlaps_it():
    gate = RecordingGate()
    order: list[str] = []

    def job(i: int) -> None:
        for _ in range(5):
            with gate.held(SHARED):
                time.sleep(0.002)
        with gate.held(EXCLUSIVE):
            order.append(f"t{i}")
            time.sleep(0.01)

    threads = [threading.Thread(target=job, args=(i,)) for i in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(30)
    assert not gate.violations and sorted(order) == [f"t{i}" for i in range(8)]
    report = gate.report()
    assert report["timing_stages"] == 8 and 0.08 <= report["timing_s"] <= report["busy_s"] <= report["wall_s"]
    assert 0 < report["busy_fraction"] <= 1

    # a waiting timing stage holds back new shared holders, and an abort ends a wait
    gate2 = GpuGate()
    assert gate2.acquire(SHARED)
    waiting = threading.Thread(target=gate2.acquire, args=(EXCLUSIVE,))
    waiting.start()
    time.sleep(0.2)
    stop = threading.Event()
    stop.set()
    assert gate2.acquire(SHARED, abort=stop) is False
    gate2.release(SHARED)
    waiting.join(5)
    assert gate2.acquire(EXCLUSIVE, abort=stop) is False  # held by the thread that waited


def test_lanes_share_a_gpu():
    slots = make_slots("cuda", gpus=["H200", "H200"], jobs_per_gpu=3)
    assert [(s.name, s.visible_devices, s.lanes) for s in slots] == [
        ("gpu0", "0", 3), ("gpu0.1", "0", 3), ("gpu0.2", "0", 3), ("gpu1", "1", 3), ("gpu1.1", "1", 3),
        ("gpu1.2", "1", 3)]
    with pytest.raises(ValueError, match="jobs per GPU"):
        make_slots("cuda", gpus=["H200"], jobs_per_gpu=0)


TIMED_SECTION = '''
import json, os, time
from runner.gpu.gate import current


def _timed_section():  # run at import by an assignment: a plain reference part runs no module-level statement
    if __name__ != "tlx_reference":  # only in the judge, which holds the job's gate (the candidate process has none)
        return None
    with current().shared():
        time.sleep(0.2)
    with current().exclusive():  # stands for the timing stage: the parent's gate must keep it alone
        start = time.time()
        time.sleep(0.5)
        end = time.time()
    with open(os.path.join({folder!r}, str(time.time_ns())), "w") as fh:  # (pids repeat: each job's PID namespace)
        json.dump([start, end], fh)


_SECTION = _timed_section()
'''


def test_scheduler_never_overlaps_two_timing_stages(tmp_path):
    """Four lanes of the real LocalBackend run sandboxed jobs that take the GPU gate as a CUDA job's timing stage
    does; the children's own clocks show their exclusive sections never overlapped, and the jobs did overlap."""
    folder = tmp_path / "sections"
    folder.mkdir()
    program = TIMED_SECTION.format(folder=str(folder)) + runner_program("correct_add")
    gate = RecordingGate()
    slots = [Slot(f"cpu{i}", "cpu", "", lanes=4) for i in range(4)]
    spans: list[tuple[float, float]] = []

    def evaluate(program: str, spec: RunSpec, slot: Slot, **kw):
        started = time.time()
        options = spec.eval_options(visible_devices="", memory_limit_bytes=int(1.5 * GIB), spares=4,
                                    write_roots=(str(folder),))
        result = evaluate_in_sandbox(program, options, gate=gate, **kw)
        spans.append((started, time.time()))
        return result

    results = []
    tasks = iter([Task(f"train/{i:06d}", program + f"\n# {i}\n", f"sha{i}", 0) for i in range(6)])
    try:
        LocalBackend(slots, evaluate).run(tasks, RunSpec("cpu", 120, 1), lambda task, r: results.append(r))
    finally:
        close_spares()
    assert [r.status for r in results] == ["ok"] * 6, [r.message for r in results]
    sections = sorted(tuple(json.loads(p.read_text())) for p in folder.iterdir())
    assert len(sections) == 6
    for (_, end), (start, _) in zip(sections, sections[1:], strict=False):
        assert start >= end, f"two timing sections overlapped: {sections}"
    assert not gate.violations, gate.violations
    assert gate.report()["timing_stages"] == 6
    overlapping = sum(1 for a in spans for b in spans if a is not b and a[0] < b[1] and b[0] < a[1])
    assert overlapping > 0, "the lanes never ran two jobs at once"


class FakeChildGate:
    """Stands for a CUDA job's ChildGate in an in-process Judge: records each hold in `events`; re-entrant like
    the real one (a step inside a held gate asks nothing)."""

    def __init__(self, events: list[str]) -> None:
        self.events, self.held = events, None

    def hold(self, mode):
        gate = self

        class Hold:
            def __enter__(self):
                self.outer = gate.held is None
                if self.outer:
                    gate.events.append(f"enter {mode}")
                    gate.held = mode

            def __exit__(self, *exc):
                if self.outer:
                    gate.events.append(f"exit {mode}")
                    gate.held = None

        return Hold()

    def shared(self):
        return self.hold(SHARED)

    def exclusive(self):
        return self.hold(EXCLUSIVE)


class FakeCandidate:
    """Stands for the candidate process: answers each command at once (ModelNew doubles its input, made from
    `module.get_inputs`) and records under which gate mode the judge asked."""

    identity, identity_note, uid = None, "in-process test", 0

    def __init__(self, gate: FakeChildGate, module, tuners: int = 0) -> None:
        self.gate, self.module, self.tuners = gate, module, tuners
        self.asked: list[str] = []
        self.pending: list[dict] = []

    def ask(self, cmd, **fields):
        self.asked.append(f"{cmd} under {self.gate.held}")
        inputs = self.module.get_inputs()
        answer = {"ok": True, "flags": [], "autotunes": True, "tuners": self.tuners}
        if cmd in ("forward", "recheck"):
            answer.update(digest=inputs_digest(inputs), outputs=[inputs[0] * 2], structure="*")
        if cmd == "time":
            answer.update(timing=Timing(0.5, 0.5, 0.0, 0.5, 0.5, 1).to_dict(), flags=[],
                          launches={"checked": True, "triton_launches": 1, "triton_ms": 0.4})
        if cmd == "launches":
            answer.update(launches={"checked": True, "triton_launches": 1})
        self.pending.append(answer)

    def answer(self):
        return self.pending.pop(0)

    def request(self, cmd, **fields):
        self.ask(cmd, **fields)
        return self.answer()

    def ready(self):
        self.request("ready")

    def outputs(self, header, device, max_bytes, ipc=False):
        return header["outputs"]


class Module:
    @staticmethod
    def get_inputs():
        return [torch.ones(4)]


def fake_judge(tmp_path, events, trials=2, tuners=0):
    fake = FakeChildGate(events)
    candidate = FakeCandidate(fake, Module, tuners)
    judge = Judge(str(tmp_path / "p.py"), EvalOptions(device="cpu", trials=trials), "cpu", lambda _s: None, NO_GATE,
                  candidate)
    judge.gate = judge.steps.gate = fake  # as on a CUDA job (a CPU job has no gate)
    return judge, candidate


def test_timing_stage_holds_the_exclusive_gate(monkeypatch, tmp_path):
    """The judge times ModelNew (in the candidate's process) and Model inside the exclusive gate, nothing of it
    outside; making the timing inputs is shared work before it."""
    events: list[str] = []

    def fake_time(fn, opts):
        events.append(f"time Model under {judge.gate.held}")
        fn()
        return Timing(1.0, 1.0, 0.0, 1.0, 1.0, 1), []

    monkeypatch.setattr(timing, "time_callable", fake_time)
    judge, candidate = fake_judge(tmp_path, events)
    result = judge.time_both(Module, lambda x: x)
    assert result.status == "ok" and result.speedup == 2.0
    assert candidate.asked == ["time under exclusive"]
    assert events == ["enter shared", "exit shared", "enter exclusive", "time Model under exclusive",
                      "exit exclusive"]


def test_loading_holds_no_gate_and_building_holds_it_shared(monkeypatch, tmp_path):
    """The judge holds no gate around the two imports (the program in the candidate, the reference part here),
    and asks its candidate only once that has warmed up (`ready`), so a slow spare holds no other job's timing
    back; each import then takes the shared gate as a step of its own process (`Steps.guarded`: module-level code
    may use the GPU), which `_reference`, replaced here, does not show. Building the models (GPU allocations, init
    kernels) holds the shared gate."""
    events: list[str] = []
    judge, candidate = fake_judge(tmp_path, events)
    held: list[str] = []
    monkeypatch.setattr(judge, "_reference", lambda: held.append(f"reference import under {judge.gate.held}") or Module)
    monkeypatch.setattr(judge.steps, "init_inputs", lambda module: held.append(f"init inputs under {judge.gate.held}") or [])
    monkeypatch.setattr(judge.steps, "model", lambda module, name, init: held.append(f"{name} under {judge.gate.held}"))
    judge.load(str(tmp_path / "cache"))
    assert candidate.asked == ["ready under None", "load under None", "build under shared"]
    assert held == ["reference import under None", "init inputs under shared", "Model under shared"]
    assert events == ["enter shared", "exit shared"]


def test_the_launch_record_comes_with_the_timing_stage(monkeypatch, tmp_path):
    """On CUDA the launches are recorded by the candidate inside the timing stage (the GPU alone: no other job's
    kernels stretch their times) and the kernel-time check reads that record."""
    events: list[str] = []
    monkeypatch.setattr(timing, "time_callable", lambda fn, opts: (Timing(1.0, 1.0, 0.0, 1.0, 1.0, 1), []))
    judge, candidate = fake_judge(tmp_path, events)
    judge.time_both(Module, lambda x: x)
    assert judge.launches["triton_ms"] == 0.4 and "timing_below_kernel_time" not in judge.flags
    candidate.pending.clear()
    judge, candidate = fake_judge(tmp_path, events)
    original = candidate.ask

    def slow_kernels(cmd, **fields):
        original(cmd, **fields)
        candidate.pending[-1]["launches"] = {"checked": True, "triton_launches": 1, "triton_ms": 5.0}

    candidate.ask = slow_kernels
    judge.time_both(Module, lambda x: x)
    assert "timing_below_kernel_time" in judge.flags  # 0.5 ms timed against 5 ms of its kernels


def test_fresh_value_pairs_shrink_for_slow_calls():
    assert [timing.fresh_pairs(ms) for ms in (0.01, 10.0, 50.0, 1409.0)] == [5, 5, 2, 1]


@pytest.mark.parametrize("tuners", [1, 0])
def test_an_autotuning_program_compiles_shared_then_tunes_alone(tmp_path, tuners):
    """On a shared GPU, a program that autotunes makes its first ModelNew call twice: a compile pass under the
    shared gate, then the call that tunes and is compared, with the GPU alone; the other trials and a program
    whose autotuners did not run stay shared. The first trial asks the candidate before the reference runs."""
    events: list[str] = []
    judge, candidate = fake_judge(tmp_path, events, tuners=tuners)
    judge.autotunes = True
    judge.correctness(Module, lambda x: x * 2)
    first = ["compile_pass under shared", "forward under exclusive" if tuners else "forward under shared"]
    assert candidate.asked == first + ["forward under shared"]
    assert judge.correct_trials == 2


def test_recheck_on_fresh_values_catches_a_reused_output(tmp_path):
    """The recheck compares ModelNew's output on fresh values with Model's; a candidate that hands back what it
    returned before fails with `output_reused`."""
    events: list[str] = []
    judge, candidate = fake_judge(tmp_path, events)
    judge.recheck(Module, lambda x: x * 2)
    assert candidate.asked == ["recheck under shared"]

    class Fresh:
        calls = [0]

        @staticmethod
        def get_inputs():
            Fresh.calls[0] += 1
            return [torch.ones(4) * Fresh.calls[0]]

    judge, candidate = fake_judge(tmp_path, events)
    candidate.module = Module  # the candidate's answer stays the old one: ones * 2
    with pytest.raises(Stop) as stop:
        judge.recheck(Fresh, lambda x: x * 2 + 1)
    assert stop.value.verdict.error_type == "output_mismatch" and "output_reused" in judge.flags


def test_the_reference_runs_under_the_gate_and_running_out_of_memory_there_is_out_of_memory(tmp_path):
    """The judge's reference call is GPU work: it holds the shared gate, and an out-of-memory error there is the
    verdict `out_of_memory` (a job then runs again alone), not a harness error."""
    events: list[str] = []
    judge, _ = fake_judge(tmp_path, events)
    held: list[str | None] = []

    def model(x):
        held.append(judge.gate.held)
        return x * 2

    judge.correctness(Module, model)
    assert held == [SHARED, SHARED] and judge.correct_trials == 2

    def no_memory(x):
        raise torch.OutOfMemoryError("CUDA out of memory. Tried to allocate 3.00 GiB")

    judge, _ = fake_judge(tmp_path, events)
    with pytest.raises(Stop) as stop:
        judge.correctness(Module, no_memory)
    assert stop.value.verdict.error_type == ErrorType.OUT_OF_MEMORY
    assert "Model forward" in stop.value.verdict.message


def test_a_harness_failure_is_a_runtime_error_unless_out_of_memory():
    import torch

    from common.outcomes import ErrorType
    from runner.child.main import harness_failure

    oom = harness_failure(torch.OutOfMemoryError("CUDA out of memory. Tried to allocate 3.00 GiB"))
    other = harness_failure(KeyError("x"))
    assert (oom.error_type, other.error_type) == (ErrorType.OUT_OF_MEMORY, ErrorType.RUNTIME_ERROR)
    assert oom.flags == other.flags == ["harness_error"] and oom.message.startswith("harness error: OutOfMemoryError")


def test_gate_wait_does_not_count_against_the_timeout(tmp_path):
    """A job that waits for the gate (held elsewhere) longer than its whole timeout still gets its verdict."""
    gate = GpuGate()
    program = ("from runner.gpu.gate import current\n\n\ndef _hold():\n    with current().exclusive():\n        pass\n\n\n"
               "_HELD = _hold()\n" + runner_program("correct_add"))  # an assignment: plain reference parts run no statement
    opts = EvalOptions(device="cpu", timeout_s=60.0, trials=1, memory_limit_bytes=int(1.5 * GIB),
                       work_root=str(tmp_path), prewarm=False)
    try:
        warm = evaluate_in_sandbox(runner_program("correct_add"), opts, result_id="warm")
        assert warm.status == "ok", warm.message
        # a margin for load that changes between the two jobs (1.5x + 3 s was too little once, at load 10)
        short = dataclasses.replace(opts, timeout_s=round(2.5 * warm.duration_s + 5.0, 1))
        gate.acquire(EXCLUSIVE)
        threading.Timer(short.timeout_s + 1.0, gate.release, args=(EXCLUSIVE,)).start()
        r = evaluate_in_sandbox(program, short, result_id="waits", gate=gate)
    finally:
        close_spares()
    assert r.status == "ok", r.message
    # the test's own exclusive hold, then the program's, in the judge (its reference part) and in the candidate
    # (the whole program), whose requests the judge relays
    assert r.duration_s > short.timeout_s and gate.report()["timing_stages"] == 3
    # the wait, apart from the step that waited: the judge's first request, for its import of the reference part
    # (the test's hold ends timeout + 1 s after the job was handed out; the child's start comes first)
    waited = r.phases_s.get("load: importing the reference part [waiting for the GPU]", 0.0)
    assert waited > short.timeout_s / 2 and r.phases_s["load: importing the reference part"] < waited, r.phases_s
    assert sum(r.phases_s.values()) == pytest.approx(r.duration_s, abs=0.05)
    assert all(p.name.startswith("tlx-runner-") and not any(p.iterdir()) for p in Path(tmp_path).iterdir())


def test_compiling_gives_the_gate_back():
    """Triton's compile (wrapped by install_triton_hooks) gives a held gate back (after the GPU drained the job's
    queued work) and takes it again after, unless it ends within the grace (a cache hit); outside a hold
    compiling asks nothing."""
    import io
    import time

    from runner.gpu import gate as gate_module

    sent: list[str] = []
    child = gate_module.ChildGate(lambda event: sent.append(event["mode"]), io.BytesIO(b"go\n" * 20),
                                  drain=lambda: sent.append("drain"))
    compiled = gate_module._paused_while(lambda: "kernel")
    slow = gate_module._paused_while(lambda: time.sleep(gate_module.PAUSE_GRACE_S + 0.25) or "slow kernel")
    saved = gate_module.current()
    gate_module.install(child)
    try:
        assert compiled() == "kernel" and sent == []
        with child.shared():
            assert slow() == "slow kernel"
        assert sent == [SHARED, "drain", "release", SHARED, "drain", "release"]
        sent.clear()
        with child.shared():
            assert compiled() == "kernel"  # within the grace: the gate is kept
            with child.paused():
                with child.paused():  # a pause inside a pause does nothing
                    time.sleep(gate_module.PAUSE_GRACE_S + 0.25)
        assert sent == [SHARED, "drain", "drain", "release", SHARED, "drain", "release"]
        sent.clear()
        with child.hold(EXCLUSIVE):
            with child.shared():  # inside a held gate nothing more is asked
                pass
        assert sent == [EXCLUSIVE, "drain", "release"]
    finally:
        gate_module.install(saved)


def test_triton_hooks_wrap_compile_and_autotuner():
    import importlib

    from triton.runtime.autotuner import Autotuner

    from runner.child import autotune
    from runner.gpu import gate as gate_module

    modules = [importlib.import_module(m) for m in ("triton.compiler", "triton.compiler.compiler", "triton.runtime.jit")]
    saved = [(m, m.__dict__.get("compile")) for m in modules], Autotuner._bench
    try:
        gate_module.install_triton_hooks()
        autotune.install()
        once, bench = modules[0].compile, Autotuner._bench
        gate_module.install_triton_hooks()  # a second call wraps nothing twice
        autotune.install()
        assert modules[0].compile is once and once._tlx_wrapped
        assert Autotuner._bench is bench and bench._tlx_wrapped
    finally:
        for module, real in saved[0]:
            if real is None:
                module.__dict__.pop("compile", None)
            else:
                module.compile = real
        Autotuner._bench = saved[1]


def test_jobs_per_gpu_follow_the_cores_and_memory_per_gpu_unless_set():
    from common.settings import JOBS_PER_GPU_ENV, RunnerConfig, default_jobs_per_gpu

    gib = 1 << 30
    assert [default_jobs_per_gpu(1, cores, 128 * gib) for cores in (1, 2, 8, 16, 128)] == [1, 1, 4, 6, 6]
    assert default_jobs_per_gpu(8, 128, 2048 * gib) == 6  # 16 cores and 256 GiB per GPU
    assert default_jobs_per_gpu(8, 64, 2048 * gib) == 4  # 8 cores per GPU
    assert default_jobs_per_gpu(2, 32, 40 * gib) == 2  # 20 GiB per GPU: memory bounds it
    assert RunnerConfig.from_env({}).jobs_per_gpu is None  # sized when the GPUs are known
    assert RunnerConfig.from_env({JOBS_PER_GPU_ENV: "3"}).jobs_per_gpu == 3
    slots = make_slots("cuda", gpus=["H200", "H200"], jobs_per_gpu=None)
    assert len(slots) == 2 * default_jobs_per_gpu(2) and slots[0].lanes == default_jobs_per_gpu(2)


def test_a_stage_s_wait_for_the_gate_is_put_beside_it():
    from runner.sandbox.run import gate_waits_apart

    phases = {"load: importing the reference part": 5.0, "timing: waiting for the GPU": 2.0, "init: building": 0.5}
    waited = {"load: importing the reference part": 4.2, "timing: waiting for the GPU": 1.9, "init: building": 0.9}
    assert gate_waits_apart(phases, waited) == {
        "load: importing the reference part": 0.8, "load: importing the reference part [waiting for the GPU]": 4.2,
        "timing: waiting for the GPU": 2.0,  # a wait already
        "init: building": 0.0, "init: building [waiting for the GPU]": 0.5}  # never more than the stage's time
    assert gate_waits_apart(phases, {}) == phases
