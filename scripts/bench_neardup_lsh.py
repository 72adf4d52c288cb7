"""The clustering stage of `near-dups` alone, on made-up shingle sets: its CPU time and peak memory for N distinct
candidates, the worst case of a corpus whose candidates are all different after normalisation.

    python scripts/bench_neardup_lsh.py N [--copies 10] [--noise 0.05] [--shingles 600]

Shingle sets: N / copies random ones of `--shingles` hashes (a real candidate has ~590), each repeated `copies`
times with a share `noise` of its hashes redrawn (an exact Jaccard similarity of about k / (2 - k) within a
group, k = (1 - noise)², 0.82 at the default; 0 between groups), and their MinHash signatures (datasketch, as the command makes them), so LSH
finds buckets to confirm as the real data's near-copies make it. Prints N, the links, clusters and components
found, CPU seconds (user + system of this process, the clustering only), wall seconds, the load average and the
peak RSS (of the whole run: the sets and signatures included).
"""

from __future__ import annotations

import argparse
import os
import resource
import time

import numpy as np
from datasketch import MinHash

from queries.neardup.clusters import group
from queries.neardup.shingles import NUM_PERM, SEED


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("n", type=int)
    parser.add_argument("--copies", type=int, default=10)
    parser.add_argument("--noise", type=float, default=0.05)
    parser.add_argument("--shingles", type=int, default=600)
    args = parser.parse_args()
    rng = np.random.default_rng(0)
    template = MinHash(num_perm=NUM_PERM, seed=SEED, hashfunc=int)
    sets, signatures = [], np.empty((args.n, NUM_PERM), np.uint32)
    for i in range(args.n):
        if i % args.copies == 0:
            base = rng.integers(0, 2**32, args.shingles, np.uint32)
        values = base.copy()
        redraw = rng.random(len(values)) < args.noise
        values[redraw] = rng.integers(0, 2**32, int(redraw.sum()), np.uint32)
        sets.append(np.unique(values))
        m = template.copy()
        m.update_batch(sets[-1].tolist())
        signatures[i] = m.hashvalues
    load = os.getloadavg()[0]
    cpu, wall = time.process_time(), time.monotonic()
    found = group(signatures, sets)
    cpu, wall = time.process_time() - cpu, time.monotonic() - wall
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(f"{len(signatures):,} signatures: {len(found.links):,} links, {len(np.unique(found.cluster)):,} clusters, "
          f"{len(np.unique(found.component)):,} components, {cpu:,.1f} CPU s, {wall:,.1f} s wall "
          f"(load average {load:.1f} → {os.getloadavg()[0]:.1f}), peak RSS {peak:,.0f} MiB")


if __name__ == "__main__":
    main()
