"""The fork server (issue 43, `runner.sandbox.zygote`): a job's judge is forked from a process that imported
torch and triton once, into the isolation built around the job's door, and holds no more than a judge the
isolation starts as a program: the door's namespaces, root, folder and cgroup, the isolation's capabilities and
no_new_privs, the door's descriptors and environment, none of the server's. The isolation tests
(tests/test_isolation.py) run their programs through forked judges in every mode too."""

from __future__ import annotations

import os
import subprocess
import time

import pytest

from runner.options import EvalOptions
from runner.sandbox import isolation, zygote_client
from runner.sandbox.enter import find_door
from runner.sandbox.run import close_spares, evaluate_in_sandbox
from runner.sandbox.spares import fork_servers_state, start_child
from tests.programs import BASE

MODES = [m for m in ("bwrap", "unshare") if isolation.detect(m).mode == m]
CORRECT = BASE + '''

class ModelNew(nn.Module):
    def forward(self, a, b):
        return triton_add(a, b)
'''
pytestmark = pytest.mark.skipif(not MODES or zygote_client.wanted(True, True) is not None,
                                reason=f"no fork server here: {zygote_client.wanted(True, True) or 'no isolation'}")


@pytest.fixture(params=MODES)
def mode(request, monkeypatch):
    monkeypatch.setenv(isolation.ISOLATION_ENV, request.param)
    isolation.current.cache_clear()
    yield request.param
    close_spares()
    isolation.current.cache_clear()


def _status(pid: int) -> dict[str, str]:
    with open(f"/proc/{pid}/status") as fh:
        return dict(line.rstrip("\n").split(":\t", 1) for line in fh if ":\t" in line)


def _fds(pid: int) -> list[str]:
    found = []
    for name in os.listdir(f"/proc/{pid}/fd"):
        try:
            found.append(os.readlink(f"/proc/{pid}/fd/{name}"))
        except OSError:
            pass
    return found


def _only_the_doors(judge: int, door_pipes: set[str]) -> bool:
    """The judge's pipes are the door's, and its one socket is its candidate's (not the server's)."""
    fds = _fds(judge)
    return {t for t in fds if t.startswith("pipe:")} <= door_pipes and sum(t.startswith("socket:") for t in fds) == 1


def test_a_forked_judge_holds_what_the_isolation_gives_and_no_more(mode, tmp_path):
    child = start_child(EvalOptions(device="cpu", work_root=str(tmp_path)))
    try:
        assert child.judge is not None and child.judge.pid, fork_servers_state(True)
        judge, door = child.judge.pid, find_door(child.proc.pid, 2)
        for ns in ("mnt", "pid", "net", "ipc"):
            assert os.readlink(f"/proc/{judge}/ns/{ns}") == os.readlink(f"/proc/{door}/ns/{ns}"), ns
            assert os.readlink(f"/proc/{judge}/ns/{ns}") != os.readlink(f"/proc/self/ns/{ns}"), ns
        assert os.stat(f"/proc/{judge}/root").st_ino == os.stat(f"/proc/{door}/root").st_ino
        assert os.readlink(f"/proc/{judge}/cwd") == os.readlink(f"/proc/{door}/cwd")
        assert open(f"/proc/{judge}/cgroup").read() == open(f"/proc/{door}/cgroup").read()
        judge_caps, door_caps = _status(judge), _status(door)
        for field in ("CapEff", "CapPrm", "CapInh", "CapBnd", "CapAmb"):  # the judge's within the door's
            mine, theirs = int(judge_caps[field], 16), int(door_caps[field], 16)
            assert mine & ~theirs == 0, (field, judge_caps[field], door_caps[field])
        assert int(judge_caps["CapEff"], 16) == (1 << 6) | (1 << 7)  # CAP_SETGID, CAP_SETUID only
        assert judge_caps["NoNewPrivs"] == "1"
        door_pipes = {t for t in _fds(door) if t.startswith("pipe:")}
        end = time.monotonic() + 60  # once warm (its start makes and closes pipes of its own): no server descriptor
        while not _only_the_doors(judge, door_pipes) and time.monotonic() < end:
            time.sleep(0.2)
        assert _only_the_doors(judge, door_pipes), (_fds(judge), door_pipes)
    finally:
        child.discard()


def test_forked_judges_run_jobs_without_importing_torch(mode, tmp_path):
    options = EvalOptions(device="cpu", timeout_s=120, trials=1, work_root=str(tmp_path))
    results = [evaluate_in_sandbox(CORRECT, options, result_id=f"fork-{i}") for i in range(2)]
    assert all(r.status == "ok" for r in results), [r.message for r in results]
    assert all(r.cpu_s["judge_warm"] < 0.5 for r in results), [r.cpu_s for r in results]
    assert fork_servers_state(True) == {"forked_judges": True, "why_not": None}


def test_a_server_that_never_started_a_judge_is_not_asked_again(mode, tmp_path, monkeypatch):
    from runner.sandbox import spares

    def refuse(self, *args, **kwargs):
        self.broken = "refused for the test"
        raise OSError(self.broken)

    monkeypatch.setattr(spares, "_servers", {})
    monkeypatch.setattr(zygote_client.ForkServer, "fork_judge", refuse)
    r = evaluate_in_sandbox(CORRECT, EvalOptions(device="cpu", timeout_s=120, trials=1, work_root=str(tmp_path)),
                            result_id="fallback")
    assert r.status == "ok" and r.cpu_s["judge_warm"] > 0.1, (r.message, r.cpu_s)  # its judge imported torch
    assert fork_servers_state(True) == {"forked_judges": False, "why_not": "refused for the test"}
    for server in spares._servers.values():
        server.close()


def test_the_setting_turns_the_server_off(monkeypatch):
    from common.settings import load_settings

    monkeypatch.setenv("TLX_RUNNER_FORKSERVER", "0")
    placement = load_settings().job_placement()
    assert placement["forkserver"] is False and zygote_client.wanted(True, placement["forkserver"])


def test_an_isolation_that_ended_before_its_door_is_told_at_once():
    """A job's isolation that exits while it is built (the jail refused a mount) leaves no door to find: the
    keeper says so at once, and the job starts its judge as a program, where it waited 20 s for the door."""
    outer = subprocess.Popen(["true"])
    while open(f"/proc/{outer.pid}/stat").read().rsplit(")", 1)[1].split()[0] != "Z":
        time.sleep(0.01)
    for _ in range(2):  # exited and not yet reaped, then reaped
        started = time.monotonic()
        with pytest.raises(OSError, match="ended before its door started"):
            find_door(outer.pid, 2)
        assert time.monotonic() - started < 1
        outer.wait()
