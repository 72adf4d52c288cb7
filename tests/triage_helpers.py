"""Helpers for the triage tests: CPU triage results as `python -m runner triage` writes them (the contract of
issue 41), written where the explorer reads them (`ROOT/triage/*.jsonl`)."""

from __future__ import annotations

import json
from pathlib import Path


def triage(row_id: str, status: str, error_type: str | None = None, *, torch: str = "2.13.0",
           target: str = "sm_90", triaged_at: str = "2025-02-01T00:00:00Z", sha: str | None = None,
           kernel: str | None = None, module: str | None = None, message: str | None = None) -> dict:
    """One triage result line; `message` defaults to one naming the error type."""
    return {
        "id": row_id, "row_id": row_id, "program_sha256": sha, "triage_status": status, "error_type": error_type,
        "message": message if message is not None else ("" if status == "passed" else f"{error_type}: triaged boom"),
        "exception": None if status == "passed" else "CompilationError", "kernel": kernel, "module": module,
        "reason": "value-dependent control flow" if status == "not_triaged" else None,
        "stage": None if status == "passed" else "compile", "target": target,
        "versions": {"torch": torch, "triton": "3.5.0", "python": "3.11.7"},
        "phases_s": {"import": 0.1, "build": 0.05, "compile": 0.4, "compare": 0.01}, "cache": {"hits": 1, "misses": 2},
        "triaged_at": triaged_at, "flags": [],
    }


def write_triage(root: Path, results: list[dict], name: str = "triage-worker-1.jsonl", torn: bool = False) -> Path:
    """Write results to `ROOT/triage/NAME` (ROOT: a runs folder or a store); `torn` adds a torn line."""
    folder = Path(root) / "triage"
    folder.mkdir(parents=True, exist_ok=True)
    lines = [json.dumps(r) for r in results]
    if torn:
        lines.insert(1, '{"id": "train/0000')
    path = folder / name
    path.write_text("\n".join(lines) + "\n")
    return path
