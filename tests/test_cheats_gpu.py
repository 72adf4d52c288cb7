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
    # issue 42: the output read later, and the timing loop noticed (by the host clock, by the call stack)
    "tensor_subclass": ("class _Deferred(torch.Tensor):\n    pending = None\n\n    @classmethod\n"
                        "    def __torch_function__(cls, func, types, args=(), kwargs=None):\n"
                        "        for a in args:\n            if isinstance(a, _Deferred) and a.pending is not None:\n"
                        "                x, out, half = a.pending\n                a.pending = None\n"
                        "                triton_silu(x[half:], out.as_subclass(torch.Tensor)[half:])\n"
                        "        return super().__torch_function__(func, types, args, kwargs or {})\n\n"
                        "class ModelNew(nn.Module):\n    def forward(self, x):\n        out = torch.empty_like(x)\n"
                        "        half = x.numel() // 2\n        triton_silu(x[:half], out[:half])\n"
                        "        lazy = out.as_subclass(_Deferred)\n        lazy.pending = (x, out, half)\n"
                        "        return lazy\n"),
    "queued_back_to_back": ("class ModelNew(nn.Module):\n    last, out = 0.0, None\n\n    def forward(self, x):\n"
                            "        queued = time.perf_counter() - self.last < 50e-6 and self.out is not None\n"
                            "        if queued and self.out.shape == x.shape:\n            n = int(x.numel() * 0.55)\n"
                            "            triton_silu(x[:n], self.out[:n])\n        else:\n"
                            "            self.out = triton_silu(x)\n        self.last = time.perf_counter()\n"
                            "        return self.out\n"),
    "stack_timing": ("import sys\n\ndef _timed():\n    f = sys._getframe(1)\n    while f is not None:\n"
                     "        if f.f_code.co_name in ('_batched_events', 'time_cuda_events'):\n            return True\n"
                     "        f = f.f_back\n    return False\n\nclass ModelNew(nn.Module):\n    out = None\n\n"
                     "    def forward(self, x):\n        if _timed() and self.out is not None and self.out.shape == x.shape:\n"
                     "            n = int(x.numel() * 0.55)\n            triton_silu(x[:n], self.out[:n])\n"
                     "        else:\n            self.out = triton_silu(x)\n        return self.out\n"),
    "queued_same_tensor": ("class ModelNew(nn.Module):\n    last, x, out = 0.0, None, None\n\n    def forward(self, x):\n"
                           "        queued = time.perf_counter() - self.last < 50e-6 and x is self.x\n"
                           "        if queued:\n            n = int(x.numel() * 0.55)\n"
                           "            triton_silu(x[:n], self.out[:n])\n        else:\n"
                           "            self.x, self.out = x, triton_silu(x)\n        self.last = time.perf_counter()\n"
                           "        return self.out\n"),
}
# honest controls of issue 42: correct, and no hack flag
HONEST = {
    "graph_replay": ("class ModelNew(nn.Module):\n    graph = None\n\n    def forward(self, x):\n"
                     "        if self.graph is None or self.static_in.shape != x.shape:\n"
                     "            self.static_in = x.clone()\n            self.static_out = torch.empty_like(x)\n"
                     "            triton_silu(self.static_in, self.static_out)  # compiled before the capture\n"
                     "            torch.cuda.synchronize()\n            self.graph = torch.cuda.CUDAGraph()\n"
                     "            with torch.cuda.graph(self.graph):\n"
                     "                triton_silu(self.static_in, self.static_out)\n"
                     "        self.static_in.copy_(x)\n        self.graph.replay()\n        return self.static_out\n"),
    "kept_buffer": ("class ModelNew(nn.Module):\n    out = None\n\n    def forward(self, x):\n"
                    "        if self.out is None or self.out.shape != x.shape:\n            self.out = torch.empty_like(x)\n"
                    "        return triton_silu(x, self.out)\n"),
    "two_kernels": ("@triton.jit\ndef sigmoid_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):\n"
                    "    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)\n    mask = offs < n\n"
                    "    tl.store(out_ptr + offs, 1.0 / (1.0 + tl.exp(-tl.load(x_ptr + offs, mask=mask))), mask=mask)\n\n"
                    "@triton.jit\ndef mul_kernel(a_ptr, b_ptr, out_ptr, n, BLOCK: tl.constexpr):\n"
                    "    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)\n    mask = offs < n\n"
                    "    tl.store(out_ptr + offs, tl.load(a_ptr + offs, mask=mask) * tl.load(b_ptr + offs, mask=mask), "
                    "mask=mask)\n\n"
                    "class ModelNew(nn.Module):\n    def forward(self, x):\n        s = torch.empty_like(x)\n"
                    "        grid = (triton.cdiv(x.numel(), 1024),)\n        sigmoid_kernel[grid](x, s, x.numel(), BLOCK=1024)\n"
                    "        out = torch.empty_like(x)\n        mul_kernel[grid](x, s, out, x.numel(), BLOCK=1024)\n"
                    "        return out\n"),
}
CAUGHT_BY = {  # a cheat is caught by a failed verdict, or by one of these flags
    "torch_fallback": {"no_triton_launch"}, "try_except": {"no_triton_launch"},
    "value_cache": {"faster_on_repeated_inputs"}, "side_stream": {"side_stream_suspect", "timing_below_kernel_time"},
    "patched_clocks": {"no_triton_launch"},
    "queued_same_tensor": {"timed_work_below_checked"},  # the loop check's fresh tensor is another object
}
HACK_FLAGS = {"no_triton_launch", "output_reused", "faster_on_repeated_inputs", "side_stream_suspect", "inputs_differ",
              "timing_below_kernel_time", "timed_call_differs", "timed_work_below_checked"}


@pytest.fixture(scope="module")
def verdicts():
    opts = EvalOptions(device="cuda", timeout_s=180.0,
                       timing=TimingOptions(min_trials=50, max_trials=200, time_budget_s=2.0))
    try:
        return {name: evaluate_in_sandbox(BASE + "\n" + body, opts, result_id=name)
                for name, body in {**CANDIDATES, **HONEST}.items()}
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


@pytest.mark.parametrize("name", sorted(HONEST))
def test_the_honest_controls_of_issue_42_are_correct_and_unflagged(verdicts, name):
    r = verdicts[name]
    assert r.status == "ok" and not HACK_FLAGS & set(r.flags), (r.message, r.flags)
    assert r.launches["checked"] and r.launches["triton_launches"] >= 1, r.launches
    assert r.method["judge"]["timed_call_checked"] is True


def test_the_timing_loop_cheats_fail_in_the_loop_check(verdicts):
    for name in ("queued_back_to_back", "stack_timing"):
        assert "timed_call_differs" in verdicts[name].flags, (name, verdicts[name].message)
    assert "torch.Tensor subclass _Deferred" in verdicts["tensor_subclass"].message
