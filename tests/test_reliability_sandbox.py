"""Hostile programs through `runner.sandbox.run.evaluate_in_sandbox` (CPU, Triton interpreter): each one is classified,
leaves nothing running and nothing written outside its folders, and the calling process survives it.

Covered elsewhere (not repeated here): sleep-hang, segfault, memory bomb, stdout fake verdict, grandchild kill and
child-dies-with-parent in tests/test_runner_eval.py; CUDA illegal access and side streams in
tests/test_runner_gpu.py. The programs live in tests/hostile_programs/."""

from __future__ import annotations

import os
import socket
import threading
import time
import uuid
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
import torch

from common.outcomes import ErrorType
from runner.options import GIB, EvalOptions
from runner.sandbox.run import close_spares, evaluate_in_sandbox
from tests.programs import NAMES, hostile_program

REPO = Path(__file__).resolve().parent.parent


def rss_bytes() -> int:
    with open("/proc/self/statm") as fh:
        return int(fh.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


def job_processes(work_root: Path) -> list[int]:
    """Live (non-zombie) processes whose cwd is under `work_root` (the jobs' temp dirs)."""
    found = []
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            if not os.readlink(f"/proc/{pid}/cwd").startswith(str(work_root)):
                continue
            with open(f"/proc/{pid}/stat") as fh:
                if fh.read().rsplit(")", 1)[1].split()[0] != "Z":
                    found.append(int(pid))
        except OSError:
            continue
    return found


class Listener(threading.Thread):
    """A loopback TCP listener that records what any connection sends."""

    def __init__(self) -> None:
        super().__init__(daemon=True)
        self.sock = socket.create_server(("127.0.0.1", 0))
        self.sock.settimeout(60)
        self.port = self.sock.getsockname()[1]
        self.received: list[bytes] = []

    def run(self) -> None:
        try:
            conn, _ = self.sock.accept()
            with conn:
                self.received.append(conn.recv(1024))
        except OSError:
            pass


@pytest.fixture(scope="module")
def hostile(tmp_path_factory):
    """Every program once, three at a time; the waiting ones cost no CPU."""
    work = tmp_path_factory.mktemp("jobs")
    victim = tmp_path_factory.mktemp("victim") / "keep.txt"
    victim.write_text("precious")
    tag = uuid.uuid4().hex[:8]
    targets = [str(REPO / f".reliability-probe-{tag}"), os.path.join(os.path.expanduser("~"), f".probe-{tag}"),
               "/etc/reliability-probe"]
    listener = Listener()
    listener.start()
    extra = {"network": f"\nPORT = {listener.port}\n",
             "write_outside": f"\nTARGETS = {targets!r}\nVICTIM = {str(victim)!r}\n"}
    limits = {"busy_loop": {"timeout_s": 8.0},
              "fork_bomb": {"nproc_extra": 64, "memory_limit_bytes": 64 * GIB}}  # shared pages: count processes
    rss: dict[str, int] = {}

    def run(name: str):
        program = hostile_program(name) + extra.get(name, "")
        opts = EvalOptions(**{"device": "cpu", "timeout_s": 40.0, "trials": 2, "memory_limit_bytes": int(1.5 * GIB),
                              "work_root": str(work), **limits.get(name, {})})
        before = rss_bytes()
        result = evaluate_in_sandbox(program, opts, result_id=name)
        rss[name] = rss_bytes() - before
        return name, result

    names = NAMES
    try:
        with ThreadPoolExecutor(max_workers=3) as pool:
            results = dict(pool.map(run, ["fork_bomb", "busy_loop", *[n for n in names if n not in
                                                                     ("fork_bomb", "busy_loop")]]))
    finally:
        close_spares()
    time.sleep(0.5)
    leftovers = job_processes(work)
    written = [t for t in targets if os.path.exists(t)]
    for t in written:
        os.remove(t)
    return {"results": results, "rss": rss, "leftovers": leftovers, "written": written, "victim": victim,
            "received": listener.received, "work_left": list(work.iterdir())}


EXPECTED = {
    "busy_loop": (ErrorType.TIMEOUT, "no verdict after 8 s"),
    "fork_bomb": (ErrorType.CRASHED, "over the limit of 64"),
    "exit_at_import": (ErrorType.CRASHED, "without a verdict during 'load: importing the program'"),
    "exit_in_forward": (ErrorType.CRASHED, "without a verdict during 'correctness: ModelNew forward (trial 1)'"),
    "forge_channel": (ErrorType.CRASHED, "without a verdict"),
    "network": (ErrorType.RUNTIME_ERROR, "refused by the sandbox: network connect"),
    "cached_output": (ErrorType.OUTPUT_MISMATCH, "trial 2 of 2"),
    "mutate_inputs": (ErrorType.OUTPUT_MISMATCH, "trial 1 of 2"),
    "patch_timing": (ErrorType.OUTPUT_MISMATCH, "interpreted, no timing"),
    "big_print": (None, "correct"),
    "write_outside": (None, "correct"),
    "kill_parent": (None, "correct"),
    # isolated, the parent is the PID namespace's init and its group the job's own: the job kills only itself
    "kill_parent_group": (None, "correct"),  # the candidate's guard refuses signals to its judge's group
}


def test_every_hostile_program_is_expected():
    assert sorted(EXPECTED) == NAMES


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_hostile_program_is_classified(hostile, name):
    r = hostile["results"][name]
    error_type, message = EXPECTED[name]
    assert r.error_type == (error_type.value if error_type else None), r.message
    assert message in r.message
    assert r.timing is None and r.ref_timing is None and r.speedup is None  # CPU: never a timing to fake


def test_nothing_left_running_or_on_disk(hostile):
    assert hostile["leftovers"] == [], "processes of finished jobs are still alive"
    assert all(p.name.startswith("tlx-runner-") and not any(p.iterdir()) for p in hostile["work_left"])


def test_fork_bomb_is_stopped_by_the_process_limit(hostile):
    r = hostile["results"]["fork_bomb"]
    assert "too_many_processes" in r.flags and r.duration_s < 30


def test_forged_channel_verdict_is_refused(hostile):
    """The candidate's process holds no verdict channel (the judge does): what it writes to its pipes reaches
    nothing that decides, and its exit is its verdict."""
    r = hostile["results"]["forge_channel"]
    assert r.status == "failed" and "forged" not in r.message and "candidate_crashed" in r.flags


def test_writes_outside_the_job_are_refused(hostile):
    r = hostile["results"]["write_outside"]
    assert hostile["written"] == []
    assert hostile["victim"].read_text() == "precious"
    assert {f for f in r.flags if f.startswith("refused: write")} and any("os.remove" in f for f in r.flags)


def test_network_is_refused_even_on_loopback(hostile):
    assert hostile["received"] == []
    assert any(f.startswith("refused: network connect") for f in hostile["results"]["network"].flags)


def test_signals_to_the_runner_are_refused(hostile):
    """The programs' ModelNew runs in the candidate's process, whose guard refuses signals to its judge and to the
    group they share (isolated, the runner is not in the job's PID namespace at all)."""
    assert hostile["results"]["kill_parent"].status == "ok"
    assert any(f.startswith("refused: signal 9 to pid") for f in hostile["results"]["kill_parent"].flags)
    assert any(f.startswith("refused: signal 9 to group") for f in hostile["results"]["kill_parent_group"].flags)


def test_big_output_is_capped_in_the_parent(hostile):
    r = hostile["results"]["big_print"]
    assert r.status == "ok"
    assert hostile["rss"]["big_print"] < 64 * 2**20, "100 MB of output reached the parent's memory"
    assert len(r.to_dict().__repr__()) < 100_000


@pytest.mark.gpu
@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")
def test_patched_clocks_do_not_give_a_fast_verdict_on_gpu():
    correct = hostile_program("patch_timing").replace("return triton_add(a, b) + 1", "return triton_add(a, b)")
    r = evaluate_in_sandbox(correct, EvalOptions(device="cuda", timeout_s=120), result_id="patch-gpu")
    assert r.status == "ok", r.message
    assert r.timing.median_ms > 1e-3 and "excessive_speedup" not in r.flags, r.timing
