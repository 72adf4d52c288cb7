"""Whether two stores hold the same index and the same programs (e.g. one built before a change to ingest, one
after, from the same sources).

    python scripts/compare_stores.py STORE_A STORE_B

Prints the index columns that differ (pyarrow `equals`, column by column, every row) and how many ids' code
differs; exits 1 when anything differs. Build information in meta.json (build id, time, seconds) is not compared.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import duckdb
import pyarrow.parquet as pq

from queries.store import INDEX_FILE, code_path


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("store_a", type=Path)
    parser.add_argument("store_b", type=Path)
    args = parser.parse_args()
    a, b = (pq.read_table(s / INDEX_FILE) for s in (args.store_a, args.store_b))
    print(f"index rows: {a.num_rows:,} and {b.num_rows:,}; schemas equal: {a.schema.equals(b.schema)}")
    differing = [c for c in a.column_names if c not in b.column_names or not a[c].equals(b[c])]
    print(f"index columns that differ: {', '.join(differing) or 'none'}; tables equal: {a.equals(b)}")
    shards = [str(code_path(s, 0).parent / "*.parquet") for s in (args.store_a, args.store_b)]
    code = duckdb.sql("SELECT count(*) FROM read_parquet($a) a FULL JOIN read_parquet($b) b USING (id) "
                      "WHERE a.x IS DISTINCT FROM b.x", params={"a": shards[0], "b": shards[1]}).fetchall()[0][0]
    print(f"ids whose code differs: {code:,}")
    return 0 if a.equals(b) and code == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
