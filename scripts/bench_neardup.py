"""Near-duplicate clusters against exact Jaccard similarity: precision and recall on a store's candidates.

    python scripts/bench_neardup.py STORE [--thresholds 0.5,0.7,0.85]

Truth: every pair of rows of one problem (same problem key) whose candidate parts' exact Jaccard similarity of
normalised token 5-grams (queries/neardup/shingles.py) reaches the threshold. Found: the pairs of rows of one
problem that the clustering (queries/neardup/clusters.py: datasketch's LSH, confirmed by estimated Jaccard,
connected components) puts in one cluster at that threshold. Recall: truth pairs found; precision (linked): of
the pairs of one problem that LSH proposed and their signatures confirmed (the links clusters are made of), those
that are truth pairs; precision (in one cluster): of the found pairs, those that are truth pairs (clusters chain
members through others, so a pair of one cluster can be less alike than the threshold; "≥ t - 0.1": found pairs
whose exact similarity is at most 0.1 under it). Pairs a cluster holds across problems are counted apart: the truth does not judge them. Prints a
Markdown table with the date and the command.
"""

from __future__ import annotations

import argparse
import re
import sys
import time
from collections import defaultdict
from datetime import UTC, datetime
from itertools import combinations
from pathlib import Path

import numpy as np

import queries.neardup.shingles as shingles_module
from queries.neardup.clusters import components
from queries.neardup.shingles import shingles, signature, tokens
from queries.store import LOCATION_COLUMNS, Store


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("store", type=Path)
    parser.add_argument("--thresholds", default="0.5,0.7,0.85")
    parser.add_argument("--keep-names", action="store_true",
                        help="measure the alternative shingles.py rejects: local names not normalised")
    args = parser.parse_args()
    if args.keep_names:
        shingles_module._NAME = re.compile(r"(?!x)x")  # matches nothing: every name stays itself
    store = Store(args.store)
    index = store.read_index(["id", "problem_key", "ref_chars", *LOCATION_COLUMNS])
    ref_chars = dict(zip(index["id"].to_pylist(), index["ref_chars"].to_pylist(), strict=True))
    locations = zip(*(index[c].to_pylist() for c in ("id", *LOCATION_COLUMNS)), strict=True)
    candidates = {row_id: x[ref_chars[row_id]:] for row_id, x in store.programs(locations)}
    ids = [i for i in index["id"].to_pylist() if tokens(candidates[i])]  # as the command: no tokens, no cluster
    problem = dict(zip(index["id"].to_pylist(), index["problem_key"].to_pylist(), strict=True))
    sets = {i: shingles(tokens(candidates[i])) for i in ids}
    signatures = np.stack([signature(candidates[i])[1] for i in ids])
    by_problem = defaultdict(list)
    for n, i in enumerate(ids):
        by_problem[problem[i]].append(n)
    similarity = {}
    for members in by_problem.values():
        for a, b in combinations(members, 2):
            sa, sb = sets[ids[a]], sets[ids[b]]
            similarity[a, b] = len(sa & sb) / len(sa | sb)
    print(f"date {datetime.now(UTC):%Y-%m-%d %H:%M} UTC; store {args.store}: {len(ids):,} rows with a candidate, "
          f"{len(by_problem):,} problems, {len(similarity):,} pairs within problems"
          + ("; local names NOT normalised" if args.keep_names else ""))
    print(f"command: python {' '.join(sys.argv)}\n")
    print("| threshold | truth pairs | pairs in one cluster | recall | linked pairs | precision (linked) | precision "
          "(in one cluster) | in one cluster, ≥ t − 0.1 | clusters | rows in clusters | pairs across problems | seconds |\n"
          "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    for threshold in (float(t) for t in args.thresholds.split(",")):
        started = time.monotonic()
        links: set[tuple[int, int]] = set()
        component = components(signatures, threshold, links=links)
        seconds = time.monotonic() - started
        truth = {pair for pair, s in similarity.items() if s >= threshold}
        found = {pair for pair in similarity if component[pair[0]] == component[pair[1]]}
        near = sum(similarity[pair] >= threshold - 0.1 for pair in found)
        linked = links & similarity.keys()  # the pairs LSH proposed and their signatures confirmed, in one problem
        sizes = np.bincount(np.unique(component, return_inverse=True)[1])
        across = sum(int(s) * (int(s) - 1) // 2 for s in sizes) - len(found)
        hit = len(truth & found)
        print(f"| {threshold:g} | {len(truth):,} | {len(found):,} | {hit / max(len(truth), 1):.1%} | {len(linked):,} | "
              f"{len(linked & truth) / max(len(linked), 1):.2%} | {hit / max(len(found), 1):.1%} | {near / max(len(found), 1):.1%} | {int((sizes > 1).sum()):,} | "
              f"{int(sizes[sizes > 1].sum()):,} | {across:,} | {seconds:.1f} |")


if __name__ == "__main__":
    main()
