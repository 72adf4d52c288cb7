"""`runner.child.autotune` with Triton's real autotuner, through the interpreter in a fresh process (TRITON_INTERPRET
must be set before kernels are decorated): in a compile pass every config compiles and runs once and nothing is
benchmarked; after it the autotuner's choice is forgotten; outside a pass the real benchmark runs."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

ADD_ONE = r'''@triton.jit
def add_one(x_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(x_ptr + offs, tl.load(x_ptr + offs, mask=mask) + 1, mask=mask)
'''

SCRIPT = r'''
import json, os
os.environ["TRITON_INTERPRET"] = "1"
import torch, triton, triton.language as tl
from triton.runtime.autotuner import Autotuner
from runner.child import autotune

autotune.install()
ran = []

def hook(name):
    return lambda nargs: ran.append(name)

@triton.autotune(configs=[triton.Config({"BLOCK": 16}, pre_hook=hook("16")),
                          triton.Config({"BLOCK": 32}, pre_hook=hook("32"))], key=["n"])
''' + ADD_ONE + r'''
benchmarked = []
x = torch.zeros(64)
with autotune.compile_pass() as tuners:
    add_one[lambda m: (triton.cdiv(64, m["BLOCK"]),)](x, 64)
    cached_inside = len(add_one.cache)
out = {"ran": ran[:], "tuners": len(tuners), "cached_inside": cached_inside, "cached_after": len(add_one.cache),
       "x": x[:2].tolist(), "do_bench_left": "do_bench" in add_one.__dict__ and add_one.__dict__["do_bench"] is not None}
add_one.do_bench = lambda kernel_call, quantiles=None: (benchmarked.append(1), [5.0, 5.0, 5.0])[1]
ran.clear()
add_one[lambda m: (triton.cdiv(64, m["BLOCK"]),)](x, 64)  # outside a pass: the (stand-in) benchmark runs
out["benchmarked_outside"], out["ran_outside"] = len(benchmarked), ran
print(json.dumps(out))
'''


def test_compile_pass_compiles_each_config_once_and_forgets_the_choice():
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    proc = subprocess.run([sys.executable, "-c", SCRIPT], capture_output=True, text=True, timeout=240, env=env,
                          cwd=ROOT)
    assert proc.returncode == 0, proc.stderr[-3000:]
    out = json.loads(proc.stdout.strip().splitlines()[-1])
    assert out["ran"][:2] == ["16", "32"], out  # each config ran once in the pass (then the chosen one)
    assert out["tuners"] == 1 and out["cached_inside"] == 1 and out["cached_after"] == 0
    assert out["x"] == [len(out["ran"])] * 2  # every call of the pass really ran the kernel
    assert not out["do_bench_left"]  # the autotuner's own benchmark is back
    # outside a pass the autotuner benchmarked both configs (with the stand-in, which runs nothing) and ran its pick
    assert out["benchmarked_outside"] == 2 and out["ran_outside"] == ["16"]


BRIEF_SCRIPT = r'''
import json, os
os.environ["TRITON_INTERPRET"] = "1"
import torch, triton, triton.language as tl
from runner.child import autotune

autotune.install(5.0, 25.0)
installed = dict(autotune._brief_bench.keywords)
lengths = []

def recording_brief(kernel_call, quantiles=None, **_):  # brief_do_bench needs a GPU: this records its use
    lengths.append(1)
    kernel_call()
    return [1.0, 1.0, 1.0]

autotune._brief_bench = recording_brief
own = []
CONFIGS = [triton.Config({"BLOCK": 16}), triton.Config({"BLOCK": 32})]

def kernel(x_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(x_ptr + offs, tl.load(x_ptr + offs, mask=offs < n) + 1, mask=offs < n)

left_to_triton = triton.autotune(configs=CONFIGS, key=["n"])(triton.jit(kernel))
authors_bench = triton.autotune(configs=CONFIGS, key=["n"],
                                do_bench=lambda call, quantiles: (own.append(1), call(), [2.0] * 3)[2])(triton.jit(kernel))
x = torch.zeros(64)
for tuned in (left_to_triton, authors_bench):
    tuned[lambda m: (triton.cdiv(64, m["BLOCK"]),)](x, 64)
print(json.dumps({"installed": installed, "brief": len(lengths), "own": len(own),
                  "left": "do_bench" in left_to_triton.__dict__}))
'''


def test_autotuners_left_to_triton_are_benchmarked_briefly_and_authors_benchmarks_kept():
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    proc = subprocess.run([sys.executable, "-c", BRIEF_SCRIPT], capture_output=True, text=True, timeout=240,
                          env=env, cwd=ROOT)
    assert proc.returncode == 0, proc.stderr[-3000:]
    out = json.loads(proc.stdout.strip().splitlines()[-1])
    assert out["installed"] == {"warmup_ms": 5.0, "rep_ms": 25.0}
    assert out["brief"] == 2  # both configs of the default-benchmark autotuner
    assert out["own"] == 2  # the author's own benchmark ran for each config, not the brief one
    assert not out["left"]  # the substitute is gone after tuning


PRECOMPILE_SCRIPT = r'''
import contextlib, json, os, threading
os.environ["TRITON_INTERPRET"] = "1"
import torch, triton, triton.language as tl
from runner.child import autotune
from runner.gpu import gate

autotune.install(compile_threads=int(os.environ["THREADS"]))
pauses = []

class RecordingGate(gate.ChildGate):
    @contextlib.contextmanager
    def paused(self):
        pauses.append(threading.current_thread().name)
        yield

gate.install(RecordingGate(None, None))

@triton.autotune(configs=[triton.Config({"BLOCK": b}) for b in (8, 16, 32)], key=["n"],
                 prune_configs_by={"early_config_prune": lambda configs, nargs, **kw: configs[1:]})
''' + ADD_ONE + r'''
calls = []
real_run = add_one.fn.run

def recording_run(*args, **kwargs):
    calls.append({"BLOCK": kwargs.get("BLOCK"), "warmup": kwargs["warmup"], "thread": threading.current_thread().name,
                  "x_is_the_callers": kwargs.get("x_ptr") is x or (args and args[0] is x), "n": kwargs.get("n", 64)})
    if kwargs["warmup"] and kwargs.get("BLOCK") == 16:
        raise RuntimeError("this config fails to compile")  # left to the benchmark
    return real_run(*args, **kwargs)

add_one.fn.run = recording_run
x = torch.zeros(64)
grid = lambda m: (triton.cdiv(64, m["BLOCK"]),)
with autotune.compile_pass():
    add_one[grid](x, 64)
inside = calls[:]
calls.clear()
add_one.do_bench = lambda kernel_call, quantiles=None: (kernel_call(), [1.0] * 3)[1]  # the real one needs a GPU
add_one[grid](x, 64)  # outside a pass: nothing is precompiled
print(json.dumps({"inside": inside, "outside": calls, "pauses": pauses, "x": x[:2].tolist()}))
'''


def _precompile_run(threads: int) -> dict:
    env = {**os.environ, "PYTHONPATH": str(ROOT), "THREADS": str(threads)}
    proc = subprocess.run([sys.executable, "-c", PRECOMPILE_SCRIPT], capture_output=True, text=True, timeout=240,
                          env=env, cwd=ROOT)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return json.loads(proc.stdout.strip().splitlines()[-1])


def test_the_compile_pass_compiles_the_kept_configs_side_by_side_first_with_the_gate_given_back_once():
    out = _precompile_run(threads=4)
    warm = [c for c in out["inside"] if c["warmup"]]
    # the configs pruning kept (16 and 32, not 8), compiled without launching, on the compile threads, with the
    # call's own arguments
    assert sorted(c["BLOCK"] for c in warm) == [16, 32], out
    assert all(c["thread"].startswith("tlx-compile") and c["x_is_the_callers"] and c["n"] == 64 for c in warm)
    assert [c["warmup"] for c in out["inside"][:2]] == [True, True]  # both compiled before any launch
    launched = [c["BLOCK"] for c in out["inside"] if not c["warmup"]]
    assert launched[:2] == [16, 32]  # then each kept config ran once (the failed compile was retried by the pass)
    assert out["pauses"] == ["MainThread"]  # the gate given back once, for all the configs
    assert not [c for c in out["outside"] if c["warmup"]]  # outside a pass nothing is precompiled
    assert out["x"] == [len(launched) + len(out["outside"])] * 2


def test_one_compile_thread_leaves_the_compile_pass_as_triton_runs_it():
    out = _precompile_run(threads=1)
    assert not [c for c in out["inside"] if c["warmup"]] and out["pauses"] == []
