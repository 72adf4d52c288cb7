"""Build a store from source Parquet files: stream rows in bounded memory, parse them, write index + code shards.

The store is written to a temporary folder next to the target and swapped in only when complete, so a failed
build leaves the previous store as it was. Every row read is either indexed or rejected with a reason; the
summary (printed and kept in meta.json) accounts for all of them. Layout: docs/ARCHITECTURE.md, section Store.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import sys
import time
from collections import Counter, deque
from datetime import UTC, datetime
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

from queries.ingest_code import CodeWriter
from queries.ingest_parse import FIELDS, ParsePool
from queries.ingest_read import BadFile, Batch, check_file, read_batches
from queries.sources import resolve_sources
from queries.store import SCHEMA_VERSION

MAX_REJECTS_KEPT = 1000
_LEVEL = re.compile(r"^(\d+)_")


class IngestError(RuntimeError):
    """The build could not complete; the previous store (if any) is untouched."""


def ingest(
    sources: list[str],
    store: str | Path,
    *,
    sample: bool = False,
    skip_bad_files: bool = False,
    progress: bool = True,
    workers: int | None = None,
    batch_rows: int = 1024,
    code_rows_per_group: int = 128,
    rows_per_shard: int = 65536,
) -> dict:
    """Build `store` from `sources`; returns the summary (also written to meta.json)."""
    started = time.monotonic()
    store = Path(store).expanduser().resolve()
    if store.exists() and not (store / "meta.json").is_file() and any(store.iterdir()):
        raise IngestError(f"{store} exists and is not a store (no meta.json); pick another --store or empty it")
    files = resolve_sources(sources)
    checked, bad = [], []
    for f in files:
        try:
            checked.append((f, check_file(f.path)))
        except BadFile as exc:
            if not skip_bad_files:
                raise IngestError(f"{exc} (the store was not changed; --skip-bad-files skips such files)") from exc
            bad.append({"file": str(f.path), "reason": str(exc)})
            _say(f"skipping {exc}")
    if not checked:
        raise IngestError("no readable source file; the store was not changed")
    duplicates = _duplicate_files([f.path for f, _ in checked])
    for d in duplicates:
        _say(f"warning: {d['file']} has the same content as {d['same_as']}; its rows are indexed again")
    store.parent.mkdir(parents=True, exist_ok=True)
    tmp = store.parent / f".{store.name}.building-{os.getpid()}"
    shutil.rmtree(tmp, ignore_errors=True)
    try:
        summary = _build(checked, bad, tmp, workers, batch_rows, code_rows_per_group, rows_per_shard,
                         skip_bad_files, progress)
        summary.update(
            duplicate_files=duplicates,
            schema_version=SCHEMA_VERSION,
            built_at=datetime.now(UTC).isoformat(timespec="seconds"),
            code_rows_per_group=code_rows_per_group,
            sample=sample,
            build_seconds=round(time.monotonic() - started, 2),
        )
        summary["shipped_runs"] = _copy_shipped_runs(checked, tmp)
        (tmp / "meta.json").write_text(json.dumps(summary, indent=1))
        _swap(tmp, store)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    if progress:
        _say(format_summary(summary, store))
    return summary


INDEX_SCHEMA = pa.schema([
    ("id", pa.string()), ("split", pa.string()), ("row", pa.int64()), ("source_file", pa.string()),
    ("problem_key", pa.string()), ("problem_id", pa.string()), ("holdout_group", pa.string()),
    ("title", pa.string()), ("level", pa.int32()), ("y", pa.float64()), ("ok", pa.bool_()),
    ("static_error", pa.string()), ("parse_mode", pa.string()), ("n_kernels", pa.int32()),
    ("kernel_names", pa.list_(pa.string())), ("autotuned", pa.bool_()), ("candidate_key", pa.string()),
    ("n_chars", pa.int64()), ("ref_chars", pa.int64()), ("cand_chars", pa.int64()),
    ("code_shard", pa.int32()), ("code_rg", pa.int32()),
])


class _Rejects:
    """Counts rejected rows by reason, keeps the first MAX_REJECTS_KEPT, and tells about the first few."""

    def __init__(self):
        self.reasons: Counter[str] = Counter()
        self.kept: list[dict] = []

    def add(self, file: Path, row: int, reason: str, detail: str) -> None:
        self.reasons[reason] += 1
        if len(self.kept) < MAX_REJECTS_KEPT:
            self.kept.append({"file": str(file), "row": row, "reason": reason, "detail": detail})
        if self.reasons.total() <= 20:
            _say(f"rejected {file} row {row}: {reason} ({detail})")


def _build(checked, bad, tmp, workers, batch_rows, group_rows, shard_rows, skip_bad_files, progress) -> dict:
    (tmp / "code").mkdir(parents=True)
    total = sum(rows for _, (rows, _) in checked)
    meter = _Progress(total, progress)
    rejects = _Rejects()
    index_tables: list[pa.Table] = []
    sources = []
    next_row: Counter[str] = Counter()
    writer = CodeWriter(tmp / "code", group_rows, shard_rows)
    with ParsePool(workers, total) as pool:
        for f, (rows, columns) in checked:
            writer.start_split(f.split)
            read_here = 0
            pending: deque = deque()
            try:
                for batch in read_batches(f, columns, batch_rows, next_row[f.split]):
                    read_here += batch.n_rows
                    for file_row, reason, detail in batch.rejects:
                        rejects.add(f.path, file_row, reason, detail)
                    pending.append((batch, pool.submit(batch.texts)))
                    while len(pending) > pool.depth:
                        index_tables.append(_finish(*pending.popleft(), writer, rejects))
                    meter.advance(batch.n_rows, f.path.name)
            except BadFile as exc:
                if not skip_bad_files:
                    raise IngestError(f"{exc} (the store was not changed)") from exc
                bad.append({"file": str(f.path), "reason": str(exc), "rows_unread": rows - read_here})
                _say(f"stopped reading {exc}; kept its first {read_here} rows")
            while pending:
                index_tables.append(_finish(*pending.popleft(), writer, rejects))
            next_row[f.split] += read_here
            sources.append({"path": str(f.path), "split": f.split, "rows": read_here, "bytes": f.path.stat().st_size})
    writer.close()
    meter.done()
    index = _map_problem_ids(pa.concat_tables(index_tables) if index_tables else INDEX_SCHEMA.empty_table())
    pq.write_table(index.sort_by("id"), tmp / "index.parquet", compression="zstd")
    return {
        "sources": sources,
        "rows_read": sum(s["rows"] for s in sources),
        "rows_indexed": index.num_rows,
        "rows_rejected": rejects.reasons.total(),
        "reject_reasons": dict(rejects.reasons),
        "rejects": rejects.kept,
        "bad_files": bad,
    }


def _finish(batch: Batch, result, writer: CodeWriter, rejects: _Rejects) -> pa.Table:
    """Parse results of one batch -> its index rows; code goes to the shards; parser crashes are rejected."""
    cols: dict[str, list] = {name: [] for name in INDEX_SCHEMA.names}
    texts = []
    for i, parsed in enumerate(result.get()):
        if parsed is None:
            continue  # rejected when read
        if isinstance(parsed, str):
            rejects.add(batch.file, batch.first_file_row + i, "parser_error", parsed)
            continue
        row = batch.first_row + i
        y = batch.y[i]
        cols["id"].append(f"{batch.split}/{row:06d}")
        cols["split"].append(batch.split)
        cols["row"].append(row)
        cols["source_file"].append(batch.file.name)
        cols["problem_id"].append(batch.problem_id[i])
        cols["holdout_group"].append(batch.holdout_group[i])
        cols["level"].append(None)
        cols["y"].append(y)
        cols["ok"].append(y is not None)
        for name, value in zip(FIELDS, parsed, strict=True):
            cols[name].append(value)
        texts.append(batch.texts[i])
    cols["code_shard"], cols["code_rg"] = writer.add(cols["id"], texts)
    return pa.table(cols, schema=INDEX_SCHEMA)


def _map_problem_ids(index: pa.Table) -> pa.Table:
    """Give every row whose problem key has a known problem id that id (and its holdout group and level)."""
    keys = index["problem_key"].to_pylist()
    pids = index["problem_id"].to_pylist()
    groups = index["holdout_group"].to_pylist()
    votes: dict[str, Counter] = {}
    for key, pid, group in zip(keys, pids, groups, strict=True):
        if pid is not None:
            votes.setdefault(key, Counter())[(pid, group)] += 1
    best = {k: min(c.items(), key=lambda kv: (-kv[1], kv[0][0], kv[0][1] or ""))[0] for k, c in votes.items()}
    for i, key in enumerate(keys):
        if pids[i] is None and key in best:
            pids[i], groups[i] = best[key]
    levels = [int(m.group(1)) if pid and (m := _LEVEL.match(pid)) else None for pid in pids]
    for name, values, typ in (("problem_id", pids, pa.string()), ("holdout_group", groups, pa.string()),
                              ("level", levels, pa.int32())):
        index = index.set_column(index.schema.get_field_index(name), name, pa.array(values, typ))
    return index


def _copy_shipped_runs(checked, tmp: Path) -> list[str]:
    """Run results published beside the source files (`runs-*.jsonl`, e.g. the sample's measured H200 runs) travel
    with the store into `STORE/results/`, where the queries layer reads them next to the runner's own."""
    folders = dict.fromkeys(source.path.parent for source, _ in checked)
    shipped = sorted(p for folder in folders for p in folder.glob("runs-*.jsonl") if p.is_file())
    if shipped:
        (tmp / "results").mkdir()
    for path in shipped:
        shutil.copy2(path, tmp / "results" / path.name)
    return [str(p) for p in shipped]


def _swap(tmp: Path, store: Path) -> None:
    """Put the finished build in place; the old store is moved aside first and deleted after."""
    old = store.parent / f".{store.name}.old-{os.getpid()}"
    if store.exists():
        os.replace(store, old)
    os.replace(tmp, store)
    shutil.rmtree(old, ignore_errors=True)


def _fingerprint(path: Path, edge: int = 1 << 20) -> tuple[int, str]:
    """Size plus a hash of the first and last MiB: equal for copies of one file, cheap for large shards."""
    size = path.stat().st_size
    digest = hashlib.sha256()
    with open(path, "rb") as fh:
        digest.update(fh.read(edge))
        fh.seek(max(size - edge, 0))
        digest.update(fh.read(edge))
    return size, digest.hexdigest()


def _duplicate_files(paths: list[Path]) -> list[dict]:
    """Source files that are copies of an earlier one (the same path given twice is already folded by
    `resolve_sources`). Policy: copies are indexed like any file (every row stays accounted for) and reported in
    meta.json's `duplicate_files` and on stderr, so that an accidental copy is noticed."""
    seen: dict[tuple[int, str], Path] = {}
    duplicates = []
    for path in paths:
        key = _fingerprint(path)
        if key in seen:
            duplicates.append({"file": str(path), "same_as": str(seen[key])})
        else:
            seen[key] = path
    return duplicates


def format_summary(summary: dict, store: Path) -> str:
    lines = [
        f"store {store}: {summary['rows_read']:,} rows read, {summary['rows_indexed']:,} indexed, "
        f"{summary['rows_rejected']:,} rejected ({summary.get('build_seconds', 0):.1f} s)"
    ]
    lines += [f"  rejected {n:,}: {reason}" for reason, n in sorted(summary["reject_reasons"].items())]
    lines += [f"  bad file {b['file']}: {b['reason']}" for b in summary["bad_files"]]
    lines += [f"  duplicate file {d['file']} (same content as {d['same_as']}), indexed again"
              for d in summary.get("duplicate_files", [])]
    return "\n".join(lines)


def _say(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


class _Progress:
    """Rows/s and ETA on stderr, at most once a second (a carriage-return line on a terminal)."""

    def __init__(self, total: int, enabled: bool):
        self.total, self.enabled, self.done_rows = total, enabled, 0
        self.started = self.last = time.monotonic()
        self.tty = sys.stderr.isatty()

    def advance(self, rows: int, label: str) -> None:
        self.done_rows += rows
        now = time.monotonic()
        if not self.enabled or now - self.last < (1.0 if self.tty else 10.0):
            return
        self.last = now
        rate = self.done_rows / max(now - self.started, 1e-9)
        eta = (self.total - self.done_rows) / rate if rate else 0
        line = f"{label}: {self.done_rows:,}/{self.total:,} rows  {rate:,.0f} rows/s  ETA {eta:,.0f} s"
        print(("\r" + line) if self.tty else line, end="" if self.tty else "\n", file=sys.stderr, flush=True)

    def done(self) -> None:
        if self.enabled and self.tty:
            print(file=sys.stderr)
