"""Resolve ingest sources (Parquet files, folders, globs, the Hugging Face dataset) into split-labelled files."""

from __future__ import annotations

import glob
from dataclasses import dataclass
from pathlib import Path

from common.errors import TlxError

HF_PREFIX = "hf://datasets/"


class SourceError(TlxError, ValueError):
    """A source argument that names nothing usable."""


@dataclass(frozen=True)
class SourceFile:
    path: Path
    split: str


def split_of(path: Path) -> str:
    """`train*.parquet` -> train, `test*.parquet` -> test, anything else -> the file's stem."""
    name = path.name
    for split in ("train", "test"):
        if name.startswith(split):
            return split
    return path.stem


def resolve_sources(sources: list[str]) -> list[SourceFile]:
    """Expand every source into Parquet files; sorted by (split, path) so row numbers are stable."""
    if not sources:
        raise SourceError("no source given: pass Parquet files, folders, globs or hf://datasets/<repo>")
    paths: dict[Path, None] = {}
    for source in sources:
        for path in _expand(source):
            paths.setdefault(path.resolve(), None)
    files = [SourceFile(p, split_of(p)) for p in paths]
    return sorted(files, key=lambda f: (f.split, str(f.path)))


def _expand(source: str) -> list[Path]:
    if source.startswith(HF_PREFIX):
        return _download_hf(source[len(HF_PREFIX) :].strip("/"))
    if any(ch in source for ch in "*?["):
        found = sorted(Path(p) for p in glob.glob(source, recursive=True) if p.endswith(".parquet"))
        if not found:
            raise SourceError(f"{source}: the pattern matches no .parquet file")
        return found
    path = Path(source).expanduser()
    if path.is_dir():
        found = sorted(path.rglob("*.parquet"))
        if not found:
            raise SourceError(f"{source}: the folder holds no .parquet file")
        return found
    if not path.exists():
        raise SourceError(f"{source}: no such file or folder")
    return [path]


def _download_hf(repo_id: str) -> list[Path]:
    """Fetch the dataset's `data/*.parquet` into the Hugging Face cache (reused when already there)."""
    from huggingface_hub import snapshot_download

    try:
        local = snapshot_download(repo_id=repo_id, repo_type="dataset", allow_patterns=["data/*.parquet"])
    except Exception as exc:  # network, auth, missing repo: all end the same way for the user
        raise SourceError(
            f"hf://datasets/{repo_id}: download failed ({type(exc).__name__}: {exc}); "
            "check the network or download the Parquet files yourself and pass their folder"
        ) from exc
    found = sorted(Path(local, "data").glob("*.parquet"))
    if not found:
        raise SourceError(f"hf://datasets/{repo_id}: the snapshot at {local} holds no data/*.parquet")
    return found
