"""The time a correct row spends on the checks that keep verdicts honest (issue 42), from its results' `phases_s`.

The stages that exist only to catch cheats: the recheck on fresh values, the launch record, the loop check, the
digest of the inputs and Model's extra calls for the recheck and the loop check; each with its wait for the GPU.
A stage that any run has (building, the correctness trials, the timing loops) is not counted. Prints the share
per row (median, mean, worst) of `duration_s`.

    python scripts/bench_trust_share.py RESULTS.jsonl [...]
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys

TRUST_STAGES = ("recheck:", "launches:", "loop check:", "correctness: digest of the inputs")
TRUST_SUFFIXES = ("(recheck)", "(loop check)")
WAIT = " [waiting for the GPU]"


def is_trust_stage(stage: str) -> bool:
    name = stage.removesuffix(WAIT)
    return name.startswith(TRUST_STAGES) or name.endswith(TRUST_SUFFIXES)


def shares(lines: list[dict]) -> list[tuple[float, float]]:
    """(trust seconds, duration seconds) per correct row."""
    out = []
    for r in lines:
        if r.get("status") != "ok" or not r.get("duration_s"):
            continue
        trust = sum(v for k, v in (r.get("phases_s") or {}).items() if is_trust_stage(k))
        out.append((trust, float(r["duration_s"])))
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("results", nargs="+")
    args = parser.parse_args(argv)
    rows = []
    for path in args.results:
        with open(path) as fh:
            rows += [json.loads(line) for line in fh if line.strip()]
    found = shares(rows)
    if not found:
        print("no correct rows with timings", file=sys.stderr)
        return 1
    per_row = [t / d for t, d in found]
    total_t, total_d = sum(t for t, _ in found), sum(d for _, d in found)
    print(f"correct rows: {len(found)}; mean duration {total_d / len(found):.2f} s, of it trust stages "
          f"{total_t / len(found):.3f} s ({100 * total_t / total_d:.1f}% of all time)")
    print(f"share per row: median {100 * statistics.median(per_row):.1f}%, mean "
          f"{100 * statistics.fmean(per_row):.1f}%, worst {100 * max(per_row):.1f}%")
    return 0


if __name__ == "__main__":
    sys.exit(main())
