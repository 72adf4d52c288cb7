"""The results log: every finished run result, one JSON object per line, in `RUNS_DIR/results/<writer>.jsonl`.

Each writer process appends to its own file (no cross-process locking needed; threads of one process share a
lock), one `write` + `fsync` per line, so a crash loses at most the line being written. Readers (the explorer's
queries, bulk resume) read all `*.jsonl` files and skip a torn last line.
"""

from __future__ import annotations

import json
import os
import socket
import threading
from collections.abc import Iterator
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


def read_results(runs_dir: Path) -> Iterator[dict[str, Any]]:
    """Every result in every log file under `runs_dir` (torn or non-object lines skipped)."""
    folder = results_dir(runs_dir)
    if not folder.is_dir():
        return
    for path in sorted(folder.glob("*.jsonl")):
        with open(path, encoding="utf-8", errors="replace") as f:
            for line in f:
                try:
                    item = json.loads(line)
                except json.JSONDecodeError:
                    continue
                if isinstance(item, dict):
                    yield item
