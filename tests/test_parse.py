"""parse_program: splitting, kernels, titles, static errors and fingerprints on tricky programs."""

from __future__ import annotations

import re
import time
from pathlib import Path

import pytest

from common.program.parse import parse_program
from tests.fixtures import program

REF = '''import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.conv = nn.Conv2d(3, 8, 3)

    def forward(self, x):
        y = self.conv(x)
        return torch.relu(y) + torch.sigmoid(y)


def get_inputs():
    return [torch.randn(2, 3, 8, 8)]


def get_init_inputs():
    return [3]
'''


def test_split_at_candidate_imports_keeps_reference_prefix():
    x = program("relu")
    p = parse_program(x)
    assert p.mode == "ast" and p.static_error == "ok_static"
    assert p.reference + p.candidate == x
    assert "class Model(" in p.reference and "get_init_inputs" in p.reference and "triton" not in p.reference
    assert p.candidate.lstrip().startswith("import torch\nimport triton")
    assert [k.name for k in p.kernels] == ["k"] and not p.kernels[0].autotuned
    assert p.kernels[0].source.startswith("@triton.jit\ndef k(") and "tl.store" in p.kernels[0].source
    assert x.splitlines()[p.kernels[0].lineno - 1] == "@triton.jit"
    assert p.title == "ReLU activation. · 64×64"  # docstring + input shapes


def test_no_delimiter_helpers_used_only_by_candidate_move_with_it():
    x = REF + '''
BLOCK = 128


def cdiv(a, b):
    return (a + b - 1) // b


from triton import jit, autotune, Config
import triton.language as tl


@autotune(configs=[Config({"B": 64})], key=["n"])
@jit
def fused(x_ptr, n, B: tl.constexpr):
    pass


class ModelNew(nn.Module):
    def forward(self, x):
        fused[(cdiv(x.numel(), BLOCK),)](x, x.numel())
        return x
'''
    p = parse_program(x)
    assert p.candidate.lstrip().startswith("BLOCK = 128")
    assert p.reference.rstrip().endswith("return [3]")
    assert [(k.name, k.autotuned) for k in p.kernels] == [("fused", True)]
    assert p.title == "Conv2d → relu → sigmoid · 2×3×8×8 · init(3)"  # no docstring: ops called in forward, inputs
    assert p.static_error == "ok_static"


def test_two_model_classes_and_triton_imported_first():
    x = "import triton\nimport triton.language as tl\n" + REF + '''

class Model(nn.Module):
    """A copy inside the candidate."""


@triton.jit(do_not_specialize=["n"])
def outer(n):
    @triton.jit
    def inner(n):
        pass
    pass


class ModelNew(Model):
    pass
'''
    p = parse_program(x)
    assert p.reference.startswith("import triton") and p.reference.count("class Model(") == 1
    assert p.candidate.count("class Model(") == 1
    assert [k.name for k in p.kernels] == ["outer", "inner"]
    assert p.title == "Conv2d → relu → sigmoid · 2×3×8×8 · init(3)"


@pytest.mark.parametrize(
    ("variant", "error"),
    [("syntax", "syntax_error"), ("no_new", "no_model_new"), ("no_kernel", "no_triton_kernel")],
)
def test_static_errors(variant, error):
    assert parse_program(program("relu", variant=variant)).static_error == error


def test_no_reference_and_no_get_inputs():
    cand = "import triton\n\n@triton.jit\ndef k(p):\n    pass\n\nclass ModelNew:\n    pass\n"
    assert parse_program(cand).static_error == "no_reference"
    no_inputs = REF.replace("def get_inputs", "def make_inputs") + cand
    assert parse_program(no_inputs).static_error == "no_get_inputs"


def test_syntax_error_falls_back_to_text_split():
    x = program("matmul", kernel="mm", variant="syntax")
    p = parse_program(x)
    assert p.mode == "text" and p.static_error == "syntax_error"
    assert p.reference + p.candidate == x
    assert "import triton" not in p.reference and p.candidate.lstrip().startswith("import torch\nimport triton")
    assert [k.name for k in p.kernels] == ["mm"] and p.kernels[0].source.rstrip().endswith("mask=mask)")
    assert p.title == "Square matrix multiplication (C = A * A). · 32×32"
    # same problem as the rows that parse
    assert p.problem_key == parse_program(program("matmul")).problem_key


def test_garbage_does_not_raise():
    for x in ["", "\x00\x01", "def (:", "class ModelNew(\n" * 50, "(" * 5000]:
        p = parse_program(x)
        assert p.static_error in {"syntax_error", "no_model_new"}
        assert len(p.problem_key) == 16 and len(p.candidate_key) == 16


def test_problem_key_stable_under_formatting_and_comments():
    base = parse_program(program("relu"))
    reformatted = program("relu").replace("return [torch.randn(N, N)]", "return [ torch.randn( N,N ) ]  # inputs")
    reformatted = reformatted.replace('"""Simple model that performs a ReLU activation."""', '"""Other words."""')
    other = parse_program(reformatted)
    assert other.problem_key == base.problem_key
    assert parse_program(program("relu", block=4096)).problem_key == base.problem_key
    assert parse_program(program("relu", variant="comment")).candidate_key == parse_program(program("relu")).candidate_key


def test_docstrings_do_not_count_and_long_titles_are_shortened():
    x = program("relu")
    without = x.replace('    """Simple model that performs a ReLU activation."""\n', "")
    assert "Simple model" not in without
    assert parse_program(without).problem_key == parse_program(x).problem_key
    assert parse_program(without).title == "relu · 64×64"  # no docstring: the ops in forward
    long_doc = parse_program(x.replace("Simple model that performs", "Fuses " + "many words " * 20 + "into"))
    assert len(long_doc.title) <= 100 and long_doc.title.endswith(" many… · 64×64")  # cut at a word boundary
    documented = x.replace("    pid = tl.program_id(0)", '    """Doc."""\n    pid = tl.program_id(0)')
    assert parse_program(documented).candidate_key == parse_program(x).candidate_key


def test_fingerprints_differ_between_problems_and_candidates():
    keys = {parse_program(program(name)).problem_key for name in ("relu", "matmul", "softmax", "gelu")}
    assert len(keys) == 4
    assert parse_program(program("relu", block=512)).candidate_key != parse_program(program("relu")).candidate_key


def test_large_program_parses_quickly():
    filler = "".join(f"\n\n@triton.jit\ndef k{i}(p, n):\n    x = {i} + n\n    return x * 2\n" for i in range(6000))
    x = program("softmax") + filler
    assert len(x) > 300_000
    started = time.perf_counter()
    p = parse_program(x)
    assert time.perf_counter() - started < 5
    assert p.static_error == "ok_static" and len(p.kernels) == 6001


def test_candidate_header_comments_stay_with_the_candidate():
    """A candidate that opens with comments and blank lines (`# Speedup: 1.05x`) keeps them on its side."""
    candidate = ("# Speedup: 1.05x\n# Optimized Triton code for ReLU\n\nimport triton\nimport triton.language as tl\n\n"
                 "@triton.jit\ndef k(x_ptr):\n    pass\n\n\nclass ModelNew(nn.Module):\n    pass\n")
    x = REF + "\n\n" + candidate
    p = parse_program(x)
    assert p.reference + p.candidate == x
    assert p.candidate == candidate and p.reference.endswith("return [3]\n\n\n")
    assert p.problem_key == parse_program(REF + candidate.replace("# Speedup: 1.05x\n", "")).problem_key


def test_known_kernelbench_problems_are_named_by_level_and_name(monkeypatch):
    from common.program import parse

    key = parse_program(program("relu")).problem_key
    monkeypatch.setattr(parse, "kernelbench_names", lambda: {key: "L1 19_ReLU"})
    monkeypatch.setattr(parse, "_problem_keys", {})
    assert parse_program(program("relu")).title == "L1 19_ReLU"
    assert parse_program(program("matmul")).title.startswith("Square matrix multiplication")


def test_kernelbench_names_table_is_keyed_by_problem_key():
    from common.program.parse import kernelbench_names

    names = kernelbench_names()
    assert len(names) >= 200 and all(len(k) == 16 and int(k, 16) >= 0 for k in names)
    assert all(re.fullmatch(r"L[123] \d+_\w+", name) for name in names.values())
    assert len(set(names.values())) == len(names)  # one name per key


def test_input_shapes_are_read_without_running_the_program():
    import ast

    from common.program.shapes import input_shapes

    source = """
batch_size = 16
dim = 2 * 1024
input_shape = (3, 64, 64)
M, K = 128, 256
def get_inputs():
    x = torch.randn(batch_size, *input_shape).cuda()
    A = torch.rand((M, K))
    idx = torch.randint(0, 10, (batch_size,))
    return [x, A, idx, torch.randn(dim), 0.5, open("/etc/passwd").read()]
"""
    assert input_shapes(ast.parse(source).body) == ["16×3×64×64", "128×256", "16", "2048", "0.5", "?"]
    assert input_shapes(ast.parse("x = 10 ** 10 ** 10\ndef get_inputs():\n    return [torch.randn(x)]").body) == ["?"]


REALWORLD = Path(__file__).resolve().parent.parent.parent / "shared" / "data" / "realworld"


@pytest.mark.skipif(not (REALWORLD / "train.parquet").exists(), reason="the real-world dev corpus is not here")
def test_real_problems_get_researchers_names(monkeypatch):
    """On the 1,700 real rows (247 KernelBench problems): every problem named `L<level> <n>_<Name>`, as the
    corpus's origin names it; without the names table, no title is a bare list of identifiers and the input
    shapes are read for nearly every problem."""
    import json

    import pyarrow.parquet as pq

    from common.program import parse
    from common.program.text_rules import text_cut

    origin = json.loads((REALWORLD / "origin.json").read_text())
    rows = [(x, path) for split in ("train", "test") for x, path in
            zip(pq.read_table(REALWORLD / f"{split}.parquet").column("x").to_pylist(), origin[split], strict=True)]
    names, fallback = {}, {}
    for x, path in rows:  # the reference fields as ingest computes them
        _, key, title = parse.reference_fields(x[: text_cut(x)])
        level, name = path.split("/")[1:3]
        names.setdefault(key, set()).add((title, f"L{level.removeprefix('level')} {name}"))
    assert len(names) == 247
    assert all(len(pairs) == 1 and next(iter(pairs))[0] == next(iter(pairs))[1] for pairs in names.values())
    monkeypatch.setattr(parse, "kernelbench_names", lambda: {})
    monkeypatch.setattr(parse, "_problem_keys", {})
    for x, _ in rows:
        _, key, title = parse.reference_fields(x[: text_cut(x)])
        fallback.setdefault(key, title)
    titles = list(fallback.values())
    assert not [t for t in titles if re.fullmatch(r"[\w.]+(, [\w.]+)*", t)]  # was 46 of 247
    assert len(titles) - len(set(titles)) <= 6  # shared before the per-key suffix (was 26 problems in 9 titles)
    assert sum("?" in t for t in titles) <= 5


def test_one_thread_at_a_time_builds_a_syntax_tree(monkeypatch):
    # CPython 3.11 shares the AST constructor's recursion counter between threads (python/cpython#106905): two
    # sessions parsing at once raised SystemError on the Compare page under load
    import ast

    from common.program import parse

    held = []
    real_parse = ast.parse

    def watching_parse(source, *args, **kwargs):
        held.append(parse._AST_LOCK.locked())
        return real_parse(source, *args, **kwargs)

    monkeypatch.setattr(ast, "parse", watching_parse)
    parse_program(program("relu"))
    assert held and all(held)
