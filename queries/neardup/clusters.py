"""Near-duplicate links, components and clusters from MinHash signatures and shingle sets.

Links: datasketch's LSH proposes pairs; a pair is a link when its Jaccard similarity reaches the threshold.
`MinHashLSH` picks bands for a threshold `LSH_SLACK` under the one asked (for 0.7, its bands for 0.6 at 256
permutations: 32 bands of 8 values, which propose a pair at 0.7 with probability 0.85 and one at 0.75 with 0.97,
where the bands for 0.7 itself would give 0.51 and 0.77) and keeps, per band, a table of every signature; to
bound memory the bands are indexed a few at a time (`BANDS_AT_ONCE`):
each group's index is built over all signatures, its buckets are read, and it is dropped before the next
group's. A bucket larger than `FULL_BUCKET` pairs each member with its first `ANCHORS` members only (its members
already agree on a band, so they are usually all alike). A proposed pair is decided by its estimated similarity
(the share of equal MinHash values) when that lies `SURE` or more from the threshold (3 standard deviations of
the 256-value estimate), and by the exact Jaccard similarity of the two shingle sets otherwise.

Components: the connected components of the links. Two members of one component may be far apart through
members between them (A ~ B ~ C); a component holds every link of its members, so a split that keeps components
whole separates no linked pair (the training export's promise, queries/export_train.py).

Clusters: a partition of each component in which every two members are near-copies (similarity ≥ threshold,
decided as a link is). Greedily: the member with the most links not yet in a cluster starts one, and its
unclustered neighbours join it, most alike first, each only if it is alike to every member already in.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
from datasketch import LeanMinHash, MinHashLSH

from queries.neardup.shingles import NUM_PERM, SEED

THRESHOLD = 0.7  # BigCode's near-deduplication setting
BANDS_AT_ONCE = 3
FULL_BUCKET = 64
ANCHORS = 16
SURE = 0.1  # an estimate this far from the threshold decides a pair; nearer, the exact similarity does
LSH_SLACK = 0.1  # LSH's bands are chosen for the threshold less this (more pairs proposed, each then decided)


@dataclass(frozen=True)
class Grouping:
    """Per signature: `cluster` and `component`, each the smallest index of the signatures sharing it (int64[n]);
    `links`: the linked pairs (int64[k, 2], i < j)."""

    cluster: np.ndarray
    component: np.ndarray
    links: np.ndarray


def lsh_params(threshold: float) -> tuple[int, int]:
    """(bands, rows per band) datasketch chooses for `threshold` at NUM_PERM permutations."""
    lsh = MinHashLSH(threshold=threshold, num_perm=NUM_PERM)
    return lsh.b, lsh.r


def group(signatures: np.ndarray, sets: list[np.ndarray], threshold: float = THRESHOLD,
          progress: Callable[[str], None] | None = None) -> Grouping:
    """Links, components and clusters of `signatures` (uint32[n, NUM_PERM]) whose shingle sets (sorted distinct
    uint32 arrays) are `sets`."""
    judge = _Judge(signatures, sets, threshold)
    links = _links(judge, progress)
    component = _components(len(signatures), links)
    if progress:
        progress(f"{len(links):,} links; clusters")
    return Grouping(_clusters(judge, links), component, links)


def band_groups(bands: int) -> list[int]:
    """`bands` split into groups of at most BANDS_AT_ONCE, as even as can be (datasketch wants 2 or more each)."""
    count = -(-bands // BANDS_AT_ONCE)
    return [bands // count + (i < bands % count) for i in range(count)]


class _Judge:
    """Whether pairs are near-copies: by the estimate where it is sure, else by exact Jaccard."""

    def __init__(self, signatures: np.ndarray, sets: list[np.ndarray], threshold: float):
        self.signatures, self.sets, self.threshold = signatures, sets, threshold

    def alike_to_all(self, one: int, others: np.ndarray, their_signatures: np.ndarray) -> bool:
        """Whether `one` is a near-copy of every one of `others` (whose signatures are given)."""
        estimate = (their_signatures == self.signatures[one]).mean(axis=1)
        if (estimate < self.threshold - SURE).any():
            return False
        unsure = np.flatnonzero(estimate < self.threshold + SURE)
        return all(self.exact(one, int(others[k])) >= self.threshold for k in unsure)

    def exact(self, i: int, j: int) -> float:
        a, b = self.sets[i], self.sets[j]
        if len(a) > len(b):
            a, b = b, a
        at = np.searchsorted(b, a)
        shared = int((b[np.minimum(at, len(b) - 1)] == a).sum())
        return shared / (len(a) + len(b) - shared)


def _links(judge: _Judge, progress: Callable[[str], None] | None) -> np.ndarray:
    """The linked pairs (i < j), sorted, each once."""
    signatures = judge.signatures
    n = len(signatures)
    bands, rows = lsh_params(max(judge.threshold - LSH_SLACK, 0.05))
    seen = np.empty(0, np.int64)  # pairs already decided (i * n + j), linked or not
    linked = [np.empty(0, np.int64)]
    done = 0
    for size in band_groups(bands):
        values = signatures[:, done * rows : (done + size) * rows]  # this group's bands: an index of their own
        lsh = MinHashLSH(num_perm=size * rows, params=(size, rows))
        with lsh.insertion_session() as session:
            for i in range(n):
                session.insert(i, LeanMinHash(seed=SEED, hashvalues=values[i], scheme="affine32"),
                               check_duplication=False)
        proposed = []
        for table in lsh.hashtables:
            for key in table.keys():
                members = table.get(key)
                if len(members) > 1:
                    proposed.append(_pairs(np.sort(np.fromiter(members, np.int64, len(members))), n))
        del lsh
        pairs = np.setdiff1d(np.unique(np.concatenate(proposed)) if proposed else seen[:0], seen,
                             assume_unique=True)
        linked.append(pairs[_decide(judge, pairs // n, pairs % n)])
        seen = np.union1d(seen, pairs)
        done += size
        if progress:
            progress(f"LSH bands {done}/{bands}")
    keys = np.sort(np.concatenate(linked))
    return np.stack([keys // n, keys % n], axis=1)


def _pairs(members: np.ndarray, n: int) -> np.ndarray:
    """A bucket's pairs (i * n + j, i < j): all of them, or each member with the first ANCHORS."""
    anchors = members[:ANCHORS] if len(members) > FULL_BUCKET else members
    i, j = np.meshgrid(anchors, members, indexing="ij")
    keep = i < j
    return i[keep] * n + j[keep]


def _decide(judge: _Judge, first: np.ndarray, second: np.ndarray) -> np.ndarray:
    """bool per pair: linked (the estimate in chunks of pairs, exact similarity where it is unsure)."""
    result = np.zeros(len(first), bool)
    for start in range(0, len(first), 8192):
        a, b = first[start : start + 8192], second[start : start + 8192]
        estimate = (judge.signatures[a] == judge.signatures[b]).mean(axis=1)
        result[start : start + len(a)] = estimate >= judge.threshold + SURE
        for k in np.flatnonzero((estimate >= judge.threshold - SURE) & (estimate < judge.threshold + SURE)):
            result[start + k] = judge.exact(int(a[k]), int(b[k])) >= judge.threshold
    return result


def _components(n: int, links: np.ndarray) -> np.ndarray:
    """The smallest index of each signature's connected component."""
    parent = np.arange(n, dtype=np.int64)
    for i, j in links.tolist():
        a, b = _find(parent, i), _find(parent, j)
        if a != b:
            parent[max(a, b)] = min(a, b)
    return np.array([_find(parent, i) for i in range(n)], np.int64)


def _clusters(judge: _Judge, links: np.ndarray) -> np.ndarray:
    """Each signature's cluster (the smallest index in it): every two members of a cluster are alike."""
    n = len(judge.signatures)
    ends = np.concatenate([links, links[:, ::-1]]) if len(links) else np.empty((0, 2), np.int64)
    ends = ends[np.lexsort((ends[:, 1], ends[:, 0]))]
    starts = np.searchsorted(ends[:, 0], np.arange(n + 1))
    cluster = np.full(n, -1, np.int64)
    for centre in np.argsort(-np.diff(starts), kind="stable").tolist():
        if cluster[centre] >= 0:
            continue
        neighbours = ends[starts[centre] : starts[centre + 1], 1]
        neighbours = neighbours[cluster[neighbours] < 0]
        members = np.empty(len(neighbours) + 1, np.int64)  # the centre, then those that joined
        kept = np.empty((len(neighbours) + 1, judge.signatures.shape[1]), judge.signatures.dtype)  # their signatures
        members[0], kept[0], count = centre, judge.signatures[centre], 1
        if len(neighbours):
            closeness = (judge.signatures[neighbours] == judge.signatures[centre]).sum(axis=1)
            for v in neighbours[np.argsort(-closeness, kind="stable")].tolist():
                if judge.alike_to_all(v, members[1:count], kept[1:count]):  # alike to the centre: a link
                    members[count], kept[count], count = v, judge.signatures[v], count + 1
        cluster[members[:count]] = members[:count].min()
    return cluster


def _find(parent: np.ndarray, i: int) -> int:
    while parent[i] != i:
        parent[i] = parent[parent[i]]
        i = int(parent[i])
    return i
