"""Build a store from source Parquet files, in two stages.

Stage 1 (`build.py`) reads every file once with DuckDB, writes the code shards and an index whose fields come
from text rules, then the code search index (`search_index.py`), in a temporary folder next to the target, and
swaps it in only when complete: a failed or interrupted build (SIGINT or SIGTERM) leaves the previous store as it
was, and so does a build that would index no row or far fewer than the store it replaces (unless
`allow_shrink`); a later build removes the folders that killed builds left. Every row read is either indexed or rejected with a reason, and the rows of
files refused with `skip_bad_files` are counted as unread; the summary (printed and kept in meta.json) accounts
for all of them. The store is usable from then on. Stage 2 (`syntax_check.py`) then compiles every program to
mark syntax errors, rewriting index.parquet and meta.json in place, and then finds near-duplicate clusters
(`queries/neardup/`); skipped with `syntax_check=False`, they can run later (`python -m queries check-syntax`,
`python -m queries near-dups`). Layout: docs/ARCHITECTURE.md, section Store.
"""

from __future__ import annotations

import glob
import hashlib
import os
import shutil
import time
import uuid
from datetime import UTC, datetime
from pathlib import Path

from common.results_log import TRIAGE
from common.settings import DEFAULT_INDEX_BUILD_MB
from queries.ingest.build import IngestError, Options, build
from queries.ingest.program_checks import check_syntax
from queries.ingest.progress import say
from queries.ingest.read import BadFile, check_file
from queries.ingest.search_build import build_search_index
from queries.ingest.signals import sigterm_interrupts
from queries.ingest.sources import resolve_sources
from queries.store import META_FILE, SCHEMA_VERSION, StoreError, StoreMeta, read_meta, write_meta

__all__ = ["IngestError", "format_summary", "ingest"]

SHRINK_LIMIT = 0.5  # a build below this share of the replaced store's rows needs allow_shrink


@sigterm_interrupts
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
    syntax_check: bool = True,
    allow_shrink: bool = False,
    index_build_mb: int = DEFAULT_INDEX_BUILD_MB,
) -> dict:
    """Build `store` from `sources`; returns the summary (also written to meta.json).

    `workers`: DuckDB threads and syntax-check processes (default: all cores). `batch_rows`: rows per batch of
    the Python reader (files DuckDB cannot read). `syntax_check=False` stops after stage 1 (no syntax check, no
    near-duplicate clusters). A build that indexes
    no row, or fewer than `SHRINK_LIMIT` of the rows of the store it would replace, is refused (the store stays)
    unless `allow_shrink`. `index_build_mb`: the settings' `index_build_mb`, passed from the entry.
    """
    started = time.monotonic()
    store = Path(store).expanduser().resolve()
    if store.exists() and not (store / META_FILE).is_file() and any(store.iterdir()):
        raise IngestError(f"{store} exists and is not a store (no meta.json); pick another --store or empty it")
    files = resolve_sources(sources)
    checked, bad = [], []
    for f in files:
        try:
            checked.append((f, check_file(f.path)))
        except BadFile as exc:
            if not skip_bad_files:
                raise IngestError(f"{exc} (the store was not changed; --skip-bad-files skips such files)") from exc
            bad.append({"file": str(f.path), "reason": str(exc), "rows_unread": exc.rows})
            say(f"skipping {exc}")
    if not checked:
        raise IngestError("no readable source file; the store was not changed")
    duplicates = _duplicate_files([f.path for f, _ in checked])
    for d in duplicates:
        say(f"warning: {d['file']} has the same content as {d['same_as']}; its rows are indexed again")
    workers = workers or os.cpu_count() or 1
    store.parent.mkdir(parents=True, exist_ok=True)
    _clear_dead_builds(store)
    tmp = store.parent / f".{store.name}.building-{os.getpid()}"
    shutil.rmtree(tmp, ignore_errors=True)
    try:
        options = Options(workers, batch_rows, code_rows_per_group, rows_per_shard, skip_bad_files, progress)
        summary = build(checked, bad, tmp, options)
        summary["search_index"] = build_search_index(tmp, workers, progress, index_build_mb)
        summary.update(
            duplicate_files=duplicates,
            schema_version=SCHEMA_VERSION,
            build_id=uuid.uuid4().hex,
            built_at=datetime.now(UTC).isoformat(timespec="seconds"),
            code_rows_per_group=code_rows_per_group,
            sample=sample,
            build_seconds=round(time.monotonic() - started, 2),
            syntax_check={"done": False},
        )
        if not allow_shrink:
            _refuse_shrinking(summary, store)
        summary["shipped_runs"] = _copy_shipped_runs(checked, tmp)
        summary["shipped_triage"] = _copy_shipped(checked, tmp, "triage-*.jsonl", TRIAGE)
        write_meta(tmp, StoreMeta.from_dict(summary))
        _swap(tmp, store)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    if progress:
        say(format_summary(summary, store))
    if syntax_check:
        try:
            summary["syntax_check"] = check_syntax(store, workers=workers, progress=progress)
        except KeyboardInterrupt:
            say(f"syntax check interrupted: {store} is usable, without syntax errors marked; "
                f"`python -m queries check-syntax --store {store}` finishes it")
            raise
        summary["near_dups"] = _near_dups(store, workers, progress)
    return summary


def _near_dups(store: Path, workers: int, progress: bool) -> dict:
    """Stage 2's last step: near-duplicate clusters (queries/neardup/, imported here: it imports ingest's pool)."""
    from queries.neardup.command import near_dups

    try:
        return near_dups(store, workers=workers, progress=progress)
    except KeyboardInterrupt:
        say(f"near-duplicate search interrupted: {store} is usable, without clusters; "
            f"`python -m queries near-dups --store {store}` finishes it")
        raise


def _clear_dead_builds(store: Path) -> None:
    """Remove the build folders (`.STORE.building-PID`, `.STORE.old-PID`) that builds of `store` left when they
    were killed (SIGKILL, a crash, the machine going down): those whose process is gone. A live build's folder,
    or that of a process reusing the pid, is left alone."""
    for folder in store.parent.glob(f".{glob.escape(store.name)}.*-*"):
        kind, _, pid = folder.name[len(store.name) + 2 :].rpartition("-")
        if kind not in ("building", "old") or not pid.isdigit() or not folder.is_dir() or _alive(int(pid)):
            continue
        say(f"removing {folder}, left by a build that ended without cleaning up (process {pid} is gone)")
        shutil.rmtree(folder, ignore_errors=True)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # someone else's process
        return True
    return True


def _refuse_shrinking(summary: dict, store: Path) -> None:
    """IngestError when the build indexes no row, or far fewer than the store it replaces (a wrong or broken
    source, e.g. every program undecodable, must not silently replace a good store)."""
    new = summary["rows_indexed"]
    old = _rows_indexed(store)
    if new == 0:
        raise IngestError(f"the build indexes no row ({summary['rows_read']:,} read, {summary['rows_rejected']:,} "
                          f"rejected: {_reasons(summary)}); {store} was not changed (--allow-shrink builds it anyway)")
    if new < old * SHRINK_LIMIT:
        raise IngestError(f"the build indexes {new:,} rows, far fewer than the {old:,} of {store}, which was not "
                          f"changed; --allow-shrink replaces it anyway")


def _rows_indexed(store: Path) -> int:
    """Rows of the store about to be replaced (0 when there is none or its meta.json is unreadable)."""
    try:
        return int(read_meta(store).rows_indexed or 0)
    except StoreError:
        return 0


def _reasons(summary: dict) -> str:
    reasons = [f"{n:,} {reason}" for reason, n in sorted(summary["reject_reasons"].items())]
    reasons += [f"bad file {b['file']}" for b in summary["bad_files"]]
    return ", ".join(reasons) or "the sources hold no rows"


def _copy_shipped_runs(checked, tmp: Path) -> list[str]:
    """Run results published beside the source files (`runs-*.jsonl`, e.g. the sample's measured H200 runs) travel
    with the store into `STORE/results/`, where the queries layer reads them next to the runner's own."""
    return _copy_shipped(checked, tmp, "runs-*.jsonl", "results")


def _copy_shipped(checked, tmp: Path, pattern: str, folder_name: str) -> list[str]:
    """Files matching `pattern` beside the source files, copied into `STORE/<folder_name>/`: run results, and CPU
    triage results (`triage-*.jsonl` into `STORE/triage/`, read beside `RUNS_DIR/triage/`: common/triage_log.py)."""
    folders = dict.fromkeys(source.path.parent for source, _ in checked)
    shipped = sorted(p for folder in folders for p in folder.glob(pattern) if p.is_file())
    if shipped:
        (tmp / folder_name).mkdir()
    for path in shipped:
        shutil.copy2(path, tmp / folder_name / path.name)
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
        f"{summary['rows_rejected']:,} rejected, {summary.get('rows_unread', 0):,} in bad files unread "
        f"({summary.get('build_seconds', 0):.1f} s); usable now"
    ]
    lines += [f"  rejected {n:,}: {reason}" for reason, n in sorted(summary["reject_reasons"].items())]
    lines += [f"  bad file {b['file']}: {b['reason']}"
              + (f" ({b['rows_unread']:,} rows unread)" if b.get("rows_unread") is not None else "")
              for b in summary["bad_files"]]
    lines += [f"  duplicate file {d['file']} (same content as {d['same_as']}), indexed again"
              for d in summary.get("duplicate_files", [])]
    return "\n".join(lines)
