"""The results log: every finished run result, one JSON object per line, in `RUNS_DIR/results/<writer>.jsonl`.

Each writer process appends to its own file (no cross-process locking needed; threads of one process share a
lock), one `write` + `fsync` per line, so a crash loses at most the line being written. Readers (the explorer's
queries, bulk resume) all go through `read_log`: every `*.jsonl` file of the given roots, in file-name order,
torn or non-object lines skipped and counted. Which result of a row is its latest verdict is decided in one place,
`queries/sql/setup_runs.sql` (newest `finished_at`, then file name, then line); bulk selects rows through it.
"""

from __future__ import annotations

import json
import os
import socket
import threading
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from runner.result import RunResult


def results_dir(runs_dir: Path) -> Path:
    return Path(runs_dir) / "results"


def default_writer(kind: str) -> str:
    """A file name unique to this process: `<kind>-<host>-<pid>`."""
    host = "".join(c if c.isalnum() or c in "-_." else "_" for c in socket.gethostname()) or "host"
    return f"{kind}-{host}-{os.getpid()}"


class ResultsLog:
    """Appends run results (or result dicts) to `RUNS_DIR/results/<writer>.jsonl`."""

    def __init__(self, runs_dir: Path, writer: str):
        if not writer or "/" in writer or writer.startswith("."):
            raise ValueError(f"bad results writer name {writer!r}")
        self.path = results_dir(runs_dir) / f"{writer}.jsonl"
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._lock = threading.Lock()

    def append(self, result: RunResult | dict[str, Any]) -> None:
        if isinstance(result, RunResult):
            result = result.to_dict()
        line = (json.dumps(result, separators=(",", ":"), default=str) + "\n").encode("utf-8")
        with self._lock:
            fd = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
            try:
                os.write(fd, line)
                os.fsync(fd)
            finally:
                os.close(fd)


@dataclass(frozen=True)
class LoggedResult:
    """One result line: the file's name, its 1-based line number and the parsed result dict."""

    file: str
    line: int
    result: dict[str, Any]


def results_files(*roots: Path | None) -> list[Path]:
    """The `*.jsonl` files under `ROOT/results/` of each root (None and missing folders skipped), sorted per root."""
    files: list[Path] = []
    for root in roots:
        folder = results_dir(Path(root)) if root is not None else None
        if folder is not None and folder.is_dir():
            files.extend(sorted(p for p in folder.glob("*.jsonl") if p.is_file()))
    return files


class LogReader:
    """Iterates over every result of the roots' logs; `.skipped` counts lines that were not JSON objects (a torn
    last line of a writer, or damage), after the iteration."""

    def __init__(self, *roots: Path | None):
        self.roots = roots
        self.skipped = 0

    def __iter__(self) -> Iterator[LoggedResult]:
        for path in results_files(*self.roots):
            try:
                text = path.read_text(encoding="utf-8", errors="replace")
            except OSError:
                continue
            for number, raw in enumerate(text.splitlines(), start=1):
                if not raw.strip():
                    continue
                try:
                    item = json.loads(raw)
                except ValueError:
                    self.skipped += 1
                    continue
                if not isinstance(item, dict):
                    self.skipped += 1
                    continue
                yield LoggedResult(path.name, number, item)


def read_results(*roots: Path | None) -> Iterator[dict[str, Any]]:
    """Every result dict in every log file under the roots (torn or non-object lines skipped)."""
    for logged in LogReader(*roots):
        yield logged.result
