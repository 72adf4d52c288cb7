"""Generate the embedded sample dataset ``data/sample/{train,test}.parquet``.

The programs come from ``scripts/sample_programs`` (hand-written KernelBench-shaped problems and their
candidate variants). Rows are split into train and test like the real dataset: a few problems are held out
(``full_holdout``: test only; ``ninety_holdout``: one candidate in train; ``half_holdout``: half and half).
Row order is deterministic, so row ids ``f"{split}/{row:06d}"`` are stable across runs.

``y`` is provisional by default (plausible milliseconds, null for failing kinds); ``--labels runs.jsonl``
replaces it with measured medians from run results: per row, the median of its passing runs' medians when most of
its runs passed, else null (do_bench cross-check runs are left out).

Usage: python scripts/make_sample.py [--out DIR] [--labels FILE.jsonl]
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import sys
from dataclasses import dataclass
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(1, str(Path(__file__).resolve().parent.parent))

from sample_programs import all_problems  # noqa: E402
from sample_programs.variants import Candidate, build_candidates  # noqa: E402

from runner.child.timing import DO_BENCH_FLAG  # noqa: E402

DEFAULT_OUT = Path(__file__).resolve().parent.parent / "data" / "sample"
SEED = 20240611
HOLDOUT_GROUPS = {
    "1_2": "full_holdout", "2_2": "full_holdout", "3_2": "full_holdout",
    "1_13": "ninety_holdout", "1_10": "ninety_holdout", "2_4": "ninety_holdout",
    "1_7": "half_holdout", "3_3": "half_holdout",
}
TRAIN_SCHEMA = pa.schema([("x", pa.string()), ("y", pa.float64())])
TEST_SCHEMA = pa.schema([("x", pa.string()), ("y", pa.float64()), ("problem_id", pa.string()),
                         ("holdout_group", pa.string())])
# provisional runtime of each passing kind relative to the problem's fast candidate
KIND_FACTOR = {"fast": 1.0, "dup_whitespace": 1.0, "dup_comments": 1.0, "no_triton": 1.45}


class LabelError(ValueError):
    """The labels file is malformed or does not cover every row."""


@dataclass(frozen=True)
class SampleRow:
    split: str
    row: int
    candidate: Candidate
    y: float | None
    holdout_group: str | None

    @property
    def id(self) -> str:
        return f"{self.split}/{self.row:06d}"


def _provisional_y(candidate: Candidate, rng: random.Random) -> float | None:
    if not candidate.passes:
        return None
    problem = candidate.problem
    factor = problem.slow_factor if candidate.kind == "slow" else KIND_FACTOR[candidate.kind]
    return round(problem.fast_ms * factor * rng.uniform(0.97, 1.06), 5)


def _assign_split(problem_id: str, candidates: list[Candidate]) -> list[tuple[str, Candidate]]:
    group = HOLDOUT_GROUPS.get(problem_id)
    if group is None:
        return [("train", c) for c in candidates]
    if group == "full_holdout":
        return [("test", c) for c in candidates]
    if group == "ninety_holdout":
        return [("train" if i == 0 else "test", c) for i, c in enumerate(candidates)]
    return [("train" if i % 2 else "test", c) for i, c in enumerate(candidates)]


def build_rows() -> list[SampleRow]:
    """Every sample row, train rows first, each split in its final (deterministically shuffled) order."""
    rng = random.Random(SEED)
    placed: dict[str, list[tuple[Candidate, float | None]]] = {"train": [], "test": []}
    for index, problem in enumerate(all_problems()):
        candidates = build_candidates(problem, index)
        rng.shuffle(candidates)
        for split, candidate in _assign_split(problem.problem_id, candidates):
            placed[split].append((candidate, _provisional_y(candidate, rng)))
    rows = []
    for split in ("train", "test"):
        rng.shuffle(placed[split])
        for row, (candidate, y) in enumerate(placed[split]):
            group = HOLDOUT_GROUPS.get(candidate.problem.problem_id)
            rows.append(SampleRow(split, row, candidate, y, group))
    return rows


def _field(obj: dict, dotted: str):
    """``obj["a"]["b"]`` for ``"a.b"``, also accepting a flat ``obj["a.b"]``; None when absent."""
    if dotted in obj:
        return obj[dotted]
    value = obj
    for part in dotted.split("."):
        if not isinstance(value, dict) or part not in value:
            return None
        value = value[part]
    return value


def load_labels(path: Path, row_ids: list[str]) -> tuple[dict[str, float | None], dict[str, str]]:
    """Measured y per row id and the system metadata, from a run-results JSONL (several runs per row allowed)."""
    medians: dict[str, list[float | None]] = {}
    systems: dict[str, set[str]] = {"gpu": set(), "torch": set(), "triton": set()}
    with path.open(encoding="utf-8") as fh:
        for lineno, line in enumerate(fh, 1):
            if not line.strip():
                continue
            try:
                obj = json.loads(line)
            except json.JSONDecodeError as exc:
                raise LabelError(f"{path}:{lineno}: not JSON ({exc})") from exc
            row_id, status = obj.get("id"), obj.get("status")
            if not isinstance(row_id, str) or status not in ("ok", "failed"):
                raise LabelError(f"{path}:{lineno}: needs a string 'id' and 'status' 'ok' or 'failed'")
            if DO_BENCH_FLAG in (obj.get("flags") or []):
                continue
            median = _field(obj, "timing.median_ms")
            if status == "ok" and not isinstance(median, int | float):
                raise LabelError(f"{path}:{lineno}: status ok but no numeric timing.median_ms for {row_id}")
            medians.setdefault(row_id, []).append(float(median) if status == "ok" else None)
            for key, seen in systems.items():
                value = _field(obj, f"system.{key}")
                if value:
                    seen.add(str(value))
    missing = [row_id for row_id in row_ids if row_id not in medians]
    if missing:
        raise LabelError(f"{path}: no result for {len(missing)} rows, e.g. {', '.join(missing[:5])}")
    return {row_id: _label(values) for row_id, values in medians.items()}, {
        f"tlx.{key}": "; ".join(sorted(seen)) for key, seen in systems.items()}


def _label(medians: list[float | None]) -> float | None:
    """The median of the passing runs' medians when most runs passed, else None."""
    passed = [m for m in medians if m is not None]
    return statistics.median(passed) if 2 * len(passed) > len(medians) else None


def write_sample(out_dir: Path, labels_path: Path | None = None) -> dict[str, int]:
    """Write ``train.parquet`` and ``test.parquet`` into ``out_dir``; return rows written per split."""
    rows = build_rows()
    metadata = {"tlx.y_source": "provisional", "tlx.generator": "scripts/make_sample.py"}
    ys = {r.id: r.y for r in rows}
    if labels_path is not None:
        ys, system = load_labels(labels_path, [r.id for r in rows])
        metadata.update(system, **{"tlx.y_source": "measured"})
    out_dir.mkdir(parents=True, exist_ok=True)
    counts = {}
    for split, schema in (("train", TRAIN_SCHEMA), ("test", TEST_SCHEMA)):
        part = [r for r in rows if r.split == split]
        columns = {"x": [r.candidate.program for r in part], "y": [ys[r.id] for r in part]}
        if split == "test":
            columns["problem_id"] = [r.candidate.problem.problem_id for r in part]
            columns["holdout_group"] = [r.holdout_group for r in part]
        table = pa.table(columns, schema=schema.with_metadata(metadata))
        pq.write_table(table, out_dir / f"{split}.parquet", compression="zstd", row_group_size=64)
        counts[split] = len(part)
    return counts


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT, help="output folder (default data/sample)")
    parser.add_argument("--labels", type=Path, help="run results JSONL whose timing.median_ms become y")
    args = parser.parse_args(argv)
    try:
        counts = write_sample(args.out, args.labels)
    except (LabelError, OSError) as exc:
        print(f"make_sample: {exc}", file=sys.stderr)
        return 1
    print(f"wrote {counts['train']} train and {counts['test']} test rows to {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
