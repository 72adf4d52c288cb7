"""Near-duplicate clusters of candidate parts (MinHash + LSH, datasketch): `shingles.py` (normalised tokens,
5-grams, signatures), `clusters.py` (LSH buckets, confirmed pairs, components), `command.py` (`near_dups`: a
store's clusters into its index; `python -m queries near-dups`)."""
