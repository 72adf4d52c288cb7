"""Each GPU's timing thread on a core of its own (runner.gpu.cpu_plan, runner.child.pinning): the plan's rules,
and the affinity a real child process gets from it."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from common.settings import load_settings
from runner.child import pinning
from runner.gpu import cpu_plan
from runner.gpu.cpu_plan import CpuPlan, plan_for
from runner.options import EvalOptions
from runner.sandbox import isolation, spares, zygote_client


def test_the_last_cores_are_the_gpus_timing_cores_and_no_job_runs_there():
    cpus = list(range(16))
    assert plan_for("0", cpus, gpus=1, enabled=True) == CpuPlan(tuple(range(15)), 15)
    two = [plan_for(g, cpus, gpus=2, enabled=True) for g in ("0", "1")]
    assert [p.timing_cpu for p in two] == [15, 14] and two[0].job_cpus == two[1].job_cpus == tuple(range(14))
    assert plan_for("0", [3, 9, 5, 7], gpus=1, enabled=True) == CpuPlan((3, 5, 7), 9)  # the allowed cores, sorted


@pytest.mark.parametrize("visible, cpus, gpus, enabled", [
    ("0", list(range(16)), 1, False),  # TLX_RUNNER_PIN_TIMING=0
    ("", list(range(16)), 1, True),  # a CPU job
    ("0,1", list(range(16)), 2, True),  # a job that sees two GPUs
    ("2", list(range(16)), 2, True),  # a GPU the host does not have
    ("0", [0, 1, 2], 1, True),  # fewer than MIN_CORES_PER_GPU cores per GPU
    ("1", list(range(7)), 2, True),
])
def test_no_plan_where_pinning_would_not_help(visible, cpus, gpus, enabled):
    assert plan_for(visible, cpus, gpus, enabled) is None


def test_the_setting_turns_it_off():
    """`TLX_RUNNER_PIN_TIMING`, read once at the runner's entry, reaches the plan through the job's options."""
    for value, planned in (("0", False), ("1", True)):
        options = EvalOptions(**load_settings({"TLX_RUNNER_PIN_TIMING": value}).job_placement())
        assert (plan_for("0", list(range(16)), gpus=1, enabled=options.pin_timing) is not None) is planned


def test_host_gpus_are_counted_from_their_device_files(tmp_path):
    for name in ("nvidia0", "nvidia1", "nvidiactl", "nvidia-uvm", "nvidia-caps"):
        (tmp_path / name).touch()
    assert cpu_plan.host_gpu_count(tmp_path) == 2 and cpu_plan.host_gpu_count(tmp_path / "absent") == 0


@pytest.mark.parametrize("forked", [False, True])
def test_a_gpu_child_is_started_with_its_plan(monkeypatch, tmp_path, forked):
    """The sandbox's command (or the fork server's request) carries the plan to `runner.child.main` (which applies
    it before importing torch)."""
    seen: list[list[str]] = []

    class Stop(Exception):
        pass

    real_popen = subprocess.Popen

    def popen(cmd, **kwargs):
        if "runner.child.main" not in cmd:  # the isolation's own probes
            return real_popen(cmd, **kwargs)
        seen.append(cmd)
        raise Stop

    def fork_judge(self, outer_pid, depth, fds, procs, argv):
        seen.append(["runner.child.main", *argv])
        raise Stop

    monkeypatch.setattr(spares, "plan_for", lambda visible, enabled: CpuPlan((0, 1, 2), 3) if visible == "0" and enabled else None)
    if forked:
        if zygote_client.wanted(isolation.current().isolated, True) is not None:
            pytest.skip(f"no fork server here: {zygote_client.wanted(isolation.current().isolated, True)}")
        monkeypatch.setattr(zygote_client.ForkServer, "fork_judge", fork_judge)
    else:
        monkeypatch.setattr(spares.subprocess, "Popen", popen)
    for device, visible in (("cuda", "0"), ("cpu", "")):
        with pytest.raises(Stop):
            spares.start_child(EvalOptions(device=device, visible_devices=visible, work_root=str(tmp_path),
                                           forkserver=forked))
    main = [cmd[cmd.index("runner.child.main"):] for cmd in seen]
    plan = main[0][main[0].index("--cpus"):]
    assert plan[:4] == ["--cpus", "0,1,2", "--timing-cpu", "3"] and "--cpus" not in main[1]
    assert plan[4] == "--gpu-lock-fds" and len(plan[5].split(",")) == 4  # the host lock for both processes' warm-up
    assert main[1][-2:] == ["--gpu-lock-fds", ""]  # a CPU job touches no GPU


PROBE = """
import json, os, subprocess, sys, threading
from common.settings import load_settings
from runner.child import pinning
pinning.set_plan({job}, {timing})
got = {{}}
t = threading.Thread(target=lambda: got.update(thread=sorted(os.sched_getaffinity(0))))
t.start(); t.join()
child = subprocess.run([sys.executable, "-c", "import os; print(sorted(os.sched_getaffinity(0)))"],
                       capture_output=True, text=True).stdout.strip()
with pinning.pinned(pinning.timing_cpu()) as pinned:
    inside = sorted(os.sched_getaffinity(0))
print(json.dumps({{"main": sorted(os.sched_getaffinity(0)), "child": child, "pinned": pinned, "inside": inside, **got}}))
"""


@pytest.mark.skipif(len(os.sched_getaffinity(0)) < 2, reason="needs two cores to keep one for timing")
def test_a_process_with_a_plan_keeps_its_threads_and_children_off_the_timing_core():
    *job, timing = sorted(os.sched_getaffinity(0))
    out = subprocess.run([sys.executable, "-c", PROBE.format(job=set(job), timing=timing)], capture_output=True,
                         text=True, check=True, cwd=os.path.dirname(os.path.dirname(__file__))).stdout
    seen = json.loads(out)
    assert seen["main"] == seen["thread"] == job and seen["child"] == str(job)
    assert seen["pinned"] is True and seen["inside"] == [timing]  # only inside the block, only that thread


def test_pinning_to_no_core_or_a_refused_core_pins_nothing():
    before = os.sched_getaffinity(0)
    with pinning.pinned(None) as pinned:
        assert pinned is False and os.sched_getaffinity(0) == before
    with pinning.pinned(10_000) as pinned:  # no such core: refused, nothing pinned, no error
        assert pinned is False and os.sched_getaffinity(0) == before
