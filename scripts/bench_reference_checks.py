"""The judge's reference cut and ingest's static checks over a folder of dataset Parquet files (issue 42): how many
reference parts the judge refuses, how many rows each of the given static flags marks, and the CPU milliseconds per
program of each (`time.process_time`: a loaded host's wall clock says little).

    PYTHONPATH=$PWD .venv/bin/python scripts/bench_reference_checks.py ../shared/data/realworld/ [FLAG ...]
"""

from __future__ import annotations

import collections
import sys
import time
import warnings
from pathlib import Path

import pyarrow.parquet as pq

from common.program.parse import reference_fields
from common.program.text_rules import text_cut
from queries.ingest.program_checks import check_program
from runner.child import reference

DEFAULT_FLAGS = ("reference_not_plain", "tensor_subclass", "clock_in_forward")


def main(argv: list[str]) -> int:
    if not argv:
        print(__doc__, file=sys.stderr)
        return 2
    flags = tuple(argv[1:]) or DEFAULT_FLAGS
    programs = [x for path in sorted(Path(argv[0]).glob("*.parquet")) for x in pq.read_table(path, columns=["x"])["x"].to_pylist()]
    refused: collections.Counter[str] = collections.Counter()
    start = time.process_time()
    for x in programs:
        try:
            reference.reference_source(x)
        except SyntaxError:
            refused["syntax"] += 1
        except ValueError as exc:  # RejectedReference (NoReference in older trees)
            refused[type(exc).__name__] += 1
    cut_ms = (time.process_time() - start) / len(programs) * 1000
    flagged: collections.Counter[str] = collections.Counter()
    warnings.simplefilter("ignore")
    start = time.process_time()
    for x in programs:
        found = check_program(x, reference_fields(x[:text_cut(x)])[0]) or []
        flagged.update(flag for flag in flags if flag in found)
    checks_ms = (time.process_time() - start) / len(programs) * 1000
    print(f"{len(programs)} programs; reference parts refused: {dict(refused) or 0}; "
          f"flagged: {dict(flagged) or 0}; cut {cut_ms:.2f} ms, static checks {checks_ms:.2f} ms CPU per program")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
