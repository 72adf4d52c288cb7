"""Generate a corpus shaped like the real dataset from real programs, for ingest and query benchmarks only.

    python scripts/make_corpus.py --rows 601000 --out .bench/corpus [--real ../shared/data/realworld]
                                  [--one-row-group] [--one-file] [--top-share 0.55] [--unique-lines] [--seed 0]

Every row starts from a real program of `--real` (KernelBench references with LLM-written Triton candidates):
train rows from its train.parquet, test rows (with their `problem_id` and `holdout_group`) from its test.parquet,
~90.5% / 9.5% of the rows, problems skewed (a few hold many candidates). The reference part (up to the
candidate's start, as ingest cuts it) is kept as it is, so the corpus has a realistic number of distinct
problems; in the candidate part every local name (assigned names, arguments, functions and classes other than
`ModelNew`) is renamed with a word from the real programs' vocabulary and a random suffix, and integer literals
are redrawn (32 such variants per real program), and each row renames one name again, so no two candidates are
alike: the files compress ~3-4x like the real ones, not 27x like
templates. About 1 in 5000 candidates has its kernels repeated to ~300k characters; ~35% of `y` is null.
`--one-row-group` writes each file as a single row group (the worst case for a streaming reader; needs the whole
file in memory while writing). `--one-file` writes every row into one `train.parquet` (test's rows last, with
their `problem_id` and `holdout_group`; the real train split is one 544k-row file too); `--top-share S` gives one
problem a share S of the rows (in the real data one problem holds over half of them). `--unique-lines` makes
every line of every row distinct (the worst case for the search index's line index, issue 48): each line ends
with a comment naming its row and line (`  # u<row>.<line>`), but a line continued by a backslash, which is kept
as it is so that the programs still parse.
"""

from __future__ import annotations

import argparse
import ast
import builtins
import keyword
import re
import time
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from common.program.parse import reference_fields, text_cut

REAL = Path(__file__).resolve().parent.parent.parent / "shared" / "data" / "realworld"
KEEP = set(keyword.kwlist) | set(dir(builtins)) | {
    "self", "Model", "ModelNew", "forward", "get_inputs", "get_init_inputs", "torch", "nn", "triton", "tl", "F",
    "np", "math", "cls", "super", "__init__",
}
NUMBER = r"(?<![\w.])[1-9][0-9]{0,4}(?![\w.])"
BIG_CHARS = 300_000


class Base:
    """One real program: its reference part, and its candidate part with a regex over the names to rename."""

    def __init__(self, x: str, problem_id: str | None, holdout_group: str | None):
        ref_chars = reference_fields(x[: text_cut(x)])[0]
        self.reference, self.candidate = x[:ref_chars], x[ref_chars:]
        self.problem_id, self.holdout_group = problem_id, holdout_group
        names = sorted(_local_names(self.candidate) - KEEP, key=len, reverse=True)
        alternatives = [rf"\b(?:{'|'.join(map(re.escape, names))})\b"] if names else []
        self.pattern = re.compile("|".join(alternatives + [NUMBER]))


def _local_names(code: str) -> set[str]:
    """Names the candidate defines (assignments, arguments, functions, classes); by text when it does not parse."""
    try:
        tree = ast.parse(code)
    except (SyntaxError, ValueError):
        return set(re.findall(r"^\s*(\w+)\s*=", code, re.M)) | set(re.findall(r"\bdef\s+(\w+)", code))
    names = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
            names.add(node.id)
        elif isinstance(node, ast.arg):
            names.add(node.arg)
        elif isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            names.add(node.name)
    return names


def _mutate(base: Base, rng: np.random.Generator, vocabulary: list[str]) -> tuple[str, list[str]]:
    """The base's candidate with its local names renamed and its integer literals redrawn; and the new names."""
    renames: dict[str, str] = {}
    picks = iter(rng.integers(len(vocabulary), size=64).tolist())
    suffixes = iter(rng.integers(1000, size=64).tolist())
    numbers = iter((2 ** rng.integers(0, 12, size=256)).tolist())

    def replace(match: re.Match) -> str:
        word = match.group(0)
        if word[0].isdigit():
            return str(next(numbers, 64))
        if word not in renames:
            renames[word] = f"{vocabulary[next(picks, 0)]}_{next(suffixes, 0)}"
        return renames[word]

    return base.pattern.sub(replace, base.candidate), list(renames.values())


class Programs:
    """Row texts: `VARIANTS` renamed candidates per base (renaming costs ~1.5 ms, too slow for every row), each
    row then renaming one of its variant's names again (and a rare one inflated), so no two rows are alike."""

    VARIANTS = 32

    def __init__(self, bases: list[Base], rng: np.random.Generator, vocabulary: list[str]):
        self.bases, self.rng, self.vocabulary = bases, rng, vocabulary
        self.variants: dict[tuple[int, int], tuple[str, list[str]]] = {}

    def text(self, base: int, big: bool, unique_row: int | None = None) -> str:
        key = (base, int(self.rng.integers(self.VARIANTS)))
        if key not in self.variants:
            self.variants[key] = _mutate(self.bases[base], self.rng, self.vocabulary)
        candidate, names = self.variants[key]
        if names:
            name = names[int(self.rng.integers(len(names)))]
            candidate = candidate.replace(name, f"{name}_{int(self.rng.integers(1_000_000))}")
        if big:
            candidate = (candidate + "\n") * (BIG_CHARS // max(len(candidate), 1) + 1)
        text = self.bases[base].reference + candidate
        return text if unique_row is None else unique_lines(text, unique_row)


def unique_lines(text: str, row: int) -> str:
    """`text` with a comment naming `row` and the line at the end of each line (not of one continued by a
    backslash, nor of the empty piece after a last newline)."""
    lines = text.split("\n")
    last = len(lines) - 1
    return "\n".join(line if line.endswith("\\") or (i == last and not line) else f"{line}  # u{row}.{i}"
                     for i, line in enumerate(lines))


def load_bases(real: Path, split: str) -> tuple[list[Base], list[str]]:
    table = pq.read_table(real / f"{split}.parquet")
    for name in ("problem_id", "holdout_group"):
        if name not in table.column_names:
            table = table.append_column(name, pa.nulls(table.num_rows, pa.string()))
    rows = zip(*(table[name].to_pylist() for name in ("x", "problem_id", "holdout_group")), strict=True)
    bases = [Base(x, p, g) for x, p, g in rows if x]
    vocabulary = sorted({w for b in bases for w in re.findall(r"\b[a-z][a-z0-9]{2,11}\b", b.candidate)} - KEEP)
    return bases, vocabulary


def _write(writer: pq.ParquetWriter, columns: dict, programs, one_row_group: bool, chunk: int) -> None:
    """Write programs (an iterator of lists) with their other columns, chunk by chunk or as one row group."""
    schema = writer.schema
    tables = []
    start = 0
    for texts in programs:
        data = {"x": pa.array(texts, pa.large_string())}
        data |= {k: v[start : start + len(texts)] for k, v in columns.items()}
        data |= {k: pa.nulls(len(texts), pa.string()) for k in schema.names if k not in data}
        table = pa.table(data, schema=schema)
        start += len(texts)
        if one_row_group:
            tables.append(table)
        else:
            writer.write_table(table, row_group_size=chunk)
    if one_row_group:
        table = pa.concat_tables(tables)
        writer.write_table(table, row_group_size=table.num_rows)


def _schema(with_test_columns: bool) -> pa.Schema:
    test_columns = [("problem_id", pa.string()), ("holdout_group", pa.string())] if with_test_columns else []
    return pa.schema([("x", pa.large_string()), ("y", pa.float64()), *test_columns])


def _skewed_choice(rng: np.random.Generator, bases: list[Base], n: int, top_share: float) -> np.ndarray:
    """Base indices for n rows: problems (grouped by reference) drawn with skewed weights (the first of them
    given at least `top_share` of the rows), then a base of it."""
    by_problem: dict[str, list[int]] = {}
    for i, b in enumerate(bases):
        by_problem.setdefault(b.reference, []).append(i)
    groups = list(by_problem.values())
    order = rng.permutation(len(groups))
    weights = 1.0 / np.arange(1, len(groups) + 1) ** 0.8
    problems = order[rng.choice(len(groups), size=n, p=weights / weights.sum())]
    problems[rng.random(n) < top_share] = order[0]
    return np.array([groups[p][rng.integers(len(groups[p]))] for p in problems.tolist()], np.int64)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rows", type=int, default=601_000)
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--real", type=Path, default=REAL, help="folder with the real train/test.parquet")
    parser.add_argument("--one-row-group", action="store_true")
    parser.add_argument("--one-file", action="store_true", help="every row in one train.parquet")
    parser.add_argument("--top-share", type=float, default=0.0, help="share of the rows one problem holds")
    parser.add_argument("--unique-lines", action="store_true", help="no line repeats, within a row or across rows")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    started = time.monotonic()
    rng = np.random.default_rng(args.seed)
    args.out.mkdir(parents=True, exist_ok=True)
    n_test = max(1, round(args.rows * 0.095))
    chunk = 20_000
    one = pq.ParquetWriter(args.out / "train.parquet", _schema(True), compression="zstd") if args.one_file else None
    first_row = 0  # of the split, over the whole corpus (--unique-lines)
    for split, n in (("test", n_test), ("train", args.rows - n_test)):
        bases, vocabulary = load_bases(args.real, split)
        picks = _skewed_choice(rng, bases, n, args.top_share)
        y = np.where(rng.random(n) < 0.35, np.nan, rng.lognormal(-2, 1.5, n))
        columns = {"y": pa.array(y, from_pandas=True)}
        if split == "test":
            columns["problem_id"] = pa.array([bases[i].problem_id for i in picks.tolist()], pa.string())
            columns["holdout_group"] = pa.array([bases[i].holdout_group for i in picks.tolist()], pa.string())
        big = rng.random(n) < 1 / 5000
        texts = Programs(bases, rng, vocabulary)
        base_row, first_row = first_row, first_row + n  # (the generator is consumed within this iteration)
        programs = ([texts.text(int(picks[i]), bool(big[i]), base_row + i if args.unique_lines else None)
                     for i in range(s, min(s + chunk, n))] for s in range(0, n, chunk))
        if one is not None:
            _write(one, columns, programs, args.one_row_group, chunk)
            print(f"{split}: {n:,} rows into {args.out / 'train.parquet'} ({time.monotonic() - started:.0f} s)")
            continue
        path = args.out / f"{split}.parquet"
        with pq.ParquetWriter(path, _schema(split == "test"), compression="zstd") as writer:
            _write(writer, columns, programs, args.one_row_group, chunk)
        _report(path, f"{split}: {n:,} rows", started)
    if one is not None:
        one.close()
        _report(args.out / "train.parquet", f"one file: {args.rows:,} rows", started)


def _report(path: Path, what: str, started: float) -> None:
    raw = pq.read_metadata(path)
    x_bytes = [raw.row_group(g).column(0) for g in range(raw.num_row_groups)]
    ratio = sum(c.total_uncompressed_size for c in x_bytes) / sum(c.total_compressed_size for c in x_bytes)
    print(f"{what}, {path.stat().st_size / 1e6:,.0f} MB, x compresses {ratio:.1f}x ({time.monotonic() - started:.0f} s)")

if __name__ == "__main__":
    main()
