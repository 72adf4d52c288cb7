"""The issue-21 set on a real GPU (marker `gpu`): a KernelBench-style SiLU over 64M floats, one honest candidate
and the known cheat patterns, each written for this project. Every cheat must be caught (a failed verdict or a
flag the honest leaderboard excludes) and the honest one must carry no such flag, with Triton's share of GPU
time recorded."""

from __future__ import annotations

import pytest
import torch

from runner.options import EvalOptions, TimingOptions
from runner.sandbox.run import close_spares, evaluate_in_sandbox

pytestmark = [pytest.mark.gpu, pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")]

BASE = '''
import threading
import time

import torch
import torch.nn as nn
import triton
import triton.language as tl
import triton.testing


class Model(nn.Module):
    def forward(self, x):
        return torch.nn.functional.silu(x)


N = 64 * 1024 * 1024


def get_inputs():
    return [torch.randn(N)]


def get_init_inputs():
    return []


@triton.jit
def silu_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask)
    tl.store(out_ptr + offs, x / (1.0 + tl.exp(-x)), mask=mask)


def triton_silu(x, out=None):
    out = torch.empty_like(x) if out is None else out
    silu_kernel[(triton.cdiv(x.numel(), 1024),)](x, out, x.numel(), BLOCK=1024)
    return out
'''

CANDIDATES = {
    "honest": "class ModelNew(nn.Module):\n    def forward(self, x):\n        return triton_silu(x)\n",
    "torch_fallback": "class ModelNew(nn.Module):\n    def forward(self, x):\n        return torch.nn.functional.silu(x)\n",
    "try_except": ("class ModelNew(nn.Module):\n    def forward(self, x):\n        try:\n"
                   "            silu_kernel[(1,)](x, x, BLOCK=1024)\n        except Exception:\n"
                   "            return torch.nn.functional.silu(x)\n"),
    "value_cache": ("_c = {}\nclass ModelNew(nn.Module):\n    def forward(self, x):\n"
                    "        k = (tuple(x.shape), float(x[0]), float(x[-1]))\n"
                    "        if k not in _c:\n            _c[k] = triton_silu(x)\n        return _c[k]\n"),
    "pointer_cache": ("_c = {}\nclass ModelNew(nn.Module):\n    def forward(self, x):\n"
                      "        if x.data_ptr() not in _c:\n            _c[x.data_ptr()] = triton_silu(x)\n"
                      "        return _c[x.data_ptr()]\n"),
    "side_stream": ("class ModelNew(nn.Module):\n    def forward(self, x):\n        s = torch.cuda.Stream()\n"
                    "        s.wait_stream(torch.cuda.current_stream())\n        with torch.cuda.stream(s):\n"
                    "            out = triton_silu(x)\n        return out\n"),
    "late_thread": ("class ModelNew(nn.Module):\n    def forward(self, x):\n        out = torch.zeros_like(x)\n"
                    "        def fill():\n            time.sleep(0.05)\n            triton_silu(x, out)\n"
                    "        threading.Thread(target=fill).start()\n        return out\n"),
    "stale_memory": ("class ModelNew(nn.Module):\n    def forward(self, x):\n        out = torch.empty_like(x)\n"
                     "        silu_kernel[(1,)](x, out, 1024, BLOCK=1024)\n        return out\n"),
    "patched_clocks": ("torch.cuda.Event.elapsed_time = lambda self, other: 1e-4\n"
                       "triton.testing.do_bench = lambda *a, **k: 1e-4\ntime.perf_counter = lambda: 0.0\n"
                       "class ModelNew(nn.Module):\n    def forward(self, x):\n        return torch.nn.functional.silu(x)\n"),
    "patched_compare": ("torch.allclose = lambda *a, **k: True\ntorch.isclose = lambda a, b, **k: torch.ones_like(a, dtype=torch.bool)\n"
                        "torch.Tensor.__sub__ = lambda a, b: torch.zeros_like(a)\n"
                        "class ModelNew(nn.Module):\n    def forward(self, x):\n        return torch.full_like(x, 42.0)\n"),
}
CAUGHT_BY = {  # a cheat is caught by a failed verdict, or by one of these flags
    "torch_fallback": {"no_triton_launch"}, "try_except": {"no_triton_launch"},
    "value_cache": {"faster_on_repeated_inputs"}, "side_stream": {"side_stream_suspect", "timing_below_kernel_time"},
    "patched_clocks": {"no_triton_launch"},
}
HACK_FLAGS = {"no_triton_launch", "output_reused", "faster_on_repeated_inputs", "side_stream_suspect", "inputs_differ",
              "timing_below_kernel_time"}


@pytest.fixture(scope="module")
def verdicts():
    opts = EvalOptions(device="cuda", timeout_s=180.0,
                       timing=TimingOptions(min_trials=50, max_trials=200, time_budget_s=2.0))
    try:
        return {name: evaluate_in_sandbox(BASE + "\n" + body, opts, result_id=name) for name, body in CANDIDATES.items()}
    finally:
        close_spares()


def test_the_honest_candidate_is_correct_and_unflagged(verdicts):
    r = verdicts["honest"]
    assert r.status == "ok" and not HACK_FLAGS & set(r.flags), (r.message, r.flags)
    assert r.launches["checked"] and r.launches["triton_launches"] >= 1 and r.launches["triton_share"] > 0.9, r.launches
    assert r.launches["top_kernels"][0]["name"].startswith("silu_kernel")
    assert r.timing.fresh_median_ms is not None


@pytest.mark.parametrize("name", [n for n in CANDIDATES if n != "honest"])
def test_each_cheat_is_caught(verdicts, name):
    r = verdicts[name]
    caught = r.status == "failed" or bool(CAUGHT_BY.get(name, set()) & set(r.flags))
    assert caught, (name, r.status, r.error_type, r.message, r.flags)
