"""Ingest, stage 2: mark the programs Python cannot compile, and run the static hack checks on the others, after
stage 1 has put the store in place.

Only Python's parser can tell a syntax error, at ~1.5 ms a program, so this stage runs once the store is already
usable (`python -m queries ingest` runs it right after stage 1 unless `--no-syntax-check`; `python -m queries
check-syntax --store DIR` runs it later). Work is spread over processes by code row groups. Each program's
candidate part is compiled, and each distinct reference once per process; only when one of them fails (or the
candidate holds a `from __future__` import, legal only at the top) is the whole text compiled, so the verdict is
always the whole program's. Then index.parquet is rewritten (`static_error` 'syntax_error' and `parse_mode`
'text' for those rows, `parse_mode` 'ast' for the others; keys never change) and meta.json gets
`syntax_check: {done, rows, syntax_errors, seconds}`, each by an atomic rename, index first (queries/db.py
reconnects when meta.json changes). Interrupted or failed, it leaves the store as stage 1 wrote it.
"""

from __future__ import annotations

import ast
import os
import time
import warnings
from collections import defaultdict
from concurrent.futures import as_completed
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from common.checks import outranked_by
from common.errors import TlxError
from common.program.hack_checks import ReferenceInfo, reference_info, static_flags
from queries.ingest.processes import process_pool, stop_pool
from queries.ingest.progress import Progress, say
from queries.ingest.signals import sigterm_interrupts
from queries.store import INDEX_FILE, Store, code_path, read_meta, replace_file, write_meta

PARALLEL_MIN_ROWS = 5000  # below this, starting worker processes costs more than it saves
TASK_ROWS = 2048
_COMPILE_ERRORS = (SyntaxError, ValueError, RecursionError, MemoryError, OverflowError)
_MEMO_SIZE = 20_000
# per process: reference text -> what the checks need of it, None when it does not compile on its own
_references: dict[str, ReferenceInfo | None] = {}


class SyntaxCheckError(TlxError, RuntimeError):
    """The syntax check could not finish; the store stays as stage 1 wrote it."""


@sigterm_interrupts
def check_syntax(store: str | Path, *, workers: int | None = None, progress: bool = True) -> dict:
    """Run stage 2 on `store`; returns (and records in meta.json) `{done, rows, syntax_errors, seconds}`."""
    started = time.monotonic()
    store = Path(store).expanduser().resolve()
    build_id = Store(store).meta.build_id
    index = pq.read_table(store / INDEX_FILE)
    tasks = _tasks(store, index)
    meter = Progress(index.num_rows, progress, "programs checked")
    try:
        flags = _run(tasks, workers or os.cpu_count() or 1, index.num_rows, meter)
    except Exception as exc:  # a broken part file or worker: the store stays as stage 1 wrote it
        raise SyntaxCheckError(f"{store}: {type(exc).__name__}: {exc}") from exc
    meter.done()
    bad = [row_id for row_id, found in flags.items() if found is None]
    counts: dict[str, int] = {}
    for found in flags.values():
        for name in found or ():
            counts[name] = counts.get(name, 0) + 1
    result = {"done": True, "rows": index.num_rows, "syntax_errors": len(bad), "static_flags": counts,
              "seconds": round(time.monotonic() - started, 2)}
    _publish(store, build_id, _marked(index, flags), result)
    if progress:
        say(f"syntax check: {result['rows']:,} programs, {len(bad):,} syntax errors ({result['seconds']:.1f} s)")
    return result


def _run(tasks: list, workers: int, rows: int, meter: Progress) -> dict[str, list[str] | None]:
    """{row id: its static flags, None when it does not compile}, from worker processes when there are enough
    rows."""
    bad: dict[str, list[str] | None] = {}
    if workers > 1 and rows >= PARALLEL_MIN_ROWS:
        pool = process_pool(workers)
        finished = False
        try:
            futures = [pool.submit(check_rows, *task) for task in tasks]
            for future in as_completed(futures):
                checked, found = future.result()
                bad.update(found)
                meter.advance(checked, "syntax check")
            finished = True
        finally:  # interrupted or failed: the workers are stopped, their work dropped
            stop_pool(pool, finished)
    else:
        for task in tasks:
            checked, found = check_rows(*task)
            bad.update(found)
            meter.advance(checked, "syntax check")
    return bad


def _tasks(store: Path, index: pa.Table) -> list[tuple[str, list[int], dict[str, int]]]:
    """(code part, its row groups, {row id: reference length}) in chunks of about TASK_ROWS rows."""
    rows_of = defaultdict(list)
    columns = (index[name].to_pylist() for name in ("code_shard", "code_rg", "id", "ref_chars"))
    for shard, group, row_id, ref_chars in zip(*columns, strict=True):
        rows_of[(shard, group)].append((row_id, ref_chars))
    tasks, current, key = [], None, None
    for shard, group in sorted(rows_of):
        if current is None or key != shard or len(current[2]) >= TASK_ROWS:
            current = (str(code_path(store, shard)), [], {})
            key = shard
            tasks.append(current)
        current[1].append(group)
        current[2].update(rows_of[(shard, group)])
    return tasks


def check_rows(path: str, groups: list[int], ref_chars: dict[str, int]) -> tuple[int, dict[str, list[str] | None]]:
    """(rows checked, {row id: `check_program`}) for `ref_chars`' rows in row groups `groups`."""
    table = pq.ParquetFile(path).read_row_groups(groups, columns=["id", "x"])
    found = {}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # SyntaxWarning and the like, once per program otherwise
        for row_id, x in zip(table["id"].to_pylist(), table["x"].to_pylist(), strict=True):
            if row_id in ref_chars:
                found[row_id] = check_program(x, ref_chars[row_id])
    return len(ref_chars), found


def check_program(x: str, ref_chars: int) -> list[str] | None:
    """The static flags of `x`, None when it does not compile. Usually only the candidate part is parsed and
    compiled (the reference is memoized); when either part fails alone, the whole text, its statements past the
    reference's lines taken as the candidate."""
    reference, candidate = x[:ref_chars], x[ref_chars:]
    if "__future__" not in candidate and (tree := _compiled(candidate)) is not None:
        if reference not in _references:
            if len(_references) >= _MEMO_SIZE:
                _references.clear()
            ref_tree = _compiled(reference)
            _references[reference] = reference_info(reference, ref_tree) if ref_tree is not None else None
        if (ref := _references[reference]) is not None:
            return static_flags(tree.body, ref, candidate)
    whole = _compiled(x)
    if whole is None:
        return None
    last_reference_line = reference.count("\n")
    ref_body = [s for s in whole.body if s.lineno <= last_reference_line]
    info = reference_info(reference, ast.Module(body=ref_body, type_ignores=[]))
    return static_flags([s for s in whole.body if s.lineno > last_reference_line], info, x[ref_chars:])


def _compiled(source: str) -> ast.Module | None:
    """The syntax tree of `source` when it compiles, else None (compiling the text and parsing it again costs
    less than compiling the tree: the tree would be converted back first)."""
    try:
        compile(source, "<program>", "exec", dont_inherit=True)
        return ast.parse(source, "<program>")
    except _COMPILE_ERRORS:
        return None


def _marked(index: pa.Table, flags: dict[str, list[str] | None]) -> pa.Table:
    bad = [row_id for row_id, found in flags.items() if found is None]
    is_bad = pc.is_in(index["id"], value_set=pa.array(bad, pa.string()))
    outranked = pc.is_in(index["static_error"], value_set=pa.array(outranked_by("syntax_error"), pa.string()))
    static = pc.if_else(pc.and_(is_bad, outranked), pa.scalar("syntax_error"), index["static_error"])
    mode = pc.if_else(is_bad, pa.scalar("text"), pa.scalar("ast"))
    found = pa.array([flags.get(row_id) for row_id in index["id"].to_pylist()], pa.list_(pa.string()))
    index = index.set_column(index.schema.get_field_index("static_error"), "static_error", static)
    at = index.schema.get_field_index("static_flags")  # -1: a store built before the column
    index = index.set_column(at, "static_flags", found) if at >= 0 else index.append_column("static_flags", found)
    return index.set_column(index.schema.get_field_index("parse_mode"), "parse_mode", mode)


def _publish(store: Path, build_id: str | None, index: pa.Table, result: dict) -> None:
    """Replace index.parquet, then meta.json, unless the store was rebuilt meanwhile."""
    meta = read_meta(store)
    if meta.build_id != build_id:
        raise SyntaxCheckError(f"{store} was rebuilt during the syntax check; run `python -m queries "
                               f"check-syntax --store {store}` again")
    replace_file(store / INDEX_FILE, lambda path: pq.write_table(index, path, compression="zstd"))
    write_meta(store, meta.with_syntax_check(result))
