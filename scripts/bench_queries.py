"""Benchmark every question of `queries.api` on a store, next to the same question asked of raw source Parquet.

    python scripts/bench_queries.py --store .bench/store --raw .bench/corpus [--repeat 20] [--raw-repeat 3]

For each question prints: cold (fresh connection: connect + first answer, median of --cold runs), warm median and
p95 over --repeat runs (memoized answers where the API memoizes), the same with the memo off ("comp"), then the raw figures: DuckDB straight over `--raw`/*.parquet (train.parquet, test.parquet),
parsing nothing. Raw proxies: a row's problem is md5 of the first 400 characters of `x` (the imports and the
`Model` docstring; cheap, not the ingest's normalized fingerprint), its candidate md5 of the last 2000
characters; raw rows have no static error types, so "failures" there is a count of null `y`; a raw row is fetched
by its position in the split's file. Also prints the connect time and peak RSS after the store questions.
"""

from __future__ import annotations

import argparse
import resource
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path

import duckdb

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from common.settings import Settings, load_settings  # noqa: E402
from queries import api  # noqa: E402
from queries.db import clear_cache, connect  # noqa: E402
from queries.filters import Filters  # noqa: E402

PROXY_CHARS = 400
RAW_SETUP = """
CREATE VIEW raw AS
SELECT x, y, problem_id, holdout_group,
       CASE WHEN filename LIKE '%test%' THEN 'test' ELSE 'train' END AS split,
       md5(left(x, 400)) AS pkey, md5(right(x, 2000)) AS ckey
FROM raw_files;
"""


def timed(fn: Callable[[], object], repeat: int) -> list[float]:
    times = []
    for _ in range(repeat):
        started = time.perf_counter()
        fn()
        times.append((time.perf_counter() - started) * 1000)
    return times


def p95(times: list[float]) -> float:
    ordered = sorted(times)
    return ordered[min(len(ordered) - 1, round(0.95 * (len(ordered) - 1)))]


def store_questions(store: Path, settings: Settings) -> dict[str, Callable[[], object]]:
    problems = api.problems(store, settings)
    key = problems["problem_key"][0].as_py()
    row_id = problems["best_id"][len(problems) // 2].as_py()
    test_only = Filters(split="test")
    return {
        "overview": lambda: api.overview(store, settings),
        "overview (test, failed)": lambda: api.overview(store, settings, Filters(split="test", status="failed")),
        "problems table": lambda: api.problems(store, settings),
        "problems table (test)": lambda: api.problems(store, settings, test_only),
        "problem summary": lambda: api.problem_summary(store, settings, key),
        "problem latencies": lambda: api.problem_latencies(store, settings, key),
        "fastest 20": lambda: api.fastest(store, settings, key, 20),
        "failures": lambda: api.failures(store, settings),
        "failure examples": lambda: api.failure_examples(store, settings),
        "overlap": lambda: api.overlap(store, settings),
        "row (program + parse)": lambda: api.row(store, settings, row_id),
        "search substring (rare)": lambda: api.search_code(store, settings, "no such text anywhere", limit=100),
        "search regex (common)": lambda: api.search_code(store, settings, r"tl\.program_id\(\d\)", regex=True),
        "export fastest correct": lambda: api.export(store, settings, fastest_correct=True),
        "console group by": lambda: api.console(store, settings, "SELECT split, count(*) FROM programs GROUP BY split"),
    }


def raw_questions(con: duckdb.DuckDBPyConnection) -> dict[str, Callable[[], object]]:
    key = con.sql("SELECT pkey FROM raw GROUP BY pkey ORDER BY count(*) DESC LIMIT 1").fetchall()[0][0]
    q = {
        "overview": "SELECT count(*), count(y), quantile_cont(y, [0.1, 0.5, 0.9]) FROM raw",
        "overview (test, failed)": "SELECT count(*) FROM raw WHERE split = 'test' AND y IS NULL",
        "problems table": "SELECT pkey, count(DISTINCT ckey), count(*), count(*) FILTER (WHERE y IS NULL), min(y), quantile_cont(y, [0.1, 0.5, 0.9]), max(y), arg_min(x, y) FROM raw GROUP BY pkey",
        "problems table (test)": "SELECT pkey, count(*), count(*) FILTER (WHERE y IS NULL), min(y), quantile_cont(y, [0.1, 0.5, 0.9]), max(y), arg_min(x, y) FROM raw WHERE split = 'test' GROUP BY pkey",
        "problem summary": "SELECT count(*), count(*) FILTER (WHERE y IS NULL), min(y), quantile_cont(y, [0.1, 0.5, 0.9]), max(y), arg_min(x, y) FROM raw WHERE pkey = $key",
        "problem latencies": "SELECT y FROM raw WHERE pkey = $key",
        "fastest 20": ("SELECT ckey, min(y), count(*) FROM raw WHERE pkey = $key AND y IS NOT NULL "
                       "GROUP BY ckey ORDER BY 2 LIMIT 20"),
        "failures": "SELECT split, count(*) FROM raw WHERE y IS NULL GROUP BY split",
        "failure examples": "SELECT left(x, 100) FROM raw WHERE y IS NULL LIMIT 50",
        "overlap": ("SELECT pkey FROM raw GROUP BY pkey HAVING count(*) FILTER (WHERE split = 'train') > 0 "
                    "AND count(*) FILTER (WHERE split = 'test') > 0"),
        "row (program + parse)": "SELECT x FROM raw WHERE split = 'train' LIMIT 1 OFFSET 250000",
        "search substring (rare)": "SELECT left(x, 80) FROM raw WHERE contains(x, 'no such text anywhere') LIMIT 100",
        "search regex (common)": r"SELECT left(x, 80) FROM raw WHERE regexp_matches(x, 'tl\.program_id\(\d\)') LIMIT 100",
        "export fastest correct": ("SELECT * EXCLUDE (x) FROM raw WHERE y IS NOT NULL "
                                   "QUALIFY row_number() OVER (PARTITION BY pkey ORDER BY y) = 1"),
        "console group by": "SELECT split, count(*) FROM raw GROUP BY split",
    }
    return {name: (lambda sql=sql: con.execute(sql, {"key": key} if "$key" in sql else {}).fetchall())
            for name, sql in q.items()}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--store", type=Path, required=True)
    parser.add_argument("--raw", type=Path, help="folder of the source Parquet files the store was built from")
    parser.add_argument("--repeat", type=int, default=20)
    parser.add_argument("--cold", type=int, default=2, help="fresh connections per question")
    parser.add_argument("--raw-repeat", type=int, default=3)
    args = parser.parse_args()
    store = args.store.resolve()
    settings = load_settings()  # once, at the script's entry

    started = time.perf_counter()
    connect(store, settings)
    connect_ms = (time.perf_counter() - started) * 1000
    questions = store_questions(store, settings)
    results: dict[str, dict[str, float]] = {}
    for name, fn in questions.items():
        cold = []
        for _ in range(args.cold):
            clear_cache()
            cold += timed(fn, 1)
        warm = timed(fn, args.repeat)
        db = connect(store, settings)
        db.memo_enabled = False
        computed = timed(fn, args.repeat)
        db.memo_enabled = True
        results[name] = {"cold": statistics.median(cold), "median": statistics.median(warm), "p95": p95(warm),
                         "computed": statistics.median(computed), "computed_p95": p95(computed)}
    rss_gb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024 / 1024

    if args.raw:
        files = sorted(str(p) for p in args.raw.glob("*.parquet"))
        con = duckdb.connect()
        con.read_parquet(files, union_by_name=True, filename=True).create_view("raw_files")
        con.execute(RAW_SETUP)
        for name, fn in raw_questions(con).items():
            times = timed(fn, args.raw_repeat)
            results[name].update(raw_median=statistics.median(times), raw_p95=p95(times))

    rows = api.overview(store, settings).totals["rows"]
    print(f"store {store} ({rows} rows); connect {connect_ms:.0f} ms; peak RSS {rss_gb:.2f} GB; "
          f"warm n={args.repeat}, cold n={args.cold}, raw n={args.raw_repeat}")
    print("warm: answers memoized per connection where the API memoizes; computed: memo off, every query run")
    print(f"{'question':<26} {'cold ms':>8} {'warm med':>8} {'warm p95':>8} {'comp med':>8} {'comp p95':>8} "
          f"{'raw med':>9} {'raw p95':>9}")
    for name, r in results.items():
        raw = (f"{r['raw_median']:>9.1f} {r['raw_p95']:>9.1f}" if "raw_median" in r else f"{'-':>9} {'-':>9}")
        print(f"{name:<26} {r['cold']:>8.1f} {r['median']:>8.1f} {r['p95']:>8.1f} {r['computed']:>8.1f} "
              f"{r['computed_p95']:>8.1f} {raw}")


if __name__ == "__main__":
    main()
