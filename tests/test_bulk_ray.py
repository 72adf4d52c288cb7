"""Issue 26: one Ray worker SIGKILLed mid-run, and every row is still done exactly once on resume.

The rule (README "Bulk re-runs", `runner.bulk.backends`): a run whose worker dies is recorded as `crashed`, and a
row is done when the log holds a result of it under the same settings and hardware. So the killed worker's row
ends with one `crashed` result, every other row with one verdict of its own, and a resume adds nothing.
"""

from __future__ import annotations

import argparse
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from runner.bulk import command
from runner.result import RunResult
from tests.fixtures import program
from tests.test_bulk import GOOD, REPO, WRONG, by_row, found, make_store, sandbox_children_in

# an honest program, only slow: it says it is running (a file in its sandbox folder, its cwd), then sleeps long
# enough for the test to find and kill the Ray worker that runs it
VICTIM = GOOD.replace("def get_inputs():", "def get_inputs():\n    open('victim-started', 'w').close()\n"
                      "    import time; time.sleep(120)")
RAY_CPUS = 2


def start_bulk(store: Path, runs: Path, tmp: Path) -> subprocess.Popen:
    env = {k: v for k, v in os.environ.items() if not k.startswith("TLX_")}
    env["TMPDIR"] = str(tmp)  # the workers' sandbox folders land here, where the victim's marker can be found
    env["RAY_TMPDIR"] = "/tmp"  # Ray's own session folder stays at its default (its socket paths must be short)
    return subprocess.Popen(
        [sys.executable, "-m", "runner", "bulk", "--store", str(store), "--runs-dir", str(runs), "--device", "cpu",
         "--trials", "1", "--timeout", "300", "--backend", "ray", "--ray-cpus", str(RAY_CPUS)],
        cwd=REPO, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )


def finish(proc: subprocess.Popen, timeout_s: float) -> tuple[str, str]:
    try:
        return proc.communicate(timeout=timeout_s)
    except subprocess.TimeoutExpired:
        proc.kill()
        out, err = proc.communicate()
        pytest.fail(f"bulk did not finish within {timeout_s} s:\n{out}\n{err[-3000:]}")


def poll(condition, timeout_s: float, what: str, proc: subprocess.Popen | None = None):
    """`condition()`'s first truthy value; fails when the time runs out (or `proc` exits) first."""
    deadline = time.monotonic() + timeout_s
    while not (value := condition()):
        if time.monotonic() > deadline or (proc is not None and proc.poll() is not None):
            if proc is not None:
                proc.kill()
                out, err = proc.communicate()
                pytest.fail(f"{what} (bulk exit {proc.returncode}):\n{out}\n{err[-3000:]}")
            pytest.fail(what)
        time.sleep(0.1)
    return value


def processes_in(folder: Path) -> list[int]:
    """Live processes whose working directory is `folder` or inside it."""
    pids = []
    for entry in Path("/proc").iterdir():
        try:
            cwd = os.readlink(entry / "cwd")
        except (OSError, ValueError):
            continue
        if entry.name.isdigit() and (cwd == str(folder) or cwd.startswith(f"{folder}/")):
            pids.append(int(entry.name))
    return pids


def ray_worker_of(pid: int) -> int:
    """The Ray worker above `pid`: its nearest ancestor titled `ray::<task>` (Ray's name for a worker process)."""
    while pid > 1:
        if Path(f"/proc/{pid}/cmdline").read_bytes().startswith(b"ray::"):
            return pid
        pid = int(Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[1])  # field 4: the parent
    raise AssertionError("no Ray worker above the victim's sandbox")


@pytest.mark.slow
def test_a_killed_ray_workers_row_is_done_once(tmp_path):
    programs = [VICTIM, GOOD, WRONG, program("relu", 64, "bulk_a"), program("relu", 256, "bulk_b")]
    store = make_store(tmp_path, programs)
    runs, tmp = tmp_path / "runs", tmp_path / "tmp"
    tmp.mkdir()
    proc = start_bulk(store, runs, tmp)
    marker = poll(lambda: next(iter(found(tmp, "**/victim-started")), None), 240, "the victim never started", proc)
    job = marker.parent  # the victim's own process works there; the Ray worker that runs it is above it
    victim = poll(lambda: processes_in(job), 10, "the victim's process is gone before the kill", proc)[0]
    worker = ray_worker_of(victim)
    assert worker != proc.pid
    os.kill(worker, signal.SIGKILL)
    poll(lambda: not processes_in(job), 30, "the killed worker's sandbox outlived it")
    out, err = finish(proc, 300)
    assert proc.returncode == 0, err[-3000:]
    assert f"{len(programs)} run(s) done, 0 skipped" in out

    first = by_row(runs)
    assert sorted(first) == [f"train/{i:06d}" for i in range(len(programs))]
    assert all(len(results) == 1 for results in first.values()), first
    killed = first["train/000000"][0]
    assert killed["error_type"] == "crashed" and "ray task failed" in killed["message"], killed["message"]
    assert {row: results[0]["error_type"] for row, results in first.items() if row != "train/000000"} == {
        "train/000001": None, "train/000002": "output_mismatch", "train/000003": None, "train/000004": None}

    again = start_bulk(store, runs, tmp)
    out, err = finish(again, 300)
    assert again.returncode == 0, err[-3000:]
    assert f"0 run(s) done, {len(programs)} skipped" in out
    assert by_row(runs) == first
    poll(lambda: not sandbox_children_in(tmp), 30, "a sandbox outlived the Ray instance")  # workers end after bulk


class CrashingGpuBackend:
    """Stands in for a GPU Ray cluster whose every worker dies: each task ends as the driver's `crashed` result."""

    name, device, capacity = "ray", "cuda", 1

    def hardware(self) -> str:
        return "NVIDIA H200"

    def run(self, tasks, spec, on_result) -> None:
        for task in tasks:
            on_result(task, RunResult.crashed("ray task failed: WorkerCrashedError", spec, id=task.row_id,
                                              row_id=task.row_id, program_sha256=task.program_sha256))

    def close(self) -> None:
        pass


def test_a_crash_on_a_gpu_counts_on_resume(tmp_path, monkeypatch, capsys):
    """The driver's `crashed` result of a CUDA run names no GPU of its own: bulk records it under the GPU it
    planned the run for, or a resume on that GPU would not count it and would run the row again."""
    store = make_store(tmp_path, [GOOD, WRONG])
    monkeypatch.setattr(command, "_backend", lambda args, cache, settings: CrashingGpuBackend())
    parser = argparse.ArgumentParser()
    command.add_arguments(parser)
    args = ["--store", str(store), "--runs-dir", str(tmp_path / "runs"), "--backend", "ray"]
    assert command.main(parser.parse_args(args)) == 0
    assert "2 run(s) done, 0 skipped" in capsys.readouterr().out
    assert command.main(parser.parse_args(args)) == 0
    assert "0 run(s) done, 2 skipped" in capsys.readouterr().out
    assert [r[0]["system"]["gpu"] for r in by_row(tmp_path / "runs").values()] == ["NVIDIA H200"] * 2
