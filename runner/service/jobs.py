"""The runner's job store: one SQLite table (WAL, busy timeout) at `RUNS_DIR/runner.sqlite3`.

A job holds everything needed to run it (the program text itself, not just a row id) so the queue survives
restarts and store changes. States: `queued` -> `running` -> `done`, or `cancelled` from queued/running. A pair
job (`runner.service.pairs`) holds its two programs in `members_json` (its `program` and `row_id` are empty), the
runs of its members finished so far in `result_json` while it runs, and its whole result once done; tables made
before pair jobs get the column when first opened.

- Duplicate submissions collapse: submitting the same (program hash, options, row id) while such a job is queued
  or running returns that job (the row id is part of the key because results are filed under it). Without `force`, a finished job with the same key is returned as is (its result is
  reused); `force` queues a fresh run unless one is already in flight.
- Claiming is one atomic `UPDATE ... RETURNING`, so two workers never get the same job.
- `recover()` (called once when a service starts, under the service's lock file) requeues the jobs a dead service
  left `running`; a job that has already been started `max_attempts` times is finished with a `crashed` result
  instead, so a program that kills its service cannot loop forever.
"""

from __future__ import annotations

import dataclasses
import json
import sqlite3
import threading
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from common.program_hash import program_sha256
from runner.service.pairs import MEMBERS, Member, member_states, pair_key
from runner.spec import RunSpec

STATES = ("queued", "running", "done", "cancelled")
DEFAULT_MAX_ATTEMPTS = 3

_SCHEMA = """
CREATE TABLE IF NOT EXISTS jobs (
    seq INTEGER PRIMARY KEY AUTOINCREMENT,
    id TEXT NOT NULL UNIQUE,
    key TEXT NOT NULL,
    row_id TEXT,
    program_sha256 TEXT NOT NULL,
    program TEXT NOT NULL,
    options_json TEXT NOT NULL,
    state TEXT NOT NULL CHECK (state IN ('queued', 'running', 'done', 'cancelled')),
    attempts INTEGER NOT NULL DEFAULT 0,
    result_json TEXT,
    created_at REAL NOT NULL,
    started_at REAL,
    finished_at REAL,
    worker TEXT,
    members_json TEXT
);
CREATE INDEX IF NOT EXISTS jobs_key_state ON jobs (key, state);
CREATE INDEX IF NOT EXISTS jobs_state_seq ON jobs (state, seq);
"""

_COLUMNS = (
    "id, key, row_id, program_sha256, program, options_json, state, attempts, result_json, "
    "created_at, started_at, finished_at, worker, members_json"
)


def job_key(program_hash: str, spec: RunSpec, row_id: str | None = None) -> str:
    """Same program, run settings and row (results are filed under their row id) -> same job."""
    return f"{program_hash}:{spec.key()}:{row_id or ''}"


@dataclass(frozen=True)
class Job:
    id: str
    key: str
    row_id: str | None
    program_sha256: str
    program: str
    spec: RunSpec  # its run settings (the `options` of the HTTP API and the `options_json` column)
    state: str
    attempts: int
    result: dict[str, Any] | None
    created_at: float
    started_at: float | None
    finished_at: float | None
    worker: str | None
    members: tuple[Member, ...] = ()  # a pair job's two programs; none for a job of one program

    @property
    def is_pair(self) -> bool:
        return bool(self.members)

    def summary(self) -> dict[str, Any]:
        """The job as the HTTP API shows it (no program text); a pair job's result only once it is done, and each
        of its members with its own state and verdict."""
        if self.is_pair:
            finished = (self.result or {}).get("runs") or {}
            identity = {"kind": "pair", "row_id": None, "program_sha256": None,
                        "members": member_states(self.state, self.members, finished)}
            result = self.result if self.state == "done" else None
        else:
            identity = {"kind": "single", "row_id": self.row_id, "program_sha256": self.program_sha256}
            result = self.result
        return {
            "id": self.id,
            "state": self.state,
            **identity,
            "options": self.spec.to_dict(),
            "attempts": self.attempts,
            "created_at": self.created_at,
            "started_at": self.started_at,
            "finished_at": self.finished_at,
            "worker": self.worker,
            "result": result,
        }

    @property
    def result_id(self) -> str:
        """The `id` of this job's result: its row id, else its program's hash."""
        return self.row_id or self.program_sha256

    def member_job(self, member: Member) -> Job:
        """One member of a pair job as a job of its own program (what an evaluator runs), under the pair's id."""
        return dataclasses.replace(self, row_id=member.row_id, program_sha256=member.program_sha256,
                                   program=member.program, members=(), result=None)


def _job(row: tuple) -> Job:
    (jid, key, row_id, sha, program, options_json, state, attempts, result_json,
     created_at, started_at, finished_at, worker, members_json) = row
    return Job(
        id=jid, key=key, row_id=row_id, program_sha256=sha, program=program,
        spec=RunSpec.from_dict(json.loads(options_json)), state=state, attempts=attempts,
        result=json.loads(result_json) if result_json else None,
        created_at=created_at, started_at=started_at, finished_at=finished_at, worker=worker,
        members=tuple(Member.from_dict(m) for m in json.loads(members_json)) if members_json else (),
    )


class JobStore:
    """Thread-safe access to the jobs table; every method is one short transaction."""

    def __init__(self, path: Path, *, max_attempts: int = DEFAULT_MAX_ATTEMPTS):
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self.max_attempts = max_attempts
        self._lock = threading.Lock()
        self._db = sqlite3.connect(
            self.path, timeout=30.0, isolation_level=None, check_same_thread=False
        )
        self._db.execute("PRAGMA journal_mode=WAL")
        self._db.execute("PRAGMA busy_timeout=30000")
        self._db.execute("PRAGMA synchronous=FULL")
        self._db.executescript(_SCHEMA)
        if "members_json" not in {row[1] for row in self._db.execute("PRAGMA table_info(jobs)")}:
            self._db.execute("ALTER TABLE jobs ADD COLUMN members_json TEXT")  # a table from before pair jobs

    def close(self) -> None:
        with self._lock:
            self._db.close()

    def _one(self, sql: str, params: tuple = ()) -> Job | None:
        row = self._db.execute(sql, params).fetchone()
        return _job(row) if row else None

    def submit(
        self, program: str, spec: RunSpec, *, row_id: str | None = None, force: bool = False
    ) -> tuple[Job, bool]:
        """Queue a job, or return the matching existing one. Returns (job, created)."""
        sha = program_sha256(program)
        return self._submit(job_key(sha, spec, row_id), spec, force, row_id=row_id, sha=sha, program=program)

    def submit_pair(self, programs: dict[str, tuple[str | None, str]], spec: RunSpec, *,
                    force: bool = False) -> tuple[Job, bool]:
        """Queue a pair job of `programs` (label -> (row id or None, program text), labels `a` and `b`), or return
        the matching existing one (same programs, rows, order and settings). Returns (job, created)."""
        members = tuple(Member(label, programs[label][0], program_sha256(programs[label][1]), programs[label][1])
                        for label in MEMBERS)
        members_json = json.dumps([m.to_dict() for m in members])
        return self._submit(pair_key(members, spec.key()), spec, force, members_json=members_json)

    def _submit(self, key: str, spec: RunSpec, force: bool, *, row_id: str | None = None, sha: str = "",
                program: str = "", members_json: str | None = None) -> tuple[Job, bool]:
        states = ("queued", "running") if force else ("queued", "running", "done")
        marks = ",".join("?" * len(states))
        with self._lock:
            self._db.execute("BEGIN IMMEDIATE")
            try:
                existing = self._one(
                    f"SELECT {_COLUMNS} FROM jobs WHERE key = ? AND state IN ({marks}) "  # noqa: S608
                    "ORDER BY seq DESC LIMIT 1",
                    (key, *states),
                )
                if existing is not None:
                    self._db.execute("COMMIT")
                    return existing, False
                jid = uuid.uuid4().hex[:16]
                self._db.execute(
                    "INSERT INTO jobs (id, key, row_id, program_sha256, program, options_json, state, "
                    "created_at, members_json) VALUES (?, ?, ?, ?, ?, ?, 'queued', ?, ?)",
                    (jid, key, row_id, sha, program, json.dumps(spec.to_dict(), sort_keys=True), time.time(),
                     members_json),
                )
                self._db.execute("COMMIT")
            except BaseException:
                self._db.execute("ROLLBACK")
                raise
        return self.get(jid), True

    def claim(self, worker: str) -> Job | None:
        """Atomically move the oldest queued job to running for `worker`."""
        with self._lock:
            return self._one(
                "UPDATE jobs SET state = 'running', started_at = ?, worker = ?, attempts = attempts + 1 "  # noqa: S608
                "WHERE seq = (SELECT seq FROM jobs WHERE state = 'queued' ORDER BY seq LIMIT 1) "
                f"AND state = 'queued' RETURNING {_COLUMNS}",
                (time.time(), worker),
            )

    def record_progress(self, job_id: str, progress: dict[str, Any]) -> bool:
        """Store what a running pair job has finished so far (`{"runs": {label: result}}`); False if it is no
        longer running."""
        with self._lock:
            cur = self._db.execute("UPDATE jobs SET result_json = ? WHERE id = ? AND state = 'running'",
                                   (json.dumps(progress, default=str), job_id))
            return cur.rowcount == 1

    def finish(self, job_id: str, result: dict[str, Any]) -> bool:
        """Store the result (`RunResult.to_dict()`, or a pair job's `pairs.pair_result`) of a running job; False
        (result discarded) if it was cancelled meanwhile."""
        with self._lock:
            cur = self._db.execute(
                "UPDATE jobs SET state = 'done', result_json = ?, finished_at = ? "
                "WHERE id = ? AND state = 'running'",
                (json.dumps(result, default=str), time.time(), job_id),
            )
            return cur.rowcount == 1

    def release(self, job_id: str) -> bool:
        """Put a running job back in the queue without counting the attempt (service shutting down)."""
        with self._lock:
            cur = self._db.execute(
                "UPDATE jobs SET state = 'queued', started_at = NULL, worker = NULL, result_json = NULL, "
                "attempts = MAX(attempts - 1, 0) WHERE id = ? AND state = 'running'",
                (job_id,),
            )
            return cur.rowcount == 1

    def cancel(self, job_id: str) -> Job | None:
        """Cancel a queued or running job; done/cancelled jobs are returned unchanged. None if unknown."""
        with self._lock:
            self._db.execute(
                "UPDATE jobs SET state = 'cancelled', finished_at = ? "
                "WHERE id = ? AND state IN ('queued', 'running')",
                (time.time(), job_id),
            )
            return self._one(f"SELECT {_COLUMNS} FROM jobs WHERE id = ?", (job_id,))  # noqa: S608

    def recover(self, crashed_result: Callable[[Job], dict[str, Any]]) -> tuple[int, list[dict[str, Any]]]:
        """Requeue jobs left running by a dead service; finish those started `max_attempts` times with
        `crashed_result(job)`. Returns (jobs requeued, crashed results stored)."""
        requeued, crashed = 0, []
        with self._lock:
            self._db.execute("BEGIN IMMEDIATE")
            try:
                rows = self._db.execute(
                    f"SELECT {_COLUMNS} FROM jobs WHERE state = 'running'"  # noqa: S608
                ).fetchall()
                for job in map(_job, rows):
                    if job.attempts >= self.max_attempts:
                        result = crashed_result(job)
                        self._db.execute(
                            "UPDATE jobs SET state = 'done', result_json = ?, finished_at = ? WHERE id = ?",
                            (json.dumps(result, default=str), time.time(), job.id),
                        )
                        crashed.append(result)
                    else:
                        self._db.execute(
                            "UPDATE jobs SET state = 'queued', started_at = NULL, worker = NULL, result_json = NULL "
                            "WHERE id = ?",
                            (job.id,),
                        )
                        requeued += 1
                self._db.execute("COMMIT")
            except BaseException:
                self._db.execute("ROLLBACK")
                raise
        return requeued, crashed

    def get(self, job_id: str) -> Job | None:
        with self._lock:
            return self._one(f"SELECT {_COLUMNS} FROM jobs WHERE id = ?", (job_id,))  # noqa: S608

    def recent(self, limit: int = 50, state: str | None = None) -> list[Job]:
        with self._lock:
            if state is None:
                rows = self._db.execute(
                    f"SELECT {_COLUMNS} FROM jobs ORDER BY seq DESC LIMIT ?", (limit,)  # noqa: S608
                ).fetchall()
            else:
                rows = self._db.execute(
                    f"SELECT {_COLUMNS} FROM jobs WHERE state = ? ORDER BY seq DESC LIMIT ?",  # noqa: S608
                    (state, limit),
                ).fetchall()
        return [_job(r) for r in rows]

    def counts(self) -> dict[str, int]:
        with self._lock:
            rows = self._db.execute("SELECT state, COUNT(*) FROM jobs GROUP BY state").fetchall()
        return {s: 0 for s in STATES} | dict(rows)
