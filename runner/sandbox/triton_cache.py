"""The shared Triton cache, seen by a job only through copies (issue 27: other jobs' folders are not visible).

A job compiles into its own `JOB/triton-cache`. Before it starts, `seed` copies the program's shared folder
(`<triton_cache_dir>/<program sha256>`) in; after its processes are gone, `publish` copies back the cache entries
(Triton's `<key>/` folders) that the shared folder lacks, regular files only (a symlink planted by the program is
not followed), each entry renamed into place whole, at most PUBLISH_LIMIT_BYTES per job. A program can thus
only spoil the cache of its own program text, never another program's."""

from __future__ import annotations

import os
import secrets
import shutil
import stat
from pathlib import Path

PUBLISH_LIMIT_BYTES = 512 << 20


def _regular_files(folder: Path) -> list[Path] | None:
    """The regular files directly in `folder`, None if it holds anything else (or is not a real folder)."""
    try:
        if not stat.S_ISDIR(os.lstat(folder).st_mode):
            return None
        files = list(folder.iterdir())
        return files if all(stat.S_ISREG(os.lstat(f).st_mode) for f in files) else None
    except OSError:
        return None


def _copy_entry(src: Path, dest_parent: Path, name: str) -> int:
    """Copy the cache entry `src` to `dest_parent/name` atomically; returns the bytes copied (0: skipped)."""
    files = _regular_files(src)
    if not files or (dest_parent / name).exists():
        return 0
    tmp = dest_parent / f".tmp-{name}-{secrets.token_hex(4)}"
    try:
        tmp.mkdir()
        size = 0
        for f in files:
            shutil.copyfile(f, tmp / f.name, follow_symlinks=False)
            size += (tmp / f.name).stat().st_size
        os.chmod(tmp, 0o777)
        os.rename(tmp, dest_parent / name)
        return size
    except OSError:
        shutil.rmtree(tmp, ignore_errors=True)
        return 0


def seed(shared: Path, job_cache: Path) -> None:
    try:
        entries = list(shared.iterdir())
    except OSError:
        return
    for entry in entries:
        if not entry.name.startswith("."):
            _copy_entry(entry, job_cache, entry.name)


def publish(job_cache: Path, shared: Path) -> None:
    try:
        shared.mkdir(parents=True, exist_ok=True)
        entries = list(job_cache.iterdir())
    except OSError:
        return
    budget = PUBLISH_LIMIT_BYTES
    for entry in entries:
        if budget <= 0:
            return
        if not entry.name.startswith("."):
            budget -= _copy_entry(entry, shared, entry.name)
