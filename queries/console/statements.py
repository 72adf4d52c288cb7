"""Read-only SQL console over the index (`programs`), per-problem stats (`problem_stats`), run results
(`runs`, `runs_latest`) and CPU triage results (`triage`, `triage_latest`). Program text is not reachable from here: use the code search.

A statement runs only if it is one SELECT / WITH / FROM / DESCRIBE / SHOW / SUMMARIZE, or EXPLAIN [ANALYZE] of
one; it is refused, with a `ConsoleError` naming the reason, when it is anything else (writes, ATTACH, COPY,
INSTALL/LOAD, SET, PRAGMA, CALL, several statements, a PIVOT without an IN list), reads files, returns more than
`max_rows` rows or runs past `timeout_s`. The connection itself has external access disabled and its
configuration locked, so a statement that slipped past these checks still could not touch files, the network or
settings.

Time and memory are enforced from outside the statement: `console()` hands it to a child process
(`queries.console.pool`, `queries.console.child`) that has an address-space limit and is killed when it runs past
its time, so neither a list or string generator that ignores DuckDB's own limits nor a parser crash can take the
explorer's process or its host down. Parsing, checks and the query all happen in that child (`statement_result`).
"""

from __future__ import annotations

import re
from pathlib import Path

import duckdb
import pyarrow as pa

from common.errors import TlxError
from common.settings import Settings
from queries.console import pool as console_pool
from queries.db import Database, QueryTimeout
from queries.store import StoreError

MAX_SQL_CHARS = 20_000
MAX_ROWS_CAP = 100_000

_ST = duckdb.StatementType
_REFUSED = {
    _ST.ATTACH: "ATTACH is not allowed: the console reads only the loaded tables",
    _ST.DETACH: "DETACH is not allowed: the console reads only the loaded tables",
    _ST.COPY: "COPY is not allowed: the console neither reads nor writes files (use the Export page)",
    _ST.EXPORT: "EXPORT DATABASE is not allowed: the console writes no files (use the Export page)",
    _ST.LOAD: "INSTALL and LOAD are not allowed: no extensions can be added",
    _ST.SET: "SET, RESET and USE are not allowed: the console's settings are locked",
    _ST.VARIABLE_SET: "SET VARIABLE is not allowed: the console's settings are locked",
    _ST.PRAGMA: "PRAGMA is not allowed: use SELECT over duckdb_* table functions instead",
    _ST.CALL: "CALL / CHECKPOINT are not allowed in the console",
    _ST.MULTI: "a PIVOT needs an IN list of the values to pivot on in the console (without one, DuckDB would create "
               "a type first): PIVOT programs ON split IN ('train', 'test') USING count(*)",
}
_READS = (_ST.SELECT,)
_FILE_FUNCTION = re.compile(
    r'(?<![\w."])"?(read_\w+|\w+_scan|glob|sniff_csv|parquet_\w+|iceberg_\w+|delta_\w+|load_\w+)"?\s*\(',
    re.IGNORECASE,
)
_COMMENT_OR_STRING = re.compile(r"'(?:[^']|'')*'|--[^\n]*|/\*.*?\*/", re.DOTALL)
_EXPLAIN = re.compile(r"^\s*explain(\s+analy[sz]e)?\s+(?P<inner>.*)$", re.IGNORECASE | re.DOTALL)


class ConsoleError(TlxError):
    """A console statement was refused or failed; the message says why."""


def _code_only(sql: str) -> str:
    """The statement with string literals and comments blanked out, same length (for keyword checks)."""

    def blank(match: re.Match) -> str:
        found = match.group(0)
        return "'" + " " * (len(found) - 2) + "'" if found.startswith("'") else " " * len(found)

    return _COMMENT_OR_STRING.sub(blank, sql)


def _one_statement(con: duckdb.DuckDBPyConnection, sql: str) -> duckdb.Statement:
    try:
        statements = con.extract_statements(sql)
    except duckdb.Error as exc:
        raise ConsoleError(f"cannot parse the statement: {str(exc).splitlines()[0]}") from exc
    if not statements:
        raise ConsoleError("enter a SQL statement")
    if len(statements) > 1:
        raise ConsoleError(f"one statement at a time, please ({len(statements)} given)")
    return statements[0]


def _check(con: duckdb.DuckDBPyConnection, sql: str) -> tuple[str, bool]:
    """(statement text without trailing ';', whether it is an EXPLAIN); ConsoleError when refused."""
    statement = _one_statement(con, sql)
    code = _code_only(sql)
    hit = _FILE_FUNCTION.search(code)
    if hit:
        raise ConsoleError(f"{hit.group(1)}() is not allowed: the console reads no files, only the loaded tables")
    text = statement.query.strip().rstrip(";").strip()
    if statement.type == _ST.EXPLAIN:
        match = _EXPLAIN.match(_code_only(text))
        inner = _one_statement(con, text[match.start("inner"):]) if match else None
        if inner is None or inner.type not in _READS:
            raise ConsoleError("EXPLAIN is allowed only for a read statement (SELECT, WITH, ...)")
        return text, True
    if statement.type in _REFUSED:
        raise ConsoleError(_REFUSED[statement.type])
    if statement.type not in _READS:
        kind = statement.type.name.replace("_", " ")
        raise ConsoleError(f"{kind} statements are not allowed: the console is read-only "
                           "(SELECT, WITH, FROM, DESCRIBE, SHOW, SUMMARIZE, EXPLAIN)")
    return text, False


def statement_result(db: Database, sql: str, max_rows: int, timeout_s: float) -> pa.Table:
    """Check and run one statement on `db` (inside the console's child process); ConsoleError when refused,
    too long, too big or failing."""
    text, is_explain = _check(db.con, sql)
    # The user's statement is the query itself (checked above to be one read statement); it is wrapped, not
    # interpolated with values, and the row cap is an int we own.
    wrapped = text if is_explain else f"SELECT * FROM (\n{text}\n) AS console_result LIMIT {max_rows + 1}"  # noqa: S608
    try:
        table = db.run(wrapped, timeout_s=timeout_s, label="the statement")
    except QueryTimeout as exc:
        raise ConsoleError(f"{exc}; narrow it down or add a LIMIT") from exc
    except duckdb.PermissionException as exc:
        raise ConsoleError("file and network access are disabled in the console") from exc
    except duckdb.OutOfMemoryException as exc:
        raise ConsoleError(f"the statement needs more memory than the console allows "
                           f"({str(exc).splitlines()[0]}); narrow it down or aggregate") from exc
    except duckdb.Error as exc:
        raise ConsoleError(f"{type(exc).__name__}: {str(exc).splitlines()[0]}") from exc
    if table.num_rows > max_rows:
        raise ConsoleError(f"the result has more than {max_rows} rows; add a LIMIT or aggregate")
    return table


def console(store: Path | str, settings: Settings, sql: str, max_rows: int = 1000,
            timeout_s: float = 5.0) -> pa.Table:
    """The result of one read-only statement, run in a console worker process with a time and memory limit;
    ConsoleError when refused, too long, too big or failing; StoreError when the store cannot be opened."""
    if not isinstance(sql, str) or not sql.strip():
        raise ConsoleError("enter a SQL statement")
    if len(sql) > MAX_SQL_CHARS:
        raise ConsoleError(f"the statement is {len(sql)} characters long; the console takes {MAX_SQL_CHARS}")
    request = {"sql": sql, "max_rows": max(1, min(int(max_rows), MAX_ROWS_CAP)), "timeout_s": float(timeout_s)}
    try:
        header, payload = console_pool.ask(Path(store), settings.runs_dir, request, float(timeout_s))
    except console_pool.WorkerFailure as exc:
        raise ConsoleError(exc.user_message) from exc
    if header.get("kind") == "store":
        raise StoreError(header["error"])
    if "error" in header:
        raise ConsoleError(header["error"])
    return pa.ipc.open_stream(payload).read_all()
