"""The GPU gate across processes (`runner.gpu.host_lock`): two runner processes on one GPU never time at once,
a process's shared work waits while another's timing stage holds the GPU, and a waiting writer keeps new
readers of another process out (the gate prefers writers across processes as within one)."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
import time
from pathlib import Path

from runner.gpu.gate import EXCLUSIVE, SHARED, GpuGate
from runner.gpu.host_lock import HostLock

DEADLINE_S = 30.0

HOLDER = textwrap.dedent("""
    import sys, time
    from pathlib import Path
    from runner.gpu.gate import GpuGate
    from runner.gpu.host_lock import HostLock
    folder, mode, marks = Path(sys.argv[1]), sys.argv[2], Path(sys.argv[3])
    gate = GpuGate("0", HostLock(folder, "0", priority="priority" in sys.argv[4:]))
    between_steps = "between-steps" in sys.argv[4:]  # a job's claim: one step held and given back, the job goes on
    marks.write_text("trying")
    if between_steps:
        gate.claim(True)
    gate.acquire(mode)
    if between_steps:
        gate.release(mode)
    marks.write_text("held")
    release = marks.with_suffix(".release")
    deadline = time.monotonic() + 60
    while not release.exists() and time.monotonic() < deadline:
        time.sleep(0.01)
    if between_steps:
        gate.claim(False)
    else:
        gate.release(mode)
    marks.write_text("released")
""")


def _wait_for(path: Path, text: str) -> None:
    deadline = time.monotonic() + DEADLINE_S
    while not (path.exists() and path.read_text() == text):
        assert time.monotonic() < deadline, f"{path} never said {text!r}"
        time.sleep(0.01)


def _wait_until_intent_is_held(path: Path) -> None:
    import fcntl
    import os

    deadline = time.monotonic() + DEADLINE_S
    while True:
        assert time.monotonic() < deadline, "the writer never took the intent lock"
        if path.exists():
            fd = os.open(path, os.O_RDWR)
            try:
                fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
                fcntl.flock(fd, fcntl.LOCK_UN)
            except BlockingIOError:
                return
            finally:
                os.close(fd)
        time.sleep(0.01)


def _start(tmp_path: Path, mode: str, name: str, *extra: str) -> tuple[subprocess.Popen, Path]:
    marks = tmp_path / f"{name}.mark"
    proc = subprocess.Popen([sys.executable, "-c", HOLDER, str(tmp_path / "locks"), mode, str(marks), *extra],
                            cwd=Path(__file__).resolve().parent.parent)
    return proc, marks


def _holder(tmp_path: Path, mode: str, name: str, *extra: str) -> tuple[subprocess.Popen, Path]:
    proc, marks = _start(tmp_path, mode, name, *extra)
    _wait_for(marks, "held")
    return proc, marks


def _let_go(proc: subprocess.Popen, marks: Path) -> None:
    marks.with_suffix(".release").write_text("")
    _wait_for(marks, "released")
    proc.wait(DEADLINE_S)


def _tries(gate: GpuGate, mode: str, seconds: float) -> bool:
    """Whether `gate` gets `mode` within `seconds` (released again at once if it does)."""
    import threading

    abort = threading.Event()
    timer = threading.Timer(seconds, abort.set)
    timer.start()
    try:
        got = gate.acquire(mode, abort)
    finally:
        timer.cancel()
    if got:
        gate.release(mode)
    return got


def test_another_process_timing_keeps_this_one_out(tmp_path):
    proc, marks = _holder(tmp_path, EXCLUSIVE, "other")
    gate = GpuGate("0", HostLock(tmp_path / "locks", "0"))
    try:
        assert not _tries(gate, SHARED, 0.3) and not _tries(gate, EXCLUSIVE, 0.3)
    finally:
        _let_go(proc, marks)
    assert _tries(gate, EXCLUSIVE, DEADLINE_S)


def test_shared_holders_of_two_processes_overlap_and_timing_waits_for_both(tmp_path):
    proc, marks = _holder(tmp_path, SHARED, "other")
    gate = GpuGate("0", HostLock(tmp_path / "locks", "0"))
    try:
        assert _tries(gate, SHARED, DEADLINE_S)  # shared work of two runners overlaps
        assert not _tries(gate, EXCLUSIVE, 0.3)  # timing waits for the other runner's shared hold
    finally:
        _let_go(proc, marks)
    assert _tries(gate, EXCLUSIVE, DEADLINE_S)


def test_a_waiting_writer_keeps_new_readers_of_other_processes_out(tmp_path):
    """This process waits to time while another holds shared; a third process's new shared hold must wait
    behind this writer, not slip in (which could starve timing on a busy GPU)."""
    import threading

    reader, marks = _holder(tmp_path, SHARED, "reader")
    gate = GpuGate("0", HostLock(tmp_path / "locks", "0"))
    got = threading.Event()

    def time_it():
        gate.acquire(EXCLUSIVE)
        got.set()
        time.sleep(0.2)
        gate.release(EXCLUSIVE)

    writer = threading.Thread(target=time_it)
    writer.start()
    late_marks = tmp_path / "late.mark"
    late = None
    try:
        _wait_until_intent_is_held(tmp_path / "locks" / "gpu-0.intent")  # the writer waits on the main lock
        late = subprocess.Popen([sys.executable, "-c", HOLDER, str(tmp_path / "locks"), SHARED, str(late_marks)],
                                cwd=Path(__file__).resolve().parent.parent)
        _wait_for(late_marks, "trying")
        time.sleep(0.3)  # a window for the late reader to slip in, were the writer not preferred
        assert late_marks.read_text() == "trying", "a new reader slipped in before the waiting writer"
        assert not got.is_set()
    finally:
        _let_go(reader, marks)
    assert got.wait(DEADLINE_S)
    writer.join(DEADLINE_S)
    _wait_for(late_marks, "held")  # the late reader runs once the writer is done
    _let_go(late, late_marks)


def test_a_process_holding_shared_lets_no_new_reader_in_while_another_process_writer_waits(tmp_path):
    """This process's jobs overlap their shared holds; another process waiting to time must not wait for
    all of them to stop overlapping: this process's next reader waits behind it."""
    gate = GpuGate("0", HostLock(tmp_path / "locks", "0"))
    gate.acquire(SHARED)
    writer, marks = _start(tmp_path, EXCLUSIVE, "writer")
    try:
        _wait_until_intent_is_held(tmp_path / "locks" / "gpu-0.intent")
        assert not _tries(gate, SHARED, 0.4), "a second reader of a holding process slipped in before the writer"
    finally:
        gate.release(SHARED)
    _wait_for(marks, "held")
    _let_go(writer, marks)
    assert _tries(gate, SHARED, DEADLINE_S)


def test_a_priority_process_job_goes_before_the_other_processes_new_holds(tmp_path):
    """The service (priority) waits to time while a bulk run (this process) holds the GPU shared: no new hold of
    the bulk run, shared or exclusive, starts before it; once the bulk run's steps in flight end, it times."""
    bulk = GpuGate("0", HostLock(tmp_path / "locks", "0"))
    bulk.acquire(SHARED)
    service, marks = _start(tmp_path, EXCLUSIVE, "service", "priority")
    try:
        _wait_for(marks, "trying")
        deadline = time.monotonic() + DEADLINE_S
        while not bulk.host.priority_claimed():
            assert time.monotonic() < deadline, "the service never said it waits"
            time.sleep(0.01)
        assert not _tries(bulk, SHARED, 0.4) and not _tries(bulk, EXCLUSIVE, 0.4)
    finally:
        bulk.release(SHARED)
    _wait_for(marks, "held")
    assert not _tries(bulk, SHARED, 0.2)  # the service times alone
    _let_go(service, marks)
    assert _tries(bulk, EXCLUSIVE, DEADLINE_S) and not bulk.host.priority_claimed()


def test_a_priority_process_job_keeps_the_gpu_between_its_steps(tmp_path):
    """Between a service job's steps (its first step done, the job not over) no bulk step starts, so the job's
    next step waits for nothing; once the job ends, the bulk run goes on."""
    service, marks = _holder(tmp_path, SHARED, "service", "priority", "between-steps")
    bulk = GpuGate("0", HostLock(tmp_path / "locks", "0"))
    try:
        assert bulk.host.priority_claimed()
        assert not _tries(bulk, SHARED, 0.4) and not _tries(bulk, EXCLUSIVE, 0.4)
    finally:
        _let_go(service, marks)
    assert not bulk.host.priority_claimed() and _tries(bulk, EXCLUSIVE, DEADLINE_S)


def test_a_bulk_process_job_claims_nothing_from_the_others(tmp_path):
    """The claim is a priority process's: a bulk job between its steps lets the service (and other runs) in."""
    bulk, marks = _holder(tmp_path, EXCLUSIVE, "bulk", "between-steps")
    other = GpuGate("0", HostLock(tmp_path / "locks", "0"))
    try:
        assert _tries(other, EXCLUSIVE, DEADLINE_S)
    finally:
        _let_go(bulk, marks)


def test_a_priority_reader_overlaps_shared_holders_past_a_waiting_bulk_writer(tmp_path):
    """A bulk run's writer waits for another runner's shared hold; the service's shared step does not queue
    behind it."""
    import threading

    other, other_marks = _holder(tmp_path, SHARED, "other")
    bulk = GpuGate("0", HostLock(tmp_path / "locks", "0"))
    writer = threading.Thread(target=lambda: (bulk.acquire(EXCLUSIVE), bulk.release(EXCLUSIVE)))
    writer.start()
    try:
        _wait_until_intent_is_held(tmp_path / "locks" / "gpu-0.intent")
        service, marks = _holder(tmp_path, SHARED, "service", "priority")  # held beside "other": not queued
        _let_go(service, marks)
    finally:
        _let_go(other, other_marks)
    writer.join(DEADLINE_S)
    assert not writer.is_alive()


def test_a_warming_child_holds_the_gpu_shared_behind_a_waiting_timing_stage(tmp_path, monkeypatch):
    """A spare making its CUDA context holds the host lock shared through the descriptors its parent gave it
    (`child_descriptors`, `runner.child.warmup.gpu_held`): no timing stage starts meanwhile; a timing stage that
    holds or waits for the GPU goes first."""
    import threading

    from runner.child.warmup import gpu_held
    from runner.gpu.host_lock import child_descriptors

    monkeypatch.setenv("TLX_RUNNER_LOCK_DIR", str(tmp_path))
    timing = GpuGate("0", HostLock(tmp_path, "0"))
    fds = child_descriptors("0", 2)
    assert len(fds) == 4 and len(set(fds)) == 4
    gave_up = threading.Event()
    threading.Timer(0.3, gave_up.set).start()
    with gpu_held(fds[:2]), gpu_held(fds[2:]):  # the judge's and the candidate's processes
        assert not timing.acquire(EXCLUSIVE, abort=gave_up)  # no timing stage beside a warm-up
    assert timing.acquire(EXCLUSIVE)
    warmed = threading.Event()

    def warm() -> None:
        with gpu_held(fds[:2]):
            warmed.set()

    spare = threading.Thread(target=warm)
    spare.start()
    assert not warmed.wait(0.3)  # waits while a timing stage holds the GPU
    timing.release(EXCLUSIVE)
    assert warmed.wait(DEADLINE_S)
    spare.join()
    with gpu_held(()):  # no descriptors: nothing held, a timing stage may start
        assert timing.acquire(EXCLUSIVE, abort=gave_up)
    timing.release(EXCLUSIVE)
    for fd in fds:
        os.close(fd)


def test_the_warm_up_reports_its_steps_from_the_process_start(monkeypatch):
    """`warmup.durations`: each step's wall seconds since the one before (the first since the process started),
    and how long the process was ready before the job asked (negative: the job waited)."""
    import time

    from runner.child import warmup

    assert 0 <= time.time() - warmup.STARTED < 24 * 3600  # read from /proc: this test process's start
    monkeypatch.setattr(warmup, "STARTED", 100.0)
    monkeypatch.setattr(warmup, "_marks", {"imports": 103.0, "gpu_wait": 104.5, "cuda": 105.0})
    assert warmup.durations(104.0) == {"imports": 3.0, "gpu_wait": 1.5, "cuda": 0.5, "idle": -1.0}
    monkeypatch.setattr(warmup, "_marks", {})
    assert warmup.durations() == {}
