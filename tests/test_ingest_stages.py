"""Two-stage ingest: stage-1 text-rule fields on tricky programs, the candidate key, problem grouping against
parse_program, code locations, the DuckDB-to-Python fallback, and stage 2 (syntax check) run, skipped, run
later, interrupted or failed."""

from __future__ import annotations

import ast
import hashlib
import json
import math
import os
import subprocess
import sys
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from common.program.parse import parse_program
from common.program.text_rules import (
    WHITESPACE,
    candidate_fingerprint,
    forward_arity,
    model_forward,
    model_new_forward,
    program_candidate_key,
)
from common.program_hash import program_sha256 as runner_program_sha256
from common.settings import REPO_ROOT
from queries import api, db
from queries.ingest import ingest, sample_files
from queries.ingest.handover import Slots, read_slot
from queries.ingest.program_checks import SyntaxCheckError, check_syntax
from queries.store import Store, StoreMeta
from tests.fixtures import REFERENCE, program
from tests.queries_helpers import settings_now

RELU_REF = REFERENCE.format(doc="Simple model that performs a ReLU activation.", expr="torch.relu(x)", n=64)
AUTOTUNED = RELU_REF + '''
import triton
import triton.language as tl


@triton.autotune(
    configs=[
        triton.Config({"BLOCK": 64}, num_warps=2),
        # triton.Config({"BLOCK": 128}, num_warps=4),
        triton.Config({"BLOCK": 256}, num_warps=8),
    ],
    key=["n"],
)
@triton.jit
def tuned(x_ptr, n, BLOCK: tl.constexpr):
    pass


@torch.jit.script
def not_a_kernel(x):
    return x


@triton.jit
def plain(x_ptr):
    pass


class ModelNew(nn.Module):
    def forward(self, x):
        return x
'''
NO_TRITON = RELU_REF + '''
import torch.nn.functional as F


class ModelNew(nn.Module):
    def forward(self, x):
        return F.relu(x)
'''  # (a helper defined above ModelNew would count as reference: the text rules know no AST)
TWO_MODELS = "import triton\nimport triton.language as tl\n" + RELU_REF + '''

class Model(nn.Module):
    """A second Model, inside the candidate."""


@triton.jit
def k(x_ptr):
    pass


class ModelNew(Model):
    pass
'''


def build(tmp_path: Path, texts: list[str], name: str = "store", **options) -> tuple[dict, dict, Store]:
    src = tmp_path / f"src-{name}" / "train.parquet"
    src.parent.mkdir(parents=True, exist_ok=True)
    pq.write_table(pa.table({"x": texts, "y": [1.0] * len(texts)}), src)
    summary = ingest([str(src)], tmp_path / name, progress=False, **options)
    rows = pq.read_table(tmp_path / name / "index.parquet").to_pylist()
    return summary, {r["id"]: r for r in rows}, Store(tmp_path / name)


def test_stage_one_fields_on_tricky_programs(tmp_path):
    huge = program("relu", block=64) + "# " + "x" * 99 + "\n" * 1 + ("# " + "y" * 99 + "\n") * 3100
    texts = [program("relu"), AUTOTUNED, NO_TRITON, TWO_MODELS, huge]
    _, index, store = build(tmp_path, texts, syntax_check=False)
    normal, tuned, no_triton, two, big = (index[f"train/{i:06d}"] for i in range(5))
    assert {r["problem_key"] for r in index.values()} == {normal["problem_key"]}  # one problem, all five
    assert all(r["parse_mode"] == "text" for r in index.values())  # stage 1 only
    assert (tuned["kernel_names"], tuned["autotuned"], tuned["static_error"]) == (["tuned", "plain"], True, "ok_static")
    assert (no_triton["kernel_names"], no_triton["static_error"]) == ([], "no_triton_kernel")
    assert store.program("train/000002")[no_triton["ref_chars"]:].lstrip().startswith("import torch.nn.functional")
    two_text = store.program("train/000003")
    assert two_text[two["ref_chars"]:].lstrip().startswith('class Model(nn.Module):\n    """A second')
    assert (two["kernel_names"], two["static_error"], normal["autotuned"]) == (["k"], "ok_static", False)
    assert big["n_chars"] == len(huge) > 300_000 and big["n_kernels"] == 1 and store.program(big["id"]) == huge
    for row_id, row in index.items():
        text = store.program(row_id)
        assert row["ref_chars"] + row["cand_chars"] == row["n_chars"] == len(text)
        assert row["candidate_key"] == program_candidate_key(text)  # SQL + Python path == the Python definition
        assert row["title"] == parse_program(text).title == "ReLU activation. · 64×64"


def test_program_sha256_names_the_program_as_the_runner_does(tmp_path):
    """DuckDB's sha256 of the text (fast read) and of the Python reader's decoded text (binary `x`) both equal the
    runner's `program_sha256`, also for non-ASCII programs; stage 2 keeps the column."""
    texts = [program("relu"), program("relu").replace("ReLU", "ReLU – é ✓ 𝄞"), AUTOTUNED]
    for name, column in (("text", pa.array(texts, pa.string())),
                         ("binary", pa.array([t.encode() for t in texts], pa.binary()))):
        src = tmp_path / f"src-{name}" / "train.parquet"
        src.parent.mkdir()
        pq.write_table(pa.table({"x": column, "y": [1.0] * len(texts)}), src)
        ingest([str(src)], tmp_path / name, progress=False)
        index = pq.read_table(tmp_path / name / "index.parquet")
        assert index.schema.field("program_sha256").type == pa.string()
        store = Store(tmp_path / name)
        for row_id, sha in zip(index["id"].to_pylist(), index["program_sha256"].to_pylist(), strict=True):
            text = store.program(row_id)
            assert sha == runner_program_sha256(text) == hashlib.sha256(text.encode("utf-8")).hexdigest()
        assert sorted(index["program_sha256"].to_pylist()) == sorted(runner_program_sha256(t) for t in texts)


def test_static_checks_that_hold_on_real_programs(tmp_path):
    """Imports the runner cannot satisfy and `forward` signatures that cannot take the reference's arguments are
    found; guarded or nested imports, extra defaulted or *args parameters, and signatures too odd to read are not."""
    base = program("relu")
    cases = {
        "unavailable_import": base.replace("import triton\n", "import triton\nimport einops\n", 1),
        "unavailable_import ": base.replace("import triton\n", "from apex.normalization import FusedLayerNorm\n"
                                            "import triton\n", 1),
        "ok_static": base.replace("import triton\n", "try:\n    import einops\nexcept ImportError:\n"
                                  "    einops = None\nimport triton\nimport collections.abc\nfrom os import path\n", 1),
        "forward_arity_mismatch": base.replace("    def forward(self, x):\n        out", "    def forward(self, x, y):\n        out"),
        "forward_arity_mismatch ": base.replace("    def forward(self, x):\n        out",
                                                "    def forward(self):\n        x = torch.ones(1)\n        out"),
        "ok_static ": base.replace("    def forward(self, x):\n        out", "    def forward(self, x, y=None):\n        out"),
        "ok_static  ": base.replace("    def forward(self, x):\n        out", "    def forward(self, *inputs):\n"
                                    "        x = inputs[0]\n        out"),
        "ok_static   ": base.replace("    def forward(self, x):\n        out",
                                     "    def forward(self, x, dims=(1, 2), y=0):\n        out"),  # not read: no finding
        "no_triton_kernel": base.replace("@triton.jit\n", "").replace("def forward(self, x):\n        out",
                                                                      "def forward(self, x, y):\n        out"),
    }
    assert base.count("def forward(self, x):") == 2 and all(t != base for t in cases.values())
    _, index, _ = build(tmp_path, list(cases.values()), syntax_check=False)
    found = [index[f"train/{i:06d}"]["static_error"] for i in range(len(cases))]
    assert found == [name.strip() for name in cases]


def test_candidate_key_ignores_layout_comments_and_docstrings(tmp_path):
    base = program("relu")
    variants = [
        base.replace("\n\n@triton.jit", "\n\n\n\n@triton.jit").replace("mask = offs < n", "mask  =  offs<n   "),
        base.replace("    pid = tl.program_id(0)", "    # one block per program\n    pid = tl.program_id(0)  # id"),
        base.replace("    pid = tl.program_id(0)", '    """Relu of one block."""\n    pid = tl.program_id(0)'),
        base.replace("class ModelNew(nn.Module):", 'class ModelNew(nn.Module):\n    """Uses the kernel."""\n'),
        base.replace("import triton\n", "import triton  # the kernels\n"),
    ]
    different = [program("relu", block=512), base.replace("tl.maximum(x, 0.0)", "tl.maximum(x, 1.0)"),
                 base.replace("mask=mask)", "mask=~mask)")]
    _, index, _ = build(tmp_path, [base, *variants, *different])
    keys = [index[f"train/{i:06d}"]["candidate_key"] for i in range(len(index))]
    assert set(keys[: 1 + len(variants)]) == {keys[0]}
    assert len(set(keys[1 + len(variants):]) | {keys[0]}) == 1 + len(different)


@pytest.mark.parametrize("source", ["fixture", "sample"])
def test_problem_grouping_equals_parse_program(fixture_store, tmp_path, source):
    if source == "fixture":
        store = Store(fixture_store)
    else:
        ingest([str(f) for f in sample_files()], tmp_path / "sample", progress=False, workers=1)
        store = Store(tmp_path / "sample")
    by_index, by_parse = {}, {}
    for row in pq.read_table(store.index_path).to_pylist():
        parsed = parse_program(store.program(row["id"]))
        by_index.setdefault(row["problem_key"], set()).add(row["id"])
        by_parse.setdefault(parsed.problem_key, set()).add(row["id"])
        assert row["candidate_key"] == parsed.candidate_key
        # parse_program knows the checks that need no signature or environment; ingest refines its ok_static
        assert row["static_error"] == parsed.static_error or (
            parsed.static_error in ("ok_static", "no_triton_kernel")
            and row["static_error"] in ("unavailable_import", "forward_arity_mismatch"))
        assert row["kernel_names"] == [k.name for k in parsed.kernels]
    assert sorted(map(sorted, by_index.values())) == sorted(map(sorted, by_parse.values()))
    assert set(by_index) == set(by_parse)  # the keys themselves, not only the grouping


def test_every_program_is_where_the_index_says(tmp_path):
    texts = [program(("relu", "matmul", "gelu")[i % 3], block=16 + i) for i in range(40)]
    texts[7] = None  # rejected, keeps its row number
    _, index, store = build(tmp_path, texts, code_rows_per_group=3, rows_per_shard=7)
    assert len(index) == 39 and len(store.code_paths) == 7  # 39 rows in parts of at most 6
    for row_id, row in index.items():
        assert store.program(row_id) == texts[row["row"]]
        part = pq.ParquetFile(tmp_path / "store" / "code" / f"part-{row['code_shard']:05d}.parquet")
        assert row_id in part.read_row_group(row["code_rg"], columns=["id"])["id"].to_pylist()


def test_invalid_utf8_in_a_string_column_goes_to_the_python_reader(tmp_path):
    good = program("relu").encode()
    values = [good] * 30 + [b"\xff bad"] + [good] * 10
    offsets = pa.array([0, *(sum(map(len, values[: i + 1])) for i in range(len(values)))], pa.int32())
    x = pa.StringArray.from_buffers(len(values), offsets.buffers()[1], pa.py_buffer(b"".join(values)))
    src = tmp_path / "src" / "train.parquet"
    src.parent.mkdir()
    pq.write_table(pa.table({"x": x, "y": [1.0] * len(values)}), src, row_group_size=10)
    summary = ingest([str(src)], tmp_path / "store", progress=False, syntax_check=False)
    assert summary["rejects"][0]["row"] == 30 and summary["reject_reasons"] == {"undecodable_text": 1}
    assert summary["rows_read"] == summary["rows_indexed"] + 1 == len(values)
    assert Store(tmp_path / "store").program("train/000040") == good.decode()


def test_fast_read_failing_midway_drops_what_it_wrote(tmp_path, monkeypatch, capfd):
    import duckdb

    from queries.ingest import build as ingest_build

    real_scan = ingest_build.scan_parquet

    def failing_scan(*args):
        batches = real_scan(*args)
        yield next(batches)
        yield next(batches)
        raise duckdb.IOException("page checksum mismatch")

    monkeypatch.setattr(ingest_build, "DUCKDB_BATCH_ROWS", 8)
    monkeypatch.setattr(ingest_build, "scan_parquet", failing_scan)
    texts = [program("relu", block=16 + i) for i in range(30)]
    summary, index, store = build(tmp_path, texts, syntax_check=False, code_rows_per_group=4)
    assert "reading it again row by row (page checksum mismatch)" in capfd.readouterr().err
    assert summary["rows_read"] == summary["rows_indexed"] == 30 and len(index) == 30
    code_rows = sum(pq.read_metadata(p).num_rows for p in store.code_paths)
    assert code_rows == 30 and len(store.code_paths) == 1  # nothing left over from the failed fast read
    assert all(store.program(row_id) == texts[row["row"]] for row_id, row in index.items())
    for literal in ("BLOCK=17)", "BLOCK=29)", "cdiv(n, 40)"):  # the search index has no segment of the first read
        result = api.search_code(tmp_path / "store", settings_now(), literal, limit=100)
        assert result.method == "index"
        assert result.rows["id"].to_pylist() == [i for i, row in index.items() if literal in texts[row["row"]]]


def test_stage_two_marks_syntax_errors_only(tmp_path):
    future = program("relu").replace("import triton\n", "from __future__ import annotations\nimport triton\n")
    broken_reference = program("relu").replace("def get_inputs():", "def get_inputs(:")
    texts = [program("relu"), program("relu", variant="syntax"), future, broken_reference, "x = (\n"]
    summary, index, _ = build(tmp_path, texts)
    marked = {row_id: (r["static_error"], r["parse_mode"]) for row_id, r in index.items()}
    assert marked == {"train/000000": ("ok_static", "ast"), "train/000001": ("syntax_error", "text"),
                      "train/000002": ("syntax_error", "text"), "train/000003": ("syntax_error", "text"),
                      "train/000004": ("syntax_error", "text")}
    assert summary["syntax_check"]["done"] and summary["syntax_check"]["syntax_errors"] == 4
    assert json.loads((tmp_path / "store" / "meta.json").read_text())["syntax_check"]["rows"] == 5


def test_no_syntax_check_then_check_syntax_later(tmp_path, monkeypatch):
    monkeypatch.setenv("TLX_RUNS_DIR", str(tmp_path / "runs"))
    src = tmp_path / "src" / "train.parquet"
    src.parent.mkdir()
    pq.write_table(pa.table({"x": [program("relu"), program("relu", variant="syntax")], "y": [1.0, None]}), src)
    env = {**os.environ, "PYTHONPATH": str(REPO_ROOT)}
    store = tmp_path / "store"

    def cli(*args):
        return subprocess.run([sys.executable, "-m", "queries", *args], capture_output=True, text=True, env=env)

    first = cli("ingest", str(src), "--store", str(store), "--no-syntax-check")
    assert first.returncode == 0, first.stderr
    assert json.loads((store / "meta.json").read_text())["syntax_check"] == {"done": False}
    before = db.connect(store, settings_now())
    assert before.run("SELECT count(*) AS n FROM programs WHERE static_error = 'syntax_error'")["n"][0].as_py() == 0
    later = cli("check-syntax", "--store", str(store))
    assert later.returncode == 0, later.stderr
    assert "2 programs, 1 syntax errors" in later.stderr
    meta = json.loads((store / "meta.json").read_text())
    assert meta["syntax_check"]["done"] and meta["syntax_check"]["syntax_errors"] == 1
    after = db.connect(store, settings_now())  # a new meta.json: a new connection over the rewritten index
    assert after is not before
    assert after.run("SELECT id FROM programs WHERE static_error = 'syntax_error'")["id"].to_pylist() == [
        "train/000001"]
    db.clear_cache()


def test_interrupted_or_failed_stage_two_leaves_a_usable_store(tmp_path, monkeypatch):
    texts = [program("relu"), program("relu", variant="syntax")]

    def interrupted(*args):
        raise KeyboardInterrupt

    monkeypatch.setattr("queries.ingest.program_checks.check_rows", interrupted)
    with pytest.raises(KeyboardInterrupt):
        build(tmp_path, texts)
    store = Store(tmp_path / "store")
    assert store.meta.syntax_check == {"done": False} and store.rows == 2
    assert store.program("train/000001") == texts[1]
    assert [p.name for p in (tmp_path / "store").iterdir() if p.name.startswith(".")] == []

    def broken(*args):
        raise OSError("disk on fire")

    monkeypatch.setattr("queries.ingest.program_checks.check_rows", broken)
    before = (tmp_path / "store" / "index.parquet").read_bytes()
    with pytest.raises(SyntaxCheckError, match="disk on fire"):
        check_syntax(tmp_path / "store", progress=False)
    assert (tmp_path / "store" / "index.parquet").read_bytes() == before
    assert Store(tmp_path / "store").meta.syntax_check == {"done": False}
    monkeypatch.undo()

    monkeypatch.setattr("queries.ingest.program_checks.Store", lambda path: type("Old", (), {"meta": StoreMeta(build_id="x")}))
    with pytest.raises(SyntaxCheckError, match="rebuilt during the syntax check"):
        check_syntax(tmp_path / "store", progress=False)
    assert (tmp_path / "store" / "index.parquet").read_bytes() == before


def test_a_reference_the_parser_chokes_on_gets_a_text_key(tmp_path, monkeypatch):
    def choke(before_cut):
        raise RecursionError("odd program")

    monkeypatch.setattr("queries.ingest.refs.reference_fields", choke)
    _, index, _ = build(tmp_path, [program("relu"), program("relu", block=512)], syntax_check=False)
    keys = {r["problem_key"] for r in index.values()}
    assert len(keys) == 1 and len(keys.pop()) == 16  # one problem still, keyed by its text
    assert {r["title"] for r in index.values()} == {None}


@pytest.mark.parametrize("parameters", [
    "self, x", "self", "self, x, y=1", "self, *args", "self, *args, **kw", "self, x: torch.Tensor, y: int = 3",
    "self, *, k", "self, *, k=1", "self, x,", "self, x, *xs, k=2, **kw", "x", "", "self, x=1, y", "self, x y",
    "self, *", "self, **kw", " self , a : T , b : T = None ", "self, * args", "self,\n x,\n y=None\n",
    "self, x: Optional[int]", "self, x, dims=(1, 2", "self, /, x", "self, x, /, y=2", "self, x=lambda: 1",
])
def test_forward_arity_counts_as_the_parser_does(parameters):
    try:
        args = ast.parse(f"def forward({parameters}):\n    pass\n").body[0].args
    except SyntaxError:
        expected = None
    else:
        positional = args.posonlyargs + args.args
        n = len(positional) - 1
        expected = (None if not positional or None in args.kw_defaults
                    else (n - min(len(args.defaults), n), math.inf if args.vararg else n))
    forward_arity.cache_clear()
    assert forward_arity(parameters) == expected


@pytest.mark.parametrize(("candidate", "expected"), [
    ("class ModelNew(nn.Module):\n    def __init__(self):\n        pass\n\n    def forward(self, x):\n", "self, x"),
    ("import torch\nclass ModelNew:\n    def forward_all(self):\n  \n\tdef  forward (self, k)", "self, k"),
    ("class ModelNew:\n    def forward(\n        self, x,\n    ):\n", "\n        self, x,\n    "),
    ("class ModelNew:\n    pass\ndef forward(self, y):\n    pass\n", None),  # not in the class body
    ("class ModelNew:\n    pass\nx = 1\n    def forward(self, y):\n", None),  # the body ended at `x = 1`
    ("class ModelNew:\n    pass\nx = 1\nclass ModelNew(M):\n    def forward(self, a, b):\n", "self, a, b"),
    ("class ModelNewer:\n    def forward(self, a):\n", None),
    ("x = 1\nclass ModelNew:", None),
    ("class ModelNew:\n    def forward(self, x:", None),  # no closing parenthesis
    ("class ModelNew:\n    def forward(self, é: 'ü'):\n", "self, é: 'ü'"),
    ("y = ModelNew\nclass ModelNew:\n    def forward(self, q):\n", "self, q"),  # the name before its class line
    ("class B(ModelNew):\n    def forward(self):\n\nclass  ModelNew(B):\n    def forward(self, z):\n", "self, z"),
])
def test_forward_signature_is_the_first_def_forward_in_the_class_body(candidate, expected):
    assert model_new_forward(candidate.encode()) == expected
    assert model_forward(candidate.replace("ModelNew", "Model")) == expected


@pytest.mark.parametrize("text", [b"x = 1", b"'''doc''' x = 1", b"x = '' 'a'\n", b"'' '''x''' '", b"a'''b",
                                  b"\"\"\"a'''b\"\"\" ''' c", b"'''a\"\"\"b''' \"\"\" c", b'x = "" """y"""\n'])
def test_candidate_fingerprint_takes_out_triple_quoted_strings_then_whitespace(text):
    expected = text
    for quotes in (b'"""', b"'''"):  # double-quoted ones first, then single-quoted ones in what is left
        expected = b"".join(expected.split(quotes)[::2])
    assert candidate_fingerprint(text) == hashlib.sha256(expected.translate(None, WHITESPACE)).hexdigest()[:16]


def test_slots_hand_over_batches_in_turn_and_grow(tmp_path):
    slots = Slots(tmp_path, 2)
    for n in (10, 3000, 5, 20000, 7, 3):  # slot files grow, then hold smaller batches
        batch = pa.record_batch([pa.array(["é" * i for i in range(n)]), pa.array(range(n), pa.int32())],
                                names=["x", "cut_bytes"])
        path, size = slots.write(batch)
        assert read_slot(path, size).equals(batch)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["slot-0.arrow", "slot-1.arrow"]
