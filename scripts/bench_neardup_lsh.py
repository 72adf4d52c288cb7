"""The clustering stage of `near-dups` alone, on made-up signatures: its CPU time and peak memory for N distinct
candidates, the worst case of a corpus whose candidates are all different after normalisation.

    python scripts/bench_neardup_lsh.py N [--copies 10] [--noise 0.1]

Signatures: N / copies random ones, each repeated `copies` times with a share `noise` of its values redrawn (an
estimated Jaccard similarity of about 1 - noise within a group, 0 between groups), so LSH finds buckets to
confirm as the real data's near-copies make it. Prints N, the clusters found, CPU seconds (user + system of this
process), wall seconds, the load average and the peak RSS.
"""

from __future__ import annotations

import argparse
import os
import resource
import time

import numpy as np

from queries.neardup.clusters import components
from queries.neardup.shingles import NUM_PERM


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("n", type=int)
    parser.add_argument("--copies", type=int, default=10)
    parser.add_argument("--noise", type=float, default=0.1)
    args = parser.parse_args()
    rng = np.random.default_rng(0)
    signatures = np.repeat(rng.integers(0, 2**32, (args.n // args.copies, NUM_PERM), np.uint32), args.copies, axis=0)
    redraw = rng.random(signatures.shape) < args.noise
    signatures[redraw] = rng.integers(0, 2**32, int(redraw.sum()), np.uint32)
    load = os.getloadavg()[0]
    cpu, wall = time.process_time(), time.monotonic()
    found = components(signatures)
    cpu, wall = time.process_time() - cpu, time.monotonic() - wall
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(f"{len(signatures):,} signatures: {len(np.unique(found)):,} clusters, {cpu:,.1f} CPU s, {wall:,.1f} s wall "
          f"(load average {load:.1f} → {os.getloadavg()[0]:.1f}), peak RSS {peak:,.0f} MiB")


if __name__ == "__main__":
    main()
