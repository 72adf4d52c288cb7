"""Pair jobs (issue 24): two programs timed in one job, back to back on one slot under one set of options, each in
its own sandbox. A real `python -m runner serve` (CPU interpreter) runs small fp32 programs; the HTTP API refuses
bad pairs naming the field; the client says when a service predates pair jobs; workers with a stand-in evaluator
show which slot ran what; the job store keeps old tables readable; the results log links the two runs."""

from __future__ import annotations

import json
import sqlite3
import threading
import time

import pytest

from common.results_log import flat_results, read_results
from runner.gpu.slots import Slot
from runner.result import RunResult
from runner.service.app import RunnerService
from runner.service.client import PairJobsUnsupported, RunnerClient, RunnerError, runs_pair_jobs
from runner.service.http import BadRequest, make_server
from runner.service.jobs import JobStore
from runner.service.pairs import pair_result
from runner.spec import RunSpec
from tests.test_runner_service import GOOD, SLOW, TOKEN, WRONG, Service, raw


@pytest.fixture(scope="module")
def service(tmp_path_factory, fixture_store):
    svc = Service(tmp_path_factory.mktemp("runs"), fixture_store).start()
    yield svc
    assert svc.stop() == 0, svc.log.read_text()


def pair_logged(runs_dir, job_id: str, expect: int = 0, timeout_s: float = 10.0) -> list[dict]:
    """The logged runs of a pair job; with `expect`, waits up to `timeout_s` for that many (the worker logs a job's
    runs just after it marks the job done)."""
    deadline = time.monotonic() + timeout_s
    while True:
        logged = [r for r in read_results(runs_dir) if (r.get("pair") or {}).get("job_id") == job_id]
        if len(logged) >= expect or time.monotonic() > deadline:
            return logged
        time.sleep(0.05)


def test_a_pair_job_runs_both_back_to_back_and_logs_both_linked(service):
    client = service.client()
    assert runs_pair_jobs(client.health())
    job = client.submit_pair({"row_id": "train/000000"}, {"program": WRONG}, trials=1, profile="kernelbench-strict")
    assert job["created"] and job["state"] in ("queued", "running")
    done = client.wait(job["id"], timeout=90, poll=0.2)
    result = done["result"]
    assert done["kind"] == "pair" and done["state"] == "done" and done["row_id"] is None
    assert result["kind"] == "pair" and result["job_id"] == job["id"] and result["order"] == ["a", "b"]
    a, b = result["runs"]["a"], result["runs"]["b"]
    assert a["status"] == "ok" and a["row_id"] == "train/000000"
    assert b["status"] == "failed" and b["error_type"] == "output_mismatch" and b["row_id"] is None
    assert a["method"]["profile"] == b["method"]["profile"] == result["profile"] == "kernelbench-strict"
    assert a["method"]["options_key"] == b["method"]["options_key"]  # one RunSpec for both
    assert a["device"] == b["device"] == result["device"] == "cpu-interpreter" and result["slot"] == "cpu0"
    assert result["differences"] == []  # same device, GPU, host and profile
    assert result["b_speedup_over_a"] is None and "b not correct" in result["speedup_note"]
    assert result["started_at"]["a"] + a["duration_s"] <= result["started_at"]["b"] + 0.01  # a, then b
    assert [m["state"] for m in done["members"]] == ["done", "done"]
    assert [(m["status"], m["error_type"]) for m in done["members"]] == [("ok", None), ("failed", "output_mismatch")]
    assert done["members"][0]["row_id"] == "train/000000" and done["members"][1]["program_sha256"] == b["program_sha256"]
    logged = pair_logged(service.runs_dir, job["id"], expect=2)
    assert [(r["pair"]["member"], r["pair"]["position"]) for r in logged] == [("a", 0), ("b", 1)]
    assert logged == [a, b]  # each member logged once, as a normal run result
    assert logged[0]["pair"]["partner_id"] == b["program_sha256"] and logged[1]["pair"]["partner_id"] == "train/000000"
    assert RunResult.from_dict(logged[0]).pair["job_id"] == job["id"]
    flat = [r for r in flat_results(service.runs_dir) if r["pair_job"] == job["id"]]
    assert [r["row_id"] for r in flat] == ["train/000000", None] and {r["status"] for r in flat} == {"ok", "failed"}
    listed = next(j for j in client.jobs(limit=20) if j["id"] == job["id"])
    assert listed["kind"] == "pair" and listed["members"] == done["members"]


def test_two_correct_programs_and_duplicate_pairs(service):
    client = service.client()
    a, b = {"program": GOOD.replace("good_k", "pair_a")}, {"program": GOOD.replace("good_k", "pair_b")}
    first = client.submit_pair(a, b, trials=1)
    again = client.submit_pair(a, b, trials=1)
    swapped = client.submit_pair(b, a, trials=1)  # the other order is another job
    assert again["id"] == first["id"] and not again["created"] and swapped["id"] != first["id"]
    done = client.wait(first["id"], timeout=90, poll=0.2)["result"]
    assert [done["runs"][m]["status"] for m in ("a", "b")] == ["ok", "ok"]
    assert done["b_speedup_over_a"] is None and "not timed on cpu-interpreter" in done["speedup_note"]
    assert client.submit_pair(a, b, trials=1)["id"] == first["id"]  # done: reused
    forced = client.submit_pair(a, b, trials=1, force=True)
    assert forced["created"] and forced["id"] != first["id"]
    client.cancel(forced["id"]), client.cancel(swapped["id"])


def test_a_running_pair_shows_each_member_and_cancelling_logs_neither(service):
    client = service.client()
    job = client.submit_pair({"program": GOOD.replace("good_k", "first_k")},
                             {"program": SLOW.replace("good_k", "second_k")}, trials=1)
    deadline, members = time.monotonic() + 60, []
    while time.monotonic() < deadline:
        summary = client.job(job["id"])
        members = [(m["state"], m["status"]) for m in summary["members"]]
        if members[1][0] == "running":
            break
        time.sleep(0.1)
    assert members == [("done", "ok"), ("running", None)] and summary["state"] == "running"
    assert summary["result"] is None  # a pair's result is whole or none
    assert client.cancel(job["id"])["state"] == "cancelled"
    time.sleep(1.0)
    final = client.job(job["id"])
    assert final["result"] is None and [m["state"] for m in final["members"]] == ["cancelled", "cancelled"]
    assert pair_logged(service.runs_dir, job["id"]) == []


@pytest.mark.parametrize("body, status, field", [
    ({"pair": [{"program": GOOD}, {"program": GOOD}]}, 400, "pair must be an object"),
    ({"pair": {"a": {"program": GOOD}}}, 400, "'a' and 'b'"),
    ({"pair": {"a": {"program": GOOD}, "b": {"program": GOOD}, "c": {}}}, 400, "'a' and 'b'"),
    ({"pair": {"a": {"program": GOOD, "row_id": "train/000000"}, "b": {"program": GOOD}}}, 400, "pair.a must"),
    ({"pair": {"a": {"program": GOOD}, "b": "train/000000"}}, 400, "pair.b must"),
    ({"pair": {"a": {"program": GOOD}, "b": {"colour": 1}}}, 400, "pair.b must"),
    ({"pair": {"a": {"program": GOOD}, "b": {"row_id": "train/12"}}}, 400, "pair.b.row_id"),
    ({"pair": {"a": {"row_id": "train/999999"}, "b": {"program": GOOD}}}, 404, "pair.a.row_id"),
    ({"pair": {"a": {"program": "  "}, "b": {"program": GOOD}}}, 400, "pair.a.program"),
    ({"pair": {"a": {"program": GOOD}, "b": {"program": "\ud800"}}}, 400, "pair.b.program must be valid UTF-8"),
    ({"pair": {"a": {"program": GOOD}, "b": {"program": GOOD}}, "row_id": "train/000000"}, 400, "row_id"),
    ({"pair": {"a": {"program": GOOD}, "b": {"program": GOOD}}, "trials": 0}, 400, "trials"),
])
def test_bad_pair_requests_are_400s_naming_the_field(service, body, status, field):
    before = len(service.client().jobs(limit=1000))
    answer, payload = raw(service.url + "/jobs", "POST", json.dumps(body).encode(),
                          {"Authorization": f"Bearer {TOKEN}", "Content-Type": "application/json"})
    assert answer == status and field in payload["error"], payload
    assert len(service.client().jobs(limit=1000)) == before  # nothing queued


class OlderService:
    """What a runner from before pair jobs answers (its /health has no job_kinds; POST /jobs refuses `pair`)."""

    def health(self):
        return {"status": "ok", "device": "cpu-interpreter"}

    def authorized(self, header):
        return header == f"Bearer {TOKEN}"

    def submit(self, body):
        raise BadRequest(400, f"unknown field(s): {', '.join(sorted(set(body) - {'row_id', 'program'}))}")

    def job(self, job_id):
        raise BadRequest(404, "no job")

    def recent(self, limit, state):
        return []

    def cancel(self, job_id):
        raise BadRequest(404, "no job")


@pytest.fixture
def older_runner():
    server = make_server(OlderService(), "127.0.0.1", 0)
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.1}, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()
    server.server_close()


def test_the_client_names_a_runner_without_pair_jobs(older_runner):
    client = RunnerClient(older_runner, TOKEN, timeout=5)
    assert not runs_pair_jobs(client.health())
    with pytest.raises(PairJobsUnsupported, match="does not know pair jobs"):
        client.submit_pair({"row_id": "train/000000"}, {"row_id": "train/000001"})
    with pytest.raises(RunnerError, match="unknown field"):  # other refusals stay as they were
        client.submit(row_id="train/000000", colour=1)
    with pytest.raises(ValueError, match="b must be"):
        client.submit_pair({"row_id": "train/000000"}, {"row_id": "x", "program": "y"})


# workers and the job store, with a stand-in evaluator (no sandbox)


def test_both_members_run_on_the_claiming_slot_in_order(tmp_path):
    calls, lock = [], threading.Lock()

    def evaluate(job, slot, cancel):
        with lock:
            calls.append((job.program, slot.name, job.spec))
        time.sleep(0.05)
        return RunResult.passed("ok", id=job.result_id, row_id=job.row_id, program_sha256=job.program_sha256,
                                device="cpu-interpreter", system={"hostname": "h"})

    slots = [Slot("cpu0", "cpu", ""), Slot("cpu1", "cpu", "")]
    service = RunnerService(tmp_path, None, slots, evaluate, TOKEN)
    service.start()
    try:
        _, first = service.submit({"pair": {"a": {"program": "A1"}, "b": {"program": "B1"}}, "trials": 2})
        _, second = service.submit({"pair": {"a": {"program": "A2"}, "b": {"program": "B2"}}, "trials": 2})
        deadline = time.monotonic() + 10
        while {service.job(j["id"])["state"] for j in (first, second)} != {"done"} and time.monotonic() < deadline:
            time.sleep(0.05)
    finally:
        service.stop(1.0)
    slot_of = {program: slot for program, slot, _ in calls}
    assert slot_of["A1"] == slot_of["B1"] and slot_of["A2"] == slot_of["B2"]
    assert [p for p, _, _ in calls if p.endswith("1")] == ["A1", "B1"]
    assert {options for _, _, options in calls} == {RunSpec.build("cpu", trials=2)}


def test_a_pair_the_service_died_on_is_crashed_for_both_members(tmp_path):
    store = JobStore(tmp_path / "runner.sqlite3")
    job, _ = store.submit_pair({"a": ("train/000001", "p1"), "b": (None, "p2")}, RunSpec("cpu"))
    for _ in range(store.max_attempts - 1):  # services that died while running it, and were restarted
        store.claim("dead-service/cpu0")
        store.record_progress(job.id, {"runs": {"a": {"status": "ok"}}})
        assert store.recover(lambda j: {}) == (1, [])
        assert store.get(job.id).result is None  # requeued: what the dead service had finished is dropped
    store.claim("dead-service/cpu0")
    store.close()
    service = RunnerService(tmp_path, None, [], lambda *a: None, TOKEN)
    assert service.start() == {"requeued": 0, "crashed": 1}
    done = service.job(job.id)
    service.stop(0.1)
    assert done["state"] == "done" and done["result"]["kind"] == "pair"
    logged = pair_logged(tmp_path, job.id)
    assert [(r["id"], r["error_type"], r["pair"]["member"]) for r in logged] == [
        ("train/000001", "crashed", "a"), (job.members[1].program_sha256, "crashed", "b")]


def test_a_jobs_table_from_before_pair_jobs_stays_readable(tmp_path):
    path = tmp_path / "runner.sqlite3"
    old = sqlite3.connect(path)
    old.executescript("""CREATE TABLE jobs (seq INTEGER PRIMARY KEY AUTOINCREMENT, id TEXT NOT NULL UNIQUE,
        key TEXT NOT NULL, row_id TEXT, program_sha256 TEXT NOT NULL, program TEXT NOT NULL,
        options_json TEXT NOT NULL, state TEXT NOT NULL, attempts INTEGER NOT NULL DEFAULT 0, result_json TEXT,
        created_at REAL NOT NULL, started_at REAL, finished_at REAL, worker TEXT);""")
    old.execute("INSERT INTO jobs (id, key, row_id, program_sha256, program, options_json, state, created_at) "
                "VALUES ('old1', 'k', 'train/000001', 'abc', 'print(1)', ?, 'queued', 1.0)",
                (json.dumps(RunSpec("cpu").to_dict()),))
    old.commit()
    old.close()
    store = JobStore(path)
    old_job = store.get("old1")
    assert not old_job.is_pair and old_job.summary()["kind"] == "single" and old_job.row_id == "train/000001"
    pair, _ = store.submit_pair({"a": (None, "p1"), "b": (None, "p2")}, RunSpec("cpu"))
    assert [m.program for m in store.get(pair.id).members] == ["p1", "p2"]


def test_the_speedup_and_the_differences_of_a_pair():
    def run(median_ms, gpu="NVIDIA H200", status="ok"):
        return {"status": status, "device": "cuda", "timing": {"median_ms": median_ms},
                "system": {"gpu": gpu, "hostname": "h"}, "method": {"profile": "kernelbench"}}

    same = pair_result("j", "w", "gpu0", "NVIDIA H200", {"a": run(2.0), "b": run(0.5)}, {"a": 1.0, "b": 2.0})
    assert same["b_speedup_over_a"] == 4.0 and same["differences"] == [] and same["speedup_note"] is None
    other = pair_result("j", "w", "gpu0", None, {"a": run(1.0), "b": run(1.0, gpu="NVIDIA A100")}, {"a": 1, "b": 2})
    assert other["differences"] == ["GPU: NVIDIA H200 vs NVIDIA A100"]
    failed = pair_result("j", "w", "gpu0", None, {"a": run(1.0, status="failed"), "b": run(1.0)}, {"a": 1, "b": 2})
    assert failed["b_speedup_over_a"] is None and failed["speedup_note"] == "a not correct: no speedup"
