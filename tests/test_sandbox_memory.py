"""The sandbox's host-memory watchdog (`runner.sandbox.run._job_usage`) on real process trees: pages that forked
children share with their parent count once, pages each child writes count in each. CI's fork bomb was called
out of memory (RSS summed over 40 forks of a torch process: 12 GB) before the process limit could stop it."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time

import pytest

from runner.sandbox.run import _job_usage

MIB = 2**20
BLOCK_MIB = 150
CHILDREN = 4
CAP = 2 * BLOCK_MIB * MIB  # under the RSS sum of five processes holding the block, over one copy of it

TREE = """
import os, sys, time
block = bytearray(b"\\x01") * ({block} * 2**20)  # written: resident in the parent
for _ in range({children}):
    if os.fork() == 0:
        if {own_copy}:
            block = bytearray(b"\\x02") * ({block} * 2**20)  # a block of the child's own
        os.write(1, b"ready\\n")  # one write(2) a process: the pipe keeps it whole
        time.sleep(60)
        os._exit(0)
os.write(1, b"ready\\n")
time.sleep(60)
"""


def start_tree(own_copy: bool) -> subprocess.Popen:
    code = TREE.format(block=BLOCK_MIB, children=CHILDREN, own_copy=own_copy)
    proc = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True, start_new_session=True)
    for _ in range(CHILDREN + 1):
        assert proc.stdout.readline() == "ready\n"
    time.sleep(0.2)  # the last child says ready before its sleep, after its copy
    return proc


@pytest.fixture
def tree(request):
    proc = start_tree(request.param)
    yield proc
    os.killpg(proc.pid, signal.SIGKILL)
    proc.wait()


@pytest.mark.parametrize("tree", [False], indirect=True)
def test_pages_forked_children_share_count_once(tree):
    memory, procs = _job_usage(tree.pid, None, CAP)
    assert procs == CHILDREN + 1
    assert memory <= CAP, f"{memory / MIB:.0f} MiB for one {BLOCK_MIB} MiB block shared by {procs} processes"
    assert memory >= BLOCK_MIB * MIB


@pytest.mark.parametrize("tree", [True], indirect=True)
def test_pages_each_child_writes_count_in_each(tree):
    memory, procs = _job_usage(tree.pid, None, CAP)
    assert procs == CHILDREN + 1
    assert memory > (CHILDREN + 1) * BLOCK_MIB * MIB * 0.9, f"{memory / MIB:.0f} MiB"


@pytest.mark.parametrize("tree", [False], indirect=True)
def test_under_the_cap_the_cheap_sum_is_the_answer(tree):
    """Far under the cap no PSS is read: the RSS sum (every copy counted) is what comes back."""
    memory, _ = _job_usage(tree.pid, None, 100 * CAP)
    assert memory > (CHILDREN + 1) * BLOCK_MIB * MIB * 0.9


THREADS = """
import os, threading
stop = threading.Event()
for _ in range({threads}):
    threading.Thread(target=stop.wait, daemon=True).start()
os.write(1, b"ready\\n")
stop.wait(60)
"""


def test_threads_count_as_tasks():
    """Issue 45: 3,000 threads went past a count of processes; each thread is a task the kernel counts."""
    proc = subprocess.Popen([sys.executable, "-c", THREADS.format(threads=50)], stdout=subprocess.PIPE, text=True,
                            start_new_session=True)
    try:
        assert proc.stdout.readline() == "ready\n"
        _, tasks = _job_usage(proc.pid, None, CAP)
        assert tasks >= 51
    finally:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
