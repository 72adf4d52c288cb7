"""Static hack checks (common/program/hack_checks.py, run by ingest's stage 2): one cheat program per pattern, each with
an honest control that must stay unflagged. Programs start from tests/program_base.py (a Model adding two vectors,
a correct Triton add `add_kernel` and its launcher `triton_add`)."""

from __future__ import annotations

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from common.checks import STATIC_FLAGS
from common.program.text_rules import text_cut
from queries.ingest import ingest
from queries.ingest.program_checks import check_program
from queries.store import Store
from tests.programs import BASE

HONEST = '''
class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, a, b):
        a = a.contiguous().view(-1)
        return triton_add(a, b.reshape(-1))
'''

CHEATS = {
    # issue 42: a patch of the comparison placed between get_init_inputs and the kernels (value: candidate, base)
    "reference_not_plain": ("", BASE.replace("\n\n@triton.jit", "\n\ntorch.isclose = lambda *a, **k: True\n\n\n"
                                             "@triton.jit", 1)),
    "tensor_subclass": '''
class Deferred(torch.Tensor):
    @classmethod
    def __torch_function__(cls, func, types, args=(), kwargs=None):
        return super().__torch_function__(func, types, args, kwargs or {})

class ModelNew(nn.Module):
    def forward(self, a, b):
        return triton_add(a, b).as_subclass(Deferred)
''',
    "clock_in_forward": '''
import time

class ModelNew(nn.Module):
    last = 0.0

    def forward(self, a, b):
        now = time.perf_counter()
        queued, self.last = now - self.last < 50e-6, now
        return triton_add(a, b) if not queued else triton_add(a, b)
''',
    "kernel_never_called": '''
import torch.nn.functional as F

class ModelNew(nn.Module):
    def forward(self, a, b):
        return torch.add(a, b)
''',
    "try_except_fallback": '''
class ModelNew(nn.Module):
    def forward(self, a, b):
        try:
            return triton_add(a, b)
        except Exception:
            return torch.add(a, b)
''',
    "torch_compute_in_forward": '''
class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()
        self.proj = nn.Linear(64, 64)

    def forward(self, a, b):
        return triton_add(self.proj(a), b)
''',
    "cuda_stream": '''
class ModelNew(nn.Module):
    def forward(self, a, b):
        side = torch.cuda.Stream()
        with torch.cuda.stream(side):
            out = triton_add(a, b)
        return out
''',
    "threads": '''
import threading

class ModelNew(nn.Module):
    def forward(self, a, b):
        out = torch.empty_like(a)
        threading.Thread(target=lambda: out.copy_(triton_add(a, b))).start()
        return out
''',
    "timing_patch": '''
import time
time.perf_counter = lambda: 0.0

class ModelNew(nn.Module):
    def forward(self, a, b):
        return triton_add(a, b)
''',
    "torch_patch": '''
torch.allclose = lambda *a, **k: True

class ModelNew(nn.Module):
    def forward(self, a, b):
        return triton_add(a, b)
''',
    "caller_frames": '''
import sys

class ModelNew(nn.Module):
    def forward(self, a, b):
        caller = sys._getframe(1)
        return triton_add(a, b)
''',
    "output_cache": '''
_outputs = {}

class ModelNew(nn.Module):
    def forward(self, a, b):
        key = tuple(a.shape)
        if key not in _outputs:
            _outputs[key] = triton_add(a, b)
        return _outputs[key]
''',
    "precision_downcast": '''
class ModelNew(nn.Module):
    def forward(self, a, b):
        return triton_add(a.half(), b.half()).float()
''',
}

# more cheats, each: (flag, candidate)
MORE_CHEATS = [
    ("clock_in_forward", "import traceback\n\ndef launch(a, b):\n"
                         "    if any(f.name == 'time_callable' for f in traceback.extract_stack()):\n"
                         "        return a\n    return triton_add(a, b)\n\nclass ModelNew(nn.Module):\n"
                         "    def forward(self, a, b):\n        return launch(a, b)\n"),
    ("clock_in_forward", "from time import perf_counter as clock\n\nclass ModelNew(nn.Module):\n"
                         "    def forward(self, a, b):\n        clock()\n        return triton_add(a, b)\n"),
    ("tensor_subclass", "class Out(torch.Tensor):\n    pass\n\nclass ModelNew(nn.Module):\n"
                        "    def forward(self, a, b):\n        return triton_add(a, b)\n"),
    ("kernel_never_called", "class ModelNew(Model):\n    pass\n"),  # inherits Model's forward
    ("kernel_never_called", "class ModelNew(nn.Module):\n    def forward(self, a, b):\n"
                            "        return torch.nn.functional.silu(a + b)\n"),
    ("torch_compute_in_forward", "class ModelNew(nn.Module):\n    def forward(self, a, b):\n"
                                 "        return triton_add(a @ b, b)\n"),
    ("torch_compute_in_forward", "def helper(a, b):\n    return F.relu(triton_add(a, b))\n\n"
                                 "class ModelNew(nn.Module):\n    def forward(self, a, b):\n"
                                 "        return helper(a, b)\n"),
    ("torch_compute_in_forward", "class ModelNew(nn.Module):\n    def forward(self, a, b):\n"
                                 "        return triton_add(a, b).sum(dim=0)\n"),
    ("try_except_fallback", "class ModelNew(nn.Module):\n    def forward(self, a, b):\n"
                            "        out = torch.zeros_like(a)\n        try:\n            out = triton_add(a, b)\n"
                            "        except RuntimeError:\n            pass\n        return out\n"),
    ("timing_patch", "import torch.cuda\ntorch.cuda.Event = object\n\nclass ModelNew(nn.Module):\n"
                     "    def forward(self, a, b):\n        return triton_add(a, b)\n"),
    ("timing_patch", "setattr(torch.cuda, 'synchronize', lambda: None)\n\nclass ModelNew(nn.Module):\n"
                     "    def forward(self, a, b):\n        return triton_add(a, b)\n"),
    ("timing_patch", "import triton.testing\ntriton.testing.do_bench = lambda fn, **kw: 0.001\n\n"
                     "class ModelNew(nn.Module):\n    def forward(self, a, b):\n        return triton_add(a, b)\n"),
    ("threads", "from concurrent.futures import ThreadPoolExecutor\n\nclass ModelNew(nn.Module):\n"
                "    def forward(self, a, b):\n        return ThreadPoolExecutor(1).submit(triton_add, a, b).result()\n"),
    ("precision_downcast", "class ModelNew(nn.Module):\n    def forward(self, a, b):\n"
                           "        out = torch.empty(a.shape, device=a.device, dtype=torch.bfloat16)\n"
                           "        return triton_add(a, b)\n"),
]

# honest controls that look like a cheat to a cruder rule
CONTROLS = {
    "a clock read in __init__, not in forward": '''
import time

class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()
        self.built_at = time.time()

    def forward(self, a, b):
        return triton_add(a, b)
''',
    "backend flags and a module-level config cache": '''
torch.backends.cuda.matmul.allow_tf32 = True
_blocks = {}

class ModelNew(nn.Module):
    def forward(self, a, b):
        n = a.numel()
        if n not in _blocks:
            _blocks[n] = 32
        out = torch.empty_like(a)
        add_kernel[(triton.cdiv(n, _blocks[n]),)](a, b, out, n, BLOCK=_blocks[n])
        return out
''',
    "an output buffer allocated on the first call and filled every call": '''
class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()
        self.out = None

    def forward(self, a, b):
        if self.out is None:
            self.out = torch.empty_like(a)
        add_kernel[(triton.cdiv(a.numel(), 32),)](a, b, self.out, a.numel(), BLOCK=32)
        return self.out
''',
    "a cache of launchers, called": '''
_launchers = {"add": triton_add}

class ModelNew(nn.Module):
    def forward(self, a, b):
        return _launchers["add"](a, b)
''',
    "kernel through a method and a helper": '''
class ModelNew(nn.Module):
    def _launch(self, a, b):
        return triton_add(a, b)

    def forward(self, a, b):
        return self._launch(a, b)
''',
    "kernel through submodules built from a local list": '''
class Block(nn.Module):
    def forward(self, a, b):
        return triton_add(a, b)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()
        blocks = [Block() for _ in range(2)]
        self.blocks = nn.ModuleList(blocks)

    def forward(self, a, b):
        return self.blocks[0](a, b)
''',
    "a layer kept for its weights only": '''
class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()
        self.proj = nn.Linear(64, 64)

    def forward(self, a, b):
        return triton_add(a, self.proj.bias)
''',
    "hand-written autotuning loop (except: continue)": '''
class ModelNew(nn.Module):
    def forward(self, a, b):
        out = torch.empty_like(a)
        for block in (64, 32):
            try:
                add_kernel[(triton.cdiv(a.numel(), block),)](a, b, out, a.numel(), BLOCK=block)
                break
            except Exception:
                continue
        return out
''',
    "guarded import (try without a kernel)": '''
try:
    import numpy as np
except ImportError:
    np = None

class ModelNew(nn.Module):
    def forward(self, a, b):
        return triton_add(a, b)
''',
    "dtype only compared and mapped": '''
def to_tl(dtype):
    if dtype == torch.float16:
        return tl.float16
    return tl.float32

class ModelNew(nn.Module):
    def forward(self, a, b):
        assert a.dtype in (torch.float16, torch.float32)
        return triton_add(a, b)
''',
    "current stream read for the launch": '''
class ModelNew(nn.Module):
    def forward(self, a, b):
        torch.cuda.current_stream()
        return triton_add(a, b)
''',
    "events created, not patched": '''
class ModelNew(nn.Module):
    def forward(self, a, b):
        start = torch.cuda.Event(enable_timing=True)
        return triton_add(a, b)
''',
    "allocation and math on sizes": '''
import math

class ModelNew(nn.Module):
    def forward(self, a, b):
        n = math.prod(a.shape)
        out = torch.empty(n, device=a.device, dtype=a.dtype)
        add_kernel[(triton.cdiv(n, 32),)](a, b, out, n, BLOCK=max(32, 16))
        return out.view_as(a)
''',
}


def flags_of(candidate: str, base: str = BASE) -> list[str]:
    x = base + candidate
    return check_program(x, text_cut(x))


def test_the_runners_cheat_programs_are_flagged_statically_too():
    # tests/cheat_programs/ and tests/hostile_programs/ (the runner's, caught at run time): read here, not edited
    from tests.programs import HERE, whole_program

    flagged = {}
    for path in sorted([*(HERE / "cheat_programs").glob("*.py"), *(HERE / "hostile_programs").glob("*.py")]):
        x = whole_program(path)
        flagged[path.stem] = check_program(x, text_cut(x))
    assert flagged.pop("honest_with_views") == []
    expected = {"caller_frames": "caller_frames", "calls_reference": "kernel_never_called",
                "global_inputs": "output_cache", "patch_compare": "torch_patch", "pointer_cache": "output_cache",
                "torch_fallback": "kernel_never_called", "try_except_fallback": "try_except_fallback",
                "value_cache": "output_cache", "cached_output": "output_cache", "patch_timing": "timing_patch",
                "fork_bomb": "threads", "tensor_subclass_output": "tensor_subclass",
                "patch_between": "reference_not_plain", "model_new_first": "reference_not_plain",
                "late_inputs_decorated": "reference_not_plain"}
    assert flagged.pop("honest_transposed_reference") == []
    assert {name: flag for name, flag in expected.items() if flag in flagged[name]} == expected


def test_the_honest_candidate_has_no_flag():
    assert flags_of(HONEST) == []


@pytest.mark.parametrize("flag", STATIC_FLAGS)
def test_each_flag_has_a_cheat_that_raises_it(flag):
    cheat = CHEATS[flag]
    assert flag in (flags_of(*cheat) if isinstance(cheat, tuple) else flags_of(cheat))


@pytest.mark.parametrize(("flag", "candidate"), MORE_CHEATS)
def test_more_cheats(flag, candidate):
    assert flag in flags_of(candidate)


@pytest.mark.parametrize("name", sorted(CONTROLS))
def test_honest_controls_stay_unflagged(name):
    assert flags_of(CONTROLS[name]) == [], name


def test_a_half_precision_reference_makes_fp16_no_downcast():
    base = BASE.replace("torch.randn(64), torch.randn(64)", "torch.randn(64).half(), torch.randn(64).half()")
    assert flags_of(CHEATS["precision_downcast"], base) == []


def test_the_reference_part_never_counts():
    # Model itself computes with torch (a + b, and here F.relu): only the candidate is read
    base = BASE.replace("return a + b", "return torch.nn.functional.relu(torch.matmul(a, b))")
    assert flags_of(HONEST, base) == []


def test_a_program_that_does_not_compile_is_not_checked():
    assert flags_of(HONEST + "\n    return )\n") is None


def test_ingest_stores_flags_per_row_and_null_for_syntax_errors(tmp_path):
    programs = [BASE + HONEST, BASE + CHEATS["kernel_never_called"], BASE + CHEATS["cuda_stream"] + "\nx = (\n"]
    programs.append(BASE + CHEATS["threads"] + CHEATS["timing_patch"])
    pq.write_table(pa.table({"x": programs, "y": pa.array([1.0, 0.5, None, 0.2])}), tmp_path / "train.parquet")
    store = tmp_path / "store"
    ingest([str(tmp_path / "train.parquet")], store, progress=False, workers=1)
    index = Store(store).read_index(["id", "static_error", "static_flags"]).to_pylist()
    assert [r["static_flags"] for r in index] == [[], ["torch_compute_in_forward", "kernel_never_called"], None,
                                                  ["threads", "timing_patch"]]
    assert index[2]["static_error"] == "syntax_error"
    counts = Store(store).meta.syntax_check["static_flags"]
    assert counts == {"kernel_never_called": 1, "torch_compute_in_forward": 1, "threads": 1, "timing_patch": 1}


def test_stage_one_alone_leaves_flags_not_checked(tmp_path):
    pq.write_table(pa.table({"x": [BASE + CHEATS["threads"]], "y": pa.array([1.0])}), tmp_path / "train.parquet")
    store = tmp_path / "store"
    ingest([str(tmp_path / "train.parquet")], store, progress=False, workers=1, syntax_check=False)
    assert Store(store).read_index(["static_flags"]).to_pylist() == [{"static_flags": None}]


def test_check_syntax_adds_the_column_to_a_store_built_before_it(tmp_path):
    from queries.ingest.program_checks import check_syntax

    pq.write_table(pa.table({"x": [BASE + CHEATS["cuda_stream"]], "y": pa.array([1.0])}), tmp_path / "train.parquet")
    store = tmp_path / "store"
    ingest([str(tmp_path / "train.parquet")], store, progress=False, workers=1, syntax_check=False)
    index = pq.read_table(store / "index.parquet")
    pq.write_table(index.drop_columns(["static_flags"]), store / "index.parquet")
    assert Store(store).read_index(["id", "static_flags"]).to_pylist() == [{"id": "train/000000", "static_flags": None}]
    assert check_syntax(store, workers=1, progress=False)["static_flags"] == {"cuda_stream": 1}
    assert Store(store).read_index(["static_flags"]).to_pylist() == [{"static_flags": ["cuda_stream"]}]


def test_the_whole_program_path_reads_only_the_candidates_statements():
    # "__future__" in the candidate makes stage 2 compile the whole text and split it by the reference's lines
    note = "# a candidate that mentions __future__\n"
    assert flags_of(note + HONEST) == []
    assert flags_of(note + CHEATS["kernel_never_called"]) == ["torch_compute_in_forward", "kernel_never_called"]
