"""Write `queries/kernelbench_problems.json`: KernelBench problem names for the problem keys of a store built
from `../shared/data/realworld/` (whose `origin.json` names each row's KernelBench file, e.g.
`results/level1/16_Matmul_with_transposed_A/...`). Only hashes and names are written, never program text.

    python -m queries ingest ../shared/data/realworld --store /tmp/real-store
    python scripts/make_kernelbench_names.py --store /tmp/real-store [--corpus ../shared/data/realworld]
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import pyarrow.parquet as pq

REPO = Path(__file__).resolve().parent.parent
OUT = REPO / "queries" / "kernelbench_problems.json"


def names_by_key(store: Path, corpus: Path) -> dict[str, str]:
    """problem_key -> `L<level> <n>_<Name>`; a key seen with two names is left out (ambiguous)."""
    origin = json.loads((corpus / "origin.json").read_text(encoding="utf-8"))
    index = pq.read_table(store / "index.parquet", columns=["split", "row", "problem_key"]).to_pylist()
    found: dict[str, set[str]] = {}
    for row in index:
        parts = origin[row["split"]][row["row"]].split("/")
        level = parts[1].removeprefix("level")
        found.setdefault(row["problem_key"], set()).add(f"L{level} {parts[2]}")
    return {key: next(iter(names)) for key, names in sorted(found.items()) if len(names) == 1}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--store", type=Path, required=True)
    parser.add_argument("--corpus", type=Path, default=REPO.parent / "shared" / "data" / "realworld")
    args = parser.parse_args(argv)
    names = names_by_key(args.store, args.corpus)
    OUT.write_text(json.dumps({"source": "KernelBench (ScalingIntelligence/KernelBench 423217d) file names, keyed "
                                         "by this project's problem_key", "problems": names}, indent=1) + "\n",
                   encoding="utf-8")
    print(f"{len(names)} problem names -> {OUT}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
