"""Near-duplicate clusters from MinHash signatures: datasketch's LSH proposes pairs, their estimated Jaccard
confirms them, and connected pairs form a cluster.

`MinHashLSH` picks its bands for the threshold (at 0.7 and 256 permutations: 25 bands of 10 values) and
keeps, per band, a table of every signature. To bound memory the bands are indexed a few at a time
(`BANDS_AT_ONCE`): each group's index is built over all signatures, its buckets are read, and it is dropped
before the next group's. Two signatures sharing a bucket are joined when their estimated Jaccard similarity
(the share of equal MinHash values) reaches the threshold; a bucket larger than `FULL_BUCKET` compares each
member with its first `ANCHORS` members only (its members already agree on a band, so they are usually all
alike). Clusters are the connected components of the joined pairs, so two members of one cluster may be less
alike than the threshold through members between them.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
from datasketch import LeanMinHash, MinHashLSH

from queries.neardup.shingles import NUM_PERM, SEED

THRESHOLD = 0.7  # BigCode's near-deduplication setting
BANDS_AT_ONCE = 3
FULL_BUCKET = 64
ANCHORS = 16


def lsh_params(threshold: float) -> tuple[int, int]:
    """(bands, rows per band) datasketch chooses for `threshold` at NUM_PERM permutations."""
    lsh = MinHashLSH(threshold=threshold, num_perm=NUM_PERM)
    return lsh.b, lsh.r


def components(signatures: np.ndarray, threshold: float = THRESHOLD,
               progress: Callable[[int, int], None] | None = None,
               links: set[tuple[int, int]] | None = None) -> np.ndarray:
    """The component of each signature (uint32[n, NUM_PERM]): int64[n], the smallest index in its component.
    `links`, when given, receives every confirmed pair (i < j) (scripts/bench_neardup.py measures them)."""
    n = len(signatures)
    parent = np.arange(n, dtype=np.int64)
    bands, rows = lsh_params(threshold)
    done = 0
    for group in band_groups(bands):
        values = signatures[:, done * rows : (done + group) * rows]  # this group's bands: an index of their own
        lsh = MinHashLSH(num_perm=group * rows, params=(group, rows))
        with lsh.insertion_session() as session:
            for i in range(n):
                session.insert(i, LeanMinHash(seed=SEED, hashvalues=values[i], scheme="affine32"),
                               check_duplication=False)
        for table in lsh.hashtables:
            for key in table.keys():
                members = table.get(key)
                if len(members) > 1:
                    _join(parent, signatures, np.fromiter(members, np.int64, len(members)), threshold, links)
        del lsh
        done += group
        if progress:
            progress(done, bands)
    return _roots(parent, np.arange(n))


def band_groups(bands: int) -> list[int]:
    """`bands` split into groups of at most BANDS_AT_ONCE, as even as can be (datasketch wants 2 or more each)."""
    count = -(-bands // BANDS_AT_ONCE)
    return [bands // count + (i < bands % count) for i in range(count)]


def _join(parent: np.ndarray, signatures: np.ndarray, members: np.ndarray, threshold: float,
          links: set[tuple[int, int]] | None) -> None:
    members.sort()
    if links is None and (_roots(parent, members) == _roots(parent, members[:1])).all():
        return  # joined already, through earlier bands
    anchors = members[:ANCHORS] if len(members) > FULL_BUCKET else members
    same = (signatures[members][:, None, :] == signatures[anchors][None, :, :]).mean(axis=2) >= threshold
    for i, j in zip(*np.nonzero(same), strict=True):
        if links is not None and members[i] != anchors[j]:
            links.add((int(min(members[i], anchors[j])), int(max(members[i], anchors[j]))))
        a, b = _find(parent, int(members[i])), _find(parent, int(anchors[j]))
        if a != b:
            parent[max(a, b)] = min(a, b)


def _roots(parent: np.ndarray, members: np.ndarray) -> np.ndarray:
    """The roots of `members` (their paths shortened on the way)."""
    roots = parent[members]
    while ((above := parent[roots]) != roots).any():
        roots = above
    parent[members] = roots
    return roots


def _find(parent: np.ndarray, i: int) -> int:
    while parent[i] != i:
        parent[i] = parent[parent[i]]
        i = int(parent[i])
    return i
