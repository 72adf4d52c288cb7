"""Faults around a running `python -m runner serve` (CPU interpreter, loopback): hostile programs that go for the
service, a sandbox child killed from outside mid-job, and a SIGKILLed service with a queue (scripts/fault_test.py;
its 100-job figures are in RELIABILITY.md). Token and loopback checks are in tests/test_runner_service.py."""

from __future__ import annotations

import os
import signal
import time

import pytest

from common.results_log import read_results
from scripts.fault_test import Service, kill_and_recover
from tests.programs import hostile_program

SLEEPS_IN_FORWARD = hostile_program("kill_parent").replace(
    "os.kill(os.getppid(), signal.SIGKILL)", "time.sleep(60)")


@pytest.fixture(scope="module")
def service(tmp_path_factory):
    svc = Service(tmp_path_factory.mktemp("runs"))
    client = svc.start()
    yield svc, client
    assert svc.stop() == 0


def job_child(service_pid: int) -> int | None:
    """The sandbox child running a job: a child of the service whose folder holds program.py (spares' do not)."""
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            with open(f"/proc/{pid}/stat") as fh:
                ppid = int(fh.read().rsplit(")", 1)[1].split()[1])
            if ppid == service_pid and os.path.exists(f"/proc/{pid}/cwd/program.py"):
                return int(pid)
        except OSError:
            continue
    return None


def test_hostile_programs_do_not_take_the_service_down(service):
    svc, client = service
    names = ("kill_parent", "kill_parent_group", "exit_in_forward", "forge_channel")
    jobs = {n: client.submit(program=hostile_program(n), trials=1, timeout_s=60) for n in names}
    done = {n: client.wait(j["id"], timeout=120, poll=0.2) for n, j in jobs.items()}
    assert svc.proc.poll() is None, "the service died"
    assert client.health()["workers"][0]["name"] == "cpu0"
    assert done["kill_parent"]["result"]["status"] == "ok"
    if client.health()["isolation"]["isolated"]:  # its parent's group is the job's own: it kills only itself
        assert "killed by SIGKILL" in done["kill_parent_group"]["result"]["message"]
    else:
        assert any(f.startswith("refused: signal") for f in done["kill_parent_group"]["result"]["flags"])
    assert done["exit_in_forward"]["result"]["error_type"] == "crashed"
    assert "forged_verdict" in done["forge_channel"]["result"]["flags"]
    logged = [r for r in read_results(svc.runs_dir) if r["id"] in {j["result"]["id"] for j in done.values()}]
    assert len(logged) == len(names)


def test_a_child_killed_mid_job_is_recorded_as_crashed(service):
    svc, client = service
    job = client.submit(program=SLEEPS_IN_FORWARD, trials=1, timeout_s=60)
    deadline = time.monotonic() + 60
    while (pid := job_child(svc.proc.pid)) is None and time.monotonic() < deadline:
        time.sleep(0.1)
    assert pid, "the job never started"
    time.sleep(0.5)
    os.kill(pid, signal.SIGKILL)
    final = client.wait(job["id"], timeout=30, poll=0.2)
    assert final["state"] == "done" and final["attempts"] == 1
    assert final["result"]["error_type"] == "crashed" and "SIGKILL" in final["result"]["message"]
    assert [r["id"] for r in read_results(svc.runs_dir)].count(final["result"]["id"]) == 1
    assert svc.proc.poll() is None


@pytest.mark.slow
def test_sigkill_with_a_queue_loses_and_repeats_nothing(tmp_path):
    stats = kill_and_recover(tmp_path / "runs", jobs=25, kill_after=3, timeout=240)
    assert stats["at_kill"]["queued"] > 0, stats
    assert stats["states"] == {"done": 25}, stats
    assert (stats["logged_once"], stats["logged_twice_or_more"], stats["not_logged"]) == (25, 0, 0), stats
    assert "recovered {'requeued': " in stats["restart_line"]
