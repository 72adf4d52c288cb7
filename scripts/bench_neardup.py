"""Near-duplicate links and clusters against exact Jaccard similarity: precision and recall on a store's candidates.

    python scripts/bench_neardup.py STORE [--thresholds 0.5,0.7,0.85] [--keep-names]

Truth: every pair of rows of one problem (same problem key) whose candidate parts' exact Jaccard similarity of
normalised token 5-grams (queries/neardup/shingles.py, as Python sets of the 5-gram strings) reaches the
threshold. Three answers of queries/neardup/clusters.py at that threshold are scored over the same pairs:
**links** (the direct pairs: LSH proposed them and the similarity, estimated or exact, confirmed them), **one
cluster** (the pairs a cluster holds: what pages show and fold) and **one component** (the pairs the links
connect, chains included: what the training export keeps whole). Precision: of the pairs an answer gives, those
that are truth pairs; recall: of the truth pairs, those it gives. Rows of one normalised text share a signature,
so a pair of them is a link. Pairs a cluster holds across problems are counted apart: the truth does not judge
them. Prints a Markdown table with the date and the command.
"""

from __future__ import annotations

import argparse
import sys
import time
from collections import defaultdict
from datetime import UTC, datetime
from itertools import combinations
from pathlib import Path

import numpy as np

import queries.neardup.shingles as shingles_module
from queries.neardup.clusters import group
from queries.neardup.shingles import shingles, signature, tokens
from queries.store import LOCATION_COLUMNS, Store


class _Everything:
    """A keyword set that holds every name: no name is normalised (`--keep-names`)."""

    def __contains__(self, item: object) -> bool:
        return True


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("store", type=Path)
    parser.add_argument("--thresholds", default="0.5,0.7,0.85")
    parser.add_argument("--keep-names", action="store_true",
                        help="measure the alternative shingles.py rejects: local names not normalised")
    args = parser.parse_args()
    if args.keep_names:
        shingles_module._KEEP = _Everything()
    store = Store(args.store)
    index = store.read_index(["id", "problem_key", "ref_chars", *LOCATION_COLUMNS])
    ref_chars = dict(zip(index["id"].to_pylist(), index["ref_chars"].to_pylist(), strict=True))
    locations = zip(*(index[c].to_pylist() for c in ("id", *LOCATION_COLUMNS)), strict=True)
    candidates = {row_id: x[ref_chars[row_id]:] for row_id, x in store.programs(locations)}
    ids = [i for i in index["id"].to_pylist() if tokens(candidates[i])]  # as the command: no tokens, no cluster
    problem = dict(zip(index["id"].to_pylist(), index["problem_key"].to_pylist(), strict=True))
    sets = {i: shingles(tokens(candidates[i])) for i in ids}
    sketches = [signature(candidates[i]) for i in ids]
    distinct: dict[bytes, int] = {}  # as the command: one signature per normalised text
    of = np.array([distinct.setdefault(digest, len(distinct)) for digest, _, _ in sketches])
    first = {d: n for n, d in reversed(list(enumerate(of.tolist())))}
    signatures = np.stack([sketches[first[d]][1] for d in range(len(distinct))])
    shingle_sets = [sketches[first[d]][2] for d in range(len(distinct))]
    by_problem = defaultdict(list)
    for n, i in enumerate(ids):
        by_problem[problem[i]].append(n)
    similarity = {}
    for members in by_problem.values():
        for a, b in combinations(members, 2):
            sa, sb = sets[ids[a]], sets[ids[b]]
            similarity[a, b] = len(sa & sb) / len(sa | sb)
    print(f"date {datetime.now(UTC):%Y-%m-%d %H:%M} UTC; store {args.store}: {len(ids):,} rows with a candidate "
          f"({len(distinct):,} distinct), {len(by_problem):,} problems, {len(similarity):,} pairs within problems"
          + ("; local names NOT normalised" if args.keep_names else ""))
    print(f"command: python {' '.join(sys.argv)}\n")
    print("| threshold | truth pairs | links: pairs / precision / recall | one cluster: pairs / precision / recall | "
          "one component: pairs / precision / recall | clusters (rows) | components (rows) | cluster pairs "
          "across problems | seconds |\n|---|---:|---|---|---|---|---|---:|---:|")
    for threshold in (float(t) for t in args.thresholds.split(",")):
        started = time.monotonic()
        grouping = group(signatures, shingle_sets, threshold)
        seconds = time.monotonic() - started
        truth = {pair for pair, s in similarity.items() if s >= threshold}
        linked = {(int(a), int(b)) for a, b in grouping.links}
        answers = {
            "links": {p for p in similarity if of[p[0]] == of[p[1]] or (min(of[p[0]], of[p[1]]),
                                                                        max(of[p[0]], of[p[1]])) in linked},
            "cluster": {p for p in similarity if grouping.cluster[of[p[0]]] == grouping.cluster[of[p[1]]]},
            "component": {p for p in similarity if grouping.component[of[p[0]]] == grouping.component[of[p[1]]]},
        }
        cells = [f"{len(found):,} / {len(found & truth) / max(len(found), 1):.2%} / "
                 f"{len(found & truth) / max(len(truth), 1):.1%}" for found in answers.values()]
        groups = [_sizes(grouping.cluster[of]), _sizes(grouping.component[of])]
        across = int((groups[0] * (groups[0] - 1) // 2).sum()) - len(answers["cluster"])
        print(f"| {threshold:g} | {len(truth):,} | {' | '.join(cells)} | "
              + " | ".join(f"{int((s > 1).sum()):,} ({int(s[s > 1].sum()):,})" for s in groups)
              + f" | {across:,} | {seconds:.1f} |")


def _sizes(labels: np.ndarray) -> np.ndarray:
    return np.bincount(np.unique(labels, return_inverse=True)[1])


if __name__ == "__main__":
    main()
