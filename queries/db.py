"""The DuckDB connection factory and the one `execute(sql_name, params)` path, with a time limit.

`connect(store, settings)` loads the store's `index.parquet`, the run results and the CPU triage results (of
`settings.runs_dir`) into in-memory tables, then locks the connection down: no file or network access, no
Python-variable scans, configuration locked. Small answers can be memoized per connection (`execute(...,
memo=True)`), dropped whenever the run or triage results change. One connection is kept per (store path, store
version, runs dir), so a rebuilt store is noticed; new result files are noticed on the next `connect()` and reload
only the `runs` table (new triage files: the `triage` table). Queries run on their own cursor and are interrupted
from a timer thread past their limit. Program text never enters DuckDB.
"""

from __future__ import annotations

import threading
from pathlib import Path

import duckdb
import pyarrow as pa

from common.errors import TlxError
from common.results_log import results_signature
from common.settings import Settings
from common.triage_log import triage_signature
from queries.checks_table import checks_table, outcome_labels_table, outcomes_table
from queries.memo import Memo
from queries.results import load_run_results
from queries.sql_files import sql_text
from queries.store import INDEX_SCHEMA, OPTIONAL_COLUMNS, Store, StoreError, store_version
from queries.triage import TriageReader

MEMO_BYTES = 64 * 1024 * 1024


class QueryTimeout(TlxError, RuntimeError):
    """A query ran past its time limit and was interrupted."""


class Database:
    """One locked-down in-memory DuckDB over one store (+ run results and CPU triage results)."""

    def __init__(self, store: Store, runs_dir: Path | None, settings: Settings):
        self.store = store
        self.runs_dir = runs_dir
        self.timeout_s = settings.query_timeout_s
        self._lock = threading.Lock()
        self._memo = Memo(MEMO_BYTES, largest_bytes=MEMO_BYTES // 4)
        self.memo_enabled = True
        # External access is on only while the index is loaded, then switched off and the configuration locked.
        self.con = duckdb.connect(
            ":memory:",
            config={
                "threads": settings.duckdb_threads,
                "memory_limit": settings.duckdb_memory,
                "python_enable_replacements": False,
                "autoinstall_known_extensions": False,
                "autoload_known_extensions": False,
            },
        )
        try:
            self._load_index()
            self.con.execute("SET enable_external_access = false")
        except BaseException:
            self.con.close()
            raise
        self.con.register("checks_arrow", checks_table())
        self.con.execute(sql_text("setup_checks"))
        self.con.unregister("checks_arrow")
        self.con.register("outcomes_arrow", outcomes_table())
        self.con.register("outcome_labels_arrow", outcome_labels_table())
        self.con.execute(sql_text("setup_outcomes"))
        self.con.unregister("outcomes_arrow")
        self.con.unregister("outcome_labels_arrow")
        self.con.execute(sql_text("setup_row_flags"))
        self.con.execute(sql_text("setup_filtered"))
        self.con.execute(sql_text("setup_causes"))
        self.con.execute(sql_text("setup_problems"))
        self._runs_signature: tuple | None = None
        self._flagged_signature: tuple | None = None
        self._triage_signature: tuple | None = None
        self._triage_reader = TriageReader(self.store.path, self.runs_dir)
        self.refresh_runs()
        self.refresh_triage()
        self.con.execute("SET lock_configuration = true")

    def _load_index(self) -> None:
        path = self.store.index_path
        try:
            self.con.execute(sql_text("setup_programs"), {"index_path": str(path)})
        except duckdb.Error as exc:
            raise StoreError(f"{path}: cannot read the index ({str(exc).splitlines()[0]})") from exc
        self.con.execute(sql_text("setup_optional_columns"))
        columns = {row[0] for row in self.con.execute("DESCRIBE programs").fetchall()}
        missing = [name for name in INDEX_SCHEMA.names if name not in columns and name not in OPTIONAL_COLUMNS]
        rows = self.con.execute("SELECT count(*) FROM programs").fetchall()[0][0]
        if missing or not rows:
            reason = f"lacks columns {', '.join(missing)}" if missing else "holds no rows"
            raise StoreError(f"{path}: the index {reason}; rebuild the store")

    def refresh_runs(self) -> None:
        """Reload the `runs` table when the result files changed since the last load."""
        signature = results_signature(self.store.path, self.runs_dir)
        if signature == self._runs_signature:
            return
        with self._lock:
            if signature == self._runs_signature:
                return
            table = load_run_results(self.store.path, self.runs_dir)
            cursor = self.con.cursor()
            try:
                cursor.register("runs_arrow", table)
                cursor.execute(sql_text("setup_runs"))
                cursor.unregister("runs_arrow")
                flagged = cursor.execute(sql_text("flagged_signature")).fetchall()[0]
                if flagged != self._flagged_signature:  # the ranked rows changed: ~1 s on 601k rows, so not always
                    cursor.execute(sql_text("setup_problem_stats"))
                    self._flagged_signature = flagged
            finally:
                cursor.close()
            self._runs_signature = signature
            self._memo.clear()

    def refresh_triage(self) -> None:
        """When the triage files changed since the last load: read the lines added since (every line when a file
        was removed, replaced or cut short: `queries.triage.TriageReader`) and rebuild the `triage` table and the
        rows' triage columns."""
        signature = triage_signature(self.store.path, self.runs_dir)
        if signature == self._triage_signature:
            return
        with self._lock:
            if signature == self._triage_signature:
                return
            table, full = self._triage_reader.read()  # only the lines added since the last load, unless `full`
            cursor = self.con.cursor()
            try:
                cursor.register("triage_new", table)
                if full:
                    cursor.execute(sql_text("setup_triage_lines"))
                cursor.execute(sql_text("setup_triage"))
                cursor.unregister("triage_new")
            except BaseException:
                self._triage_reader = TriageReader(self.store.path, self.runs_dir)  # read everything next time
                raise
            finally:
                cursor.close()
            self._triage_signature = signature
            self._memo.clear()

    def run(self, sql: str, params: dict | None = None, timeout_s: float | None = None,
            label: str = "query", tables: dict[str, pa.Table] | None = None) -> pa.Table:
        """Run SQL on a fresh cursor (with `tables` registered on it under their names); interrupt it after
        `timeout_s` (default: settings)."""
        limit = self.timeout_s if timeout_s is None else timeout_s
        cursor = self.con.cursor()
        for name, table in (tables or {}).items():
            cursor.register(name, table)
        timer = threading.Timer(limit, cursor.interrupt)
        timer.daemon = True
        timer.start()
        try:
            return cursor.sql(sql, params=params or None).to_arrow_table()
        except duckdb.InterruptException as exc:
            raise QueryTimeout(f"{label} stopped after its {limit:g} s time limit") from exc
        finally:
            timer.cancel()
            cursor.close()

    def execute(self, sql_name: str, params: dict | None = None, timeout_s: float | None = None,
                tables: dict[str, pa.Table] | None = None, memo: bool = False) -> pa.Table:
        """Run `queries/sql/<sql_name>.sql` with named parameters (only those the SQL names are passed).

        `memo`: keep the answer for the same parameters while this connection's data stays the same (until the
        run results change); bounded to `MEMO_BYTES`, and a question another session is asking waits for its
        answer. Only for code-free answers.
        """
        sql = sql_text(sql_name)
        used = {name: value for name, value in (params or {}).items() if f"${name}" in sql}
        if not (memo and self.memo_enabled) or tables:
            return self.run(sql, used, timeout_s, label=sql_name, tables=tables)
        key = (sql_name, tuple(sorted((name, _hashable(value)) for name, value in used.items())))

        def answer() -> tuple[pa.Table, int]:
            table = self.run(sql, used, timeout_s, label=sql_name)
            return table, table.nbytes

        return self._memo.get_or_compute(key, answer)[0]

    def close(self) -> None:
        self.con.close()


def _hashable(value: object) -> object:
    """A parameter as part of a memo key: a STRUCT's dict as its sorted items (`$filter`)."""
    return tuple(sorted(value.items())) if isinstance(value, dict) else value


_CACHE: dict[tuple[str, int, str], Database] = {}
_CACHE_LOCK = threading.Lock()


def connect(store: Path | str, settings: Settings) -> Database:
    """The cached `Database` of `store` (rebuilt when its meta.json changes), with the run and triage results of
    `settings.runs_dir` and DuckDB's limits from `settings` (read once at the process's entry, passed down)."""
    path = Path(store).expanduser().resolve()
    runs = settings.runs_dir.expanduser().resolve()
    key = (str(path), store_version(path), str(runs))
    with _CACHE_LOCK:
        db = _CACHE.get(key)
        if db is None:
            for stale in [k for k in _CACHE if k[0] == key[0] and k[2] == key[2]]:
                del _CACHE[stale]  # other threads may still be reading it; it closes when dropped
            db = Database(Store(path), runs, settings)
            _CACHE[key] = db
    db.refresh_runs()
    db.refresh_triage()
    return db


def clear_cache() -> None:
    """Close and forget every cached connection (tests, and after a store is deleted)."""
    with _CACHE_LOCK:
        while _CACHE:
            _CACHE.popitem()[1].close()
