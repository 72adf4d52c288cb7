"""Bounds on a whole job that no per-process limit gives (issue 45), on real programs through
`evaluate_in_sandbox` on the CPU: the total the job writes (three files, each under the file-size limit, once grew
the host's disk by 2.9 GB) and its threads (3,000 went past a count of processes)."""

from __future__ import annotations

import subprocess
import sys

import pytest

from common.checks import CHECKS
from common.outcomes import ErrorType
from runner.options import MIB, EvalOptions
from runner.result import RunResult
from runner.sandbox import cgroup, scratch
from runner.sandbox.run import close_spares, evaluate_in_sandbox
from tests.programs import BASE

DISK_FILL = BASE + '''

import os


class ModelNew(nn.Module):
    def forward(self, a, b):
        written = []
        for i in range(3):
            try:
                with open(f"fill-{i}.bin", "wb") as fh:
                    for _ in range(40):
                        fh.write(b"\\1" * (1 << 20))
                written.append("40 MiB")
            except OSError as exc:
                written.append(exc.strerror)
        raise RuntimeError(f"WROTE {written}")
'''

THREAD_BOMB = BASE + '''

import threading


class ModelNew(nn.Module):
    def forward(self, a, b):
        stop = threading.Event()
        for _ in range(3000):
            threading.Thread(target=stop.wait, args=(60,), daemon=True).start()
        stop.wait(60)
        return triton_add(a, b)
'''


@pytest.fixture(autouse=True)
def _spares():
    yield
    close_spares()


def test_the_job_folder_is_capped_in_total(tmp_path):
    probe = tmp_path / "probe"
    probe.mkdir()
    if not scratch.cap(probe, 1 << 20):
        pytest.skip(f"this host refuses the runner a mount: {scratch.state()}")
    scratch.remove(probe)
    r = evaluate_in_sandbox(DISK_FILL, EvalOptions(device="cpu", timeout_s=60, trials=1, work_root=str(tmp_path),
                                                   disk_limit_bytes=64 * MIB), result_id="disk")
    assert "WROTE ['40 MiB', 'No space left on device', 'No space left on device']" in r.message, r.message
    assert "disk_full" in r.flags and any(c.name == "disk_full" for c in CHECKS)
    close_spares()
    parents = list(tmp_path.iterdir())  # the job's folder and its mount are gone with the job (and the spares')
    assert all(p.name.startswith("tlx-runner-") and not any(p.iterdir()) for p in parents), parents
    assert not [line for line in open("/proc/self/mountinfo") if str(tmp_path) in line]


def test_threads_past_the_limit_are_too_many_processes(tmp_path):
    r = evaluate_in_sandbox(THREAD_BOMB, EvalOptions(device="cpu", timeout_s=60, trials=1, work_root=str(tmp_path)),
                            result_id="threads")
    assert "too_many_processes" in r.flags, (r.status, r.message)
    assert r.duration_s < 40
    assert ("processes and threads, over the limit of 1024" in r.message  # the watchdog's count
            or "the kernel refused a process or thread past the job's cap" in r.message  # the cgroup's
            or "the host refused a process or thread (a limit outside the job's" in r.message), r.message  # a host's


THREADS = """
import threading
stop, started = threading.Event(), 0
try:
    for _ in range(50):
        threading.Thread(target=stop.wait, daemon=True).start()
        started += 1
finally:
    print(started)
"""


@pytest.mark.skipif(cgroup.find_hierarchy() is None or cgroup.find_hierarchy().pids_parent is None,
                    reason="no writable cgroup with the pids controller on this host")
def test_the_pids_cgroup_caps_threads():
    group = cgroup.JobCgroup.create(cgroup.find_hierarchy())
    try:
        group.set_task_limit(20)
        done = subprocess.run(group.enter_command([sys.executable, "-c", THREADS]), capture_output=True, text=True,
                              timeout=60)
        assert done.returncode != 0 and "can't start new thread" in done.stderr, done.stderr[-500:]
        assert int(done.stdout) < 20 and group.tasks_refused()
    finally:
        group.remove()
    assert not group.path.exists() and not group.pids.exists()


def test_a_thread_refused_by_a_limit_outside_the_job_is_too_many_processes():
    """A CI container's `pids.max` refused the thread bomb before the watchdog's count or the job's cgroup saw
    it: the program's RuntimeError is the only sign, and it still reads as too_many_processes."""
    from runner.sandbox.run import _host_refused_a_task
    refused = RunResult.failed(ErrorType.RUNTIME_ERROR, "ModelNew forward: RuntimeError: can't start new thread")
    out = _host_refused_a_task(refused, 812)
    assert "too_many_processes" in out.flags and "the watchdog saw 812 at most" in out.message
    honest = RunResult.failed(ErrorType.RUNTIME_ERROR, "ModelNew forward: RuntimeError: shape mismatch")
    assert "too_many_processes" not in _host_refused_a_task(honest, 3).flags
