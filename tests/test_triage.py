"""CPU triage (`python -m runner triage`, issue 41): one program per error type, with real Triton compile errors
for sm_90, launch-argument errors, honest controls that pass, and what the stand-in cannot decide. Every program
is triaged by the real worker process inside the job isolation, as the command does."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from runner.triage.pool import TriagePool, TriageSettings
from tests.programs import HERE, runner_program, whole_program
from tests.queries_helpers import settings_now

TRIAGE = HERE / "triage_programs"

# program -> (status, error type, a text the message or reason holds)
EXPECTED = {
    "runner:syntax_error": ("failed", "syntax_error", "line"),
    "runner:import_error": ("failed", "import_error", "No module named"),
    "runner:missing_symbol": ("failed", "missing_symbol", "get_init_inputs"),
    "runner:init_error": ("failed", "init_error", "bad config"),
    "runner:compile_error": ("failed", "compile_error", "n_undefined"),
    "runner:shape_mismatch": ("failed", "shape_mismatch", "expected shape (64,), got (32,)"),
    "unsupported_index": ("failed", "compile_error", "unsupported tensor index"),
    "constexpr_type": ("failed", "compile_error", "arange"),
    "dot_shape": ("failed", "compile_error", "dot"),
    "shared_memory": ("failed", "compile_error", "out of resource: shared memory"),
    "autotune_late_error": ("failed", "compile_error", "power of 2"),
    "autotune_first_too_big": ("passed", None, "shapes match"),
    "missing_constexpr": ("failed", "launch_error", "BLOCK"),
    "unknown_keyword": ("failed", "launch_error", "BLOCK_SIZE"),
    "autotune_conflict": ("failed", "launch_error", "Conflicting meta-parameters"),
    "python_error": ("failed", "runtime_error", "math"),
    "value_dependent": ("not_triaged", None, "item()"),
    "cuda_graph": ("not_triaged", None, "GPU"),
    "runner:correct_add": ("passed", None, "shapes match"),
    "runner:autotuned": ("passed", None, "shapes match"),
    "honest_cuda": ("passed", None, "(8, 8) float32"),
}


def program(name: str) -> str:
    if name.startswith("runner:"):
        return runner_program(name.removeprefix("runner:"))
    return whole_program(TRIAGE / f"{name}.py")


@pytest.fixture(scope="module")
def pool():
    with TriagePool(1, TriageSettings(timeout_s=60)) as p:
        yield p


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_each_program_gets_the_gpu_runners_error_type(pool, name):
    status, error_type, text = EXPECTED[name]
    result = pool.triage(program(name))
    said = f"{result.get('message')} {result.get('reason')}"
    assert (result["triage_status"], result["error_type"]) == (status, error_type), said
    assert text in said
    assert result["versions"]["torch"] and result["versions"]["triton"]
    if error_type in ("compile_error", "launch_error"):
        assert result["kernel"], "the failing kernel is named"


def test_a_module_error_names_the_module(pool):
    result = pool.triage(runner_program("import_error"))
    assert result["module"] and result["module"] in result["message"]


CACHED = runner_program("correct_add") + """

@triton.jit
def cache_probe_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=offs < n) * 3.0, mask=offs < n)


class ModelNew(nn.Module):
    def forward(self, a, b):
        out = torch.empty_like(a)
        cache_probe_kernel[(4,)](a, out, a.numel(), BLOCK=16)
        return out
"""


def test_a_second_program_with_the_same_kernel_hits_the_cache_with_the_same_verdict(pool):
    first = pool.triage(CACHED)
    second = pool.triage(CACHED + "\n\nNOTE = 'another program, the same kernel at the same line'\n")
    assert (first["triage_status"], second["triage_status"]) == ("passed", "passed"), second.get("message")
    assert first["cache"]["misses"] >= 1
    assert second["cache"] == {"hits": 1, "misses": 0, "from_disk": 1}  # compiled by the first program


TUNED = runner_program("correct_add") + """

@triton.autotune(configs=[triton.Config({"BM": 64, "BN": 64, "BK": 32}, num_warps=4, num_stages=2),
                          triton.Config({"BM": 256, "BN": 256, "BK": 128}, num_warps=4, num_stages=4)], key=["K"])
@triton.jit
def tuned_probe_kernel(a_ptr, b_ptr, c_ptr, K, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr):
    rm = tl.arange(0, BM)
    rn = tl.arange(0, BN)
    rk = tl.arange(0, BK)
    acc = tl.zeros((BM, BN), dtype=tl.float32)
    for k in range(0, K, BK):
        a = tl.load(a_ptr + rm[:, None] * K + (k + rk)[None, :])
        b = tl.load(b_ptr + (k + rk)[:, None] * BN + rn[None, :])
        acc += tl.dot(a, b)
    tl.store(c_ptr + rm[:, None] * BN + rn[None, :], acc)


class ModelNew(nn.Module):
    def forward(self, a, b):
        x = torch.empty(256, 1024, device=a.device, dtype=torch.float16)
        y = torch.empty(1024, 256, device=a.device, dtype=torch.float16)
        c = torch.empty(256, 256, device=a.device)
        LAUNCH
        return a + b
"""


def test_a_config_compiled_through_the_front_end_only_is_never_taken_for_a_whole_compile(pool):
    """The autotuner's first config fits, so its second (too big for sm_90's shared memory) compiles through the front
    end only; a later program launching that same kernel with the second config's parameters itself compiles it
    through the allocation and fails, as on a GPU."""
    tuned = pool.triage(TUNED.replace("LAUNCH", "tuned_probe_kernel[(1,)](x, y, c, 1024)"))
    assert tuned["triage_status"] == "passed", tuned.get("message")
    direct = pool.triage(TUNED.replace("LAUNCH", "tuned_probe_kernel.fn[(1,)](x, y, c, 1024, BM=256, BN=256, "
                                                 "BK=128, num_warps=4, num_stages=4)"))
    assert (direct["triage_status"], direct["error_type"]) == ("failed", "compile_error")
    assert "out of resource: shared memory" in direct["message"]


def test_a_program_that_hangs_or_kills_its_worker_is_answered_and_the_next_one_still_runs(tmp_path):
    with TriagePool(1, TriageSettings(timeout_s=20)) as pool:
        hang = runner_program("correct_add").replace("    def forward(self, a, b):\n",
                                                     "    def forward(self, a, b):\n        import time; time.sleep(60)\n", 1)
        assert hang != runner_program("correct_add")
        result = pool.triage(hang)
        assert (result["triage_status"], result["error_type"]) == ("not_triaged", None)
        assert "took over 20 s" in result["reason"]
        killer = runner_program("correct_add") + "\nimport os, signal\nos.kill(os.getppid(), signal.SIGKILL)\n"
        killed = pool.triage(killer)  # the worker dies where the child runs as its user; else the kill is refused
        assert "infrastructure" in killed["flags"] or "PermissionError" in killed["message"]
        assert pool.triage(runner_program("correct_add"))["triage_status"] == "passed"


def test_the_command_triages_files_writes_both_logs_and_resumes(tmp_path):
    files = []
    for name in ("runner:correct_add", "unsupported_index"):
        path = tmp_path / f"{name.replace(':', '_')}.py"
        path.write_text(program(name))
        files.append(str(path))
    out, runs = tmp_path / "out.jsonl", tmp_path / "runs"
    cmd = [sys.executable, "-m", "runner", "triage", *files, "--runs-dir", str(runs), "--out", str(out),
           "--workers", "1"]
    first = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
    assert first.returncode == 0, first.stderr
    lines = [json.loads(line) for line in out.read_text().splitlines()]
    assert sorted(r["triage_status"] for r in lines) == ["failed", "passed"]
    assert all(r["target"] == "sm_90" and r["id"] == r["program_sha256"] and r["triaged_at"] for r in lines)
    assert all(set(r["phases_cpu_s"]) <= {"import", "build", "compile", "compare"} and r["phases_cpu_s"]["compile"] > 0
               for r in lines)  # both reach the compile: the failure's CPU is its phase's
    logged = list((runs / "triage").glob("triage-*.jsonl"))
    assert len(logged) == 1 and len(logged[0].read_text().splitlines()) == 2
    again = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
    assert again.returncode == 0 and "0 triaged, 2 skipped" in again.stdout
    assert len(out.read_text().splitlines()) == 2
    out.unlink()  # the triage log alone still says what is done
    third = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
    assert third.returncode == 0 and "0 triaged, 2 skipped" in third.stdout


def test_an_unknown_target_is_refused_by_name():
    done = subprocess.run([sys.executable, "-m", "runner", "triage", "--target", "sm_12", str(Path(__file__))],
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 2 and "sm_90" in done.stderr


@pytest.mark.slow
def test_store_rows_on_a_ray_cluster_each_once_then_filtered_by_triage(tmp_path):
    from common.triage_log import read_triage
    from tests.test_bulk import GOOD, REPO, make_store

    store = make_store(tmp_path, [GOOD, program("unsupported_index"), program("runner:import_error")])
    runs = tmp_path / "runs"
    env = {k: v for k, v in os.environ.items() if not k.startswith("TLX_")} | {"RAY_TMPDIR": "/tmp"}
    done = subprocess.run([sys.executable, "-m", "runner", "triage", "--store", str(store), "--runs-dir", str(runs),
                           "--backend", "ray", "--ray-cpus", "2", "--workers", "1"],
                          cwd=REPO, env=env, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    results = {r.result["row_id"]: r.result for r in read_triage(runs)}
    assert sorted(results) == ["train/000000", "train/000001", "train/000002"]
    assert [results[f"train/00000{i}"]["error_type"] for i in range(3)] == [None, "compile_error", "import_error"]
    assert results["train/000000"]["triage_status"] == "passed"
    # the explorer's filters take the triage: bulk would re-run only the row triage passed
    from runner.rows import filtered_rows

    assert [r[0] for r in filtered_rows(store, settings_now(runs), triage_status="passed")] == ["train/000000"]


def test_what_a_program_leaves_running_is_killed_before_the_next_one(tmp_path):
    """A daemon a program starts (double fork, its own session) dies with the program's triage: it stops writing."""
    import time

    daemon = runner_program("correct_add") + (
        "\nimport os, time\nif os.fork() == 0:\n    os.setsid()\n    if os.fork() == 0:\n"
        "        while True:\n            open('/tmp/daemon-beat', 'a').write('.')\n            time.sleep(0.05)\n"
        "    os._exit(0)\n")
    with TriagePool(1, TriageSettings(timeout_s=60)) as pool:
        assert pool.triage(daemon)["triage_status"] == "passed"
        beat = pool._all[0].root / "tmp" / "daemon-beat"
        assert beat.exists()  # it ran
        size = beat.stat().st_size
        time.sleep(0.5)
        assert beat.stat().st_size == size  # and was killed


def test_a_worker_whose_warm_up_fails_says_why_instead_of_ready(tmp_path):
    code = ("import runner.triage.program as p\n"
            "def broken():\n    raise RuntimeError('the triage warm-up program did not pass: no meta kernel')\n"
            "p.warm_up = broken\nfrom runner.triage import worker\nraise SystemExit(worker.main([]))\n")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300, cwd=tmp_path,
                          env={**os.environ, "PYTHONPATH": str(HERE.parent),
                               "TRITON_CACHE_DIR": str(tmp_path / "cache")})
    assert done.returncode == 1
    assert json.loads(done.stdout.splitlines()[0]) == {
        "ready": False, "error": "the triage warm-up program did not pass: no meta kernel"}
