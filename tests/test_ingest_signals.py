"""An ingest killed or interrupted, as real processes with real signals (issue 27, "Ingest killed"): SIGTERM is
handled like SIGINT in stage 1 and 2, a later ingest clears the build folder a SIGKILLed one left, the worker
processes end with the ingest that started them, and an interrupted stage 2 exits at once."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from queries.ingest import ingest
from tests.fixtures import write_fixture_shard

REPO = Path(__file__).resolve().parent.parent
REALWORLD = Path(__file__).resolve().parents[2] / "shared" / "data" / "realworld"
COPIES = 14  # 14 x 1,562 rows: past the 20,000 rows from which stage 1 starts worker processes

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def big_source(tmp_path_factory) -> Path:
    if not (REALWORLD / "train.parquet").is_file():
        pytest.skip(f"{REALWORLD} not present")
    table = pq.read_table(REALWORLD / "train.parquet", columns=["x", "y"])
    path = tmp_path_factory.mktemp("source") / "train.parquet"
    pq.write_table(pa.concat_tables([table] * COPIES), path, row_group_size=4096)
    return path


@pytest.fixture(scope="module")
def big_store(big_source, tmp_path_factory) -> Path:
    store = tmp_path_factory.mktemp("big") / "store"
    ingest([str(big_source)], store, progress=False, workers=2, syntax_check=False)
    return store


def _start(*args: str) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-m", "queries", *args, "--workers", "2"], cwd=REPO,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env={**os.environ, "PYTHONPATH": str(REPO)})


def _children() -> dict[int, list[int]]:
    tree: dict[int, list[int]] = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                ppid = int((entry / "stat").read_text().rsplit(")", 1)[1].split()[1])
            except (OSError, IndexError, ValueError):
                continue
            tree.setdefault(ppid, []).append(int(entry.name))
    return tree


def _descendants(pid: int) -> set[int]:
    tree, found, frontier = _children(), set(), [pid]
    while frontier:
        for child in tree.get(frontier.pop(), []):
            if child not in found:
                found.add(child)
                frontier.append(child)
    return found


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return False
    return state != "Z"


def _wait_for_workers(proc: subprocess.Popen, count: int, timeout: float = 120) -> set[int]:
    """The process's descendants once there are `count` of them (the forkserver and its workers)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        found = _descendants(proc.pid)
        if len(found) >= count:
            return found
        assert proc.poll() is None, proc.communicate()
        time.sleep(0.05)
    pytest.fail(f"no {count} worker processes within {timeout} s")


def _gone_within(pids: set[int], seconds: float) -> set[int]:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline and any(_alive(p) for p in pids):
        time.sleep(0.1)
    return {p for p in pids if _alive(p)}


def _build_folders(store: Path) -> list[Path]:
    return sorted(store.parent.glob(f".{store.name}.building-*"))


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGINT])
def test_signal_in_stage_1_cleans_up_like_ctrl_c(big_source, tmp_path, signum):
    store = tmp_path / "store"
    proc = _start("ingest", str(big_source), "--store", str(store), "--no-syntax-check")
    workers = _wait_for_workers(proc, 3)
    proc.send_signal(signum)
    _, stderr = proc.communicate(timeout=60)
    assert proc.returncode == 130 and "interrupted" in stderr, stderr
    assert _build_folders(store) == [] and not store.exists()
    assert _gone_within(workers, 10) == set()


def test_sigkill_in_stage_1_workers_end_and_the_next_ingest_clears_the_folder(big_source, tmp_path):
    store = tmp_path / "store"
    proc = _start("ingest", str(big_source), "--store", str(store), "--no-syntax-check")
    workers = _wait_for_workers(proc, 3)
    proc.kill()
    proc.communicate(timeout=30)
    assert _gone_within(workers, 10) == set()  # the forkserver and every worker
    left = _build_folders(store)
    assert len(left) == 1 and left[0].name.endswith(f"-{proc.pid}")
    again = _start("ingest", str(REALWORLD / "test.parquet"), "--store", str(store), "--no-syntax-check")
    _, stderr = again.communicate(timeout=120)
    assert again.returncode == 0, stderr
    assert f"removing {left[0]}" in stderr and not left[0].exists() and (store / "meta.json").is_file()


def test_a_live_build_folder_is_left_alone(tmp_path):
    store = tmp_path / "store"
    live = tmp_path / f".store.building-{os.getppid()}"  # pytest's parent: alive
    live.mkdir()
    source = write_fixture_shard(tmp_path / "source")[1]  # any small source: the build folder is the point
    ingest([str(source)], store, progress=False, workers=1, syntax_check=False)
    assert live.is_dir()


@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM])
def test_signal_in_stage_2_exits_at_once(big_store, signum):
    proc = _start("check-syntax", "--store", str(big_store))
    workers = _wait_for_workers(proc, 3)
    time.sleep(1.0)  # into the work
    sent = time.monotonic()
    proc.send_signal(signum)
    _, stderr = proc.communicate(timeout=60)
    took = time.monotonic() - sent
    assert proc.returncode == 1 or proc.returncode == 130, stderr
    assert took < 5, f"exited {took:.1f} s after the signal"
    assert _gone_within(workers, 10) == set()
    meta = json.loads((big_store / "meta.json").read_text())
    assert meta["syntax_check"] == {"done": False}  # the stage-1 store as it was


def test_workers_do_not_run_the_parents_main_script(tmp_path, monkeypatch):
    """A process whose `__main__` is a script (a Streamlit page run by AppTest, the explorer) must not have its
    ingest workers run that script again at their start (it broke the pool in a fresh clone's test run)."""
    import types

    from queries.ingest.processes import process_pool, stop_pool

    script = tmp_path / "page.py"
    script.write_text("raise SystemExit('the parent script ran in a worker')\n")
    main = types.ModuleType("__main__")
    main.__file__ = str(script)
    monkeypatch.setitem(sys.modules, "__main__", main)
    pool = process_pool(2)
    try:
        pids = {pool.submit(os.getpid).result(timeout=60) for _ in range(4)}
    finally:
        stop_pool(pool, True)
    assert pids and os.getpid() not in pids
