"""Pair jobs (issue 24): two programs, `a` and `b`, timed in one job so that their comparison is same-machine.

A pair job is one job of the job store (one id, one `RunSpec`) whose two members run back to back on the worker
slot that claimed it: the same visible GPU, the same options, `a` first, then `b`. Each member is its own
sandboxed run (`evaluate_on_slot`, a fresh judge and candidate), since the programs are untrusted and must not
share a process. The order is fixed and recorded rather than alternated: alternating whole runs (a, b, a, b)
doubles the job's cost (each run pays its process start, imports and compiles again, design §4), while each run's
timing already warms up, flushes the L2 before every trial and keeps timing until its median is tight; what the
order can still move (clocks, temperature) is seen by submitting the pair the other way round.

What a pair job's result holds (`pair_result`): both members' run results (each exactly as logged: a normal
`RunResult` dict whose `pair` field, `member_link`, names the job, the member, its place in the order, its start
time and its partner), the order they ran in, their start times, the slot and GPU, what differs between the two
runs' machines (`differences`: empty when the comparison is same-machine) and `b_speedup_over_a` (a's median over
b's: how many times faster b ran than a; null, with the reason in `speedup_note`, unless both are correct and
timed).

Standard library only, and nothing of the job store: `runner.service.jobs` stores members, workers run them.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

MEMBERS = ("a", "b")  # the pair's members, in the order they run
PAIR_FIELD = "pair"  # the body field of a pair job in POST /jobs


@dataclass(frozen=True)
class Member:
    """One program of a pair job, as stored with it."""

    label: str  # "a" or "b"
    row_id: str | None
    program_sha256: str
    program: str

    @property
    def result_id(self) -> str:
        """The `id` of this member's result: its row id, else its program's hash."""
        return self.row_id or self.program_sha256

    def to_dict(self) -> dict[str, Any]:
        return {"label": self.label, "row_id": self.row_id, "program_sha256": self.program_sha256,
                "program": self.program}

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> Member:
        return cls(d["label"], d.get("row_id"), d["program_sha256"], d["program"])


def pair_key(members: tuple[Member, ...], options_key: str) -> str:
    """Same two programs and rows, in the same order, under the same settings -> same pair job."""
    return "pair:" + ":".join(f"{m.program_sha256}:{m.row_id or ''}" for m in members) + f":{options_key}"


def member_link(job_id: str, member: Member, position: int, started_at: float, partner: Member) -> dict[str, Any]:
    """The `pair` field of a member's run result: what links it to its job and its partner in the results log."""
    return {"job_id": job_id, "member": member.label, "position": position, "started_at": round(started_at, 3),
            "partner_id": partner.result_id}


def _gpu(record: dict[str, Any]) -> str | None:
    system = record.get("system") or {}
    return system.get("gpu") or system.get("gpu_name")


def _median(record: dict[str, Any]) -> float | None:
    median = (record.get("timing") or {}).get("median_ms")
    return median if isinstance(median, int | float) and median > 0 else None


def differences(a: dict[str, Any], b: dict[str, Any]) -> list[str]:
    """What differs between the machines and settings two member results ran under (empty: same-machine)."""
    found = []
    for name, value_of in (("device", lambda r: r.get("device")), ("GPU", _gpu),
                           ("host", lambda r: (r.get("system") or {}).get("hostname")),
                           ("profile", lambda r: (r.get("method") or {}).get("profile"))):
        if value_of(a) != value_of(b):
            found.append(f"{name}: {value_of(a)} vs {value_of(b)}")
    return found


def _speedup(a: dict[str, Any], b: dict[str, Any]) -> tuple[float | None, str | None]:
    failed = [label for label, r in zip(MEMBERS, (a, b), strict=True) if r.get("status") != "ok"]
    if failed:
        return None, f"{' and '.join(failed)} not correct: no speedup"
    if _median(a) is None or _median(b) is None:
        return None, f"not timed on {a.get('device') or 'this device'}: no speedup"
    return _median(a) / _median(b), None


def pair_result(job_id: str, worker: str, slot: str, gpu: str | None, records: dict[str, dict[str, Any]],
                started_at: dict[str, float]) -> dict[str, Any]:
    """The result of a finished pair job from its members' run results (by label) and start times."""
    a, b = records["a"], records["b"]
    speedup, note = _speedup(a, b)
    return {
        "kind": "pair", "job_id": job_id, "order": list(MEMBERS), "runs": records,
        "started_at": {label: round(t, 3) for label, t in started_at.items()},
        "worker": worker, "slot": slot, "gpu": gpu, "device": a.get("device"),
        "profile": (a.get("method") or {}).get("profile"),
        "differences": differences(a, b), "b_speedup_over_a": speedup, "speedup_note": note,
    }


def run_records(result: dict[str, Any]) -> list[dict[str, Any]]:
    """The run results a job's result logs: a pair's members in the order they ran, else the result itself."""
    if result.get("kind") == "pair":
        return [result["runs"][label] for label in result["order"]]
    return [result]


def member_states(state: str, members: tuple[Member, ...], finished: dict[str, dict[str, Any]]) -> list[dict]:
    """Each member of a pair job with its own state (from the job's state and the members finished so far) and,
    once run, its verdict: what the job listing shows while the pair runs."""
    out, running_seen = [], False
    for member in members:
        record = finished.get(member.label) if state in ("running", "done") else None  # a cancelled job's are dropped
        if record is not None:
            member_state = "done"
        elif state == "running" and not running_seen:
            member_state, running_seen = "running", True
        else:
            member_state = {"running": "queued", "done": "done"}.get(state, state)
        out.append({"label": member.label, "row_id": member.row_id, "program_sha256": member.program_sha256,
                    "state": member_state, "status": (record or {}).get("status"),
                    "error_type": (record or {}).get("error_type")})
    return out
