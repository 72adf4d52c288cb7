"""The runner service end to end (a real `python -m runner serve` on a free loopback port, the real sandbox in CPU
interpreter mode) plus the job store's queue mechanics."""

from __future__ import annotations

import http.client
import json
import os
import re
import signal
import subprocess
import sys
import threading
import time
import urllib.request
from pathlib import Path
from urllib.parse import urlsplit

import pytest

from common.results_log import read_results
from runner.gpu.slots import make_slots
from runner.result import RunResult
from runner.service.client import RunnerClient, RunnerError, RunnerUnavailable
from runner.service.jobs import JobStore
from runner.spec import RunSpec
from tests.fixtures import program

REPO = Path(__file__).resolve().parent.parent
TOKEN = "test-token-0123456789"
GOOD = program("relu", 128, "good_k")  # not a fixture row's program
WRONG = GOOD.replace("tl.maximum(x, 0.0)", "x")  # no ReLU: negatives differ
SLOW = GOOD.replace("def get_inputs():", "def get_inputs():\n    import time; time.sleep(3)")


class Service:
    """`python -m runner serve --port 0` in a subprocess; the port is read from its startup line."""

    def __init__(self, runs_dir: Path, store: Path | None, token: str | None = TOKEN, host: str = "127.0.0.1",
                 args: tuple[str, ...] = (), env: dict[str, str] | None = None):
        self.runs_dir, self.store, self.token, self.host, self.args = runs_dir, store, token, host, args
        self.extra_env = env or {}
        self.proc: subprocess.Popen | None = None
        self.url = ""

    def start(self, timeout: float = 30.0) -> Service:
        env = {k: v for k, v in os.environ.items() if not k.startswith("TLX_")}
        if self.token:
            env["TLX_RUNNER_TOKEN"] = self.token
        env["TLX_CACHE_DIR"] = str(self.runs_dir / "cache")
        env.update(self.extra_env)
        cmd = [sys.executable, "-m", "runner", "serve", "--host", self.host, "--port", "0", "--device", "cpu",
               "--runs-dir", str(self.runs_dir), "--grace", "2"]
        if self.store:
            cmd += ["--store", str(self.store)]
        cmd += self.args
        self.log = self.runs_dir / f"service-{time.monotonic_ns()}.log"
        self.runs_dir.mkdir(parents=True, exist_ok=True)
        with open(self.log, "w") as err:
            self.proc = subprocess.Popen(cmd, cwd=REPO, env=env, stdout=subprocess.DEVNULL, stderr=err)
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            found = re.search(r"listening on (http://\S+?) \(", self.log.read_text())
            if found:
                self.url = found.group(1)
                return self
            if self.proc.poll() is not None:
                break
            time.sleep(0.1)
        raise AssertionError(f"service did not start: {self.log.read_text()}")

    def client(self, token: str | None = TOKEN) -> RunnerClient:
        return RunnerClient(self.url, token, timeout=10)

    def stop(self, sig: int = signal.SIGTERM) -> int:
        self.proc.send_signal(sig)
        return self.proc.wait(30)


def logged(runs_dir: Path, sha: str) -> list[dict]:
    return [r for r in read_results(runs_dir) if r.get("program_sha256") == sha]


@pytest.fixture(scope="module")
def service(tmp_path_factory, fixture_store):
    svc = Service(tmp_path_factory.mktemp("runs"), fixture_store).start()
    yield svc
    assert svc.stop() == 0, svc.log.read_text()


def raw(url: str, method: str = "GET", body: bytes | None = None, headers: dict | None = None):
    req = urllib.request.Request(url, data=body, method=method, headers=headers or {})
    try:
        with urllib.request.urlopen(req, timeout=10) as resp:
            return resp.status, json.loads(resp.read())
    except urllib.error.HTTPError as e:
        return e.code, json.loads(e.read())


def test_token_is_required_except_on_health(service):
    assert raw(service.url + "/health")[0] == 200
    assert raw(service.url + "/jobs")[0] == 401
    assert raw(service.url + "/jobs", headers={"Authorization": "Bearer wrong"})[0] == 401
    assert raw(service.url + "/jobs", "POST", b'{"program": "x"}', {"Authorization": "Basic " + TOKEN})[0] == 401
    with pytest.raises(RunnerError) as e:
        service.client("wrong").jobs()
    assert e.value.status == 401
    assert raw(service.url + "/jobs?limit=3", headers={"Authorization": f"Bearer {TOKEN}"})[0] == 200
    health = service.client(None).health()
    assert health["device"] == "cpu-interpreter" and health["workers"][0]["name"] == "cpu0"
    assert health["versions"]["torch"] and "queue_length" in health
    assert health["isolation"]["mode"] in ("bwrap", "unshare", "none") and health["isolation"]["reason"]


def test_bad_requests_get_clear_errors(service):
    auth = {"Authorization": f"Bearer {TOKEN}"}
    status, body = raw(service.url + "/jobs", "POST", b"{not json", auth)
    assert status == 400 and "not valid JSON" in body["error"]
    status, body = raw(service.url + "/jobs", "POST", json.dumps({"program": GOOD, "colour": 1}).encode(), auth)
    assert status == 400 and "colour" in body["error"]
    status, body = raw(service.url + "/jobs", "POST", json.dumps({"program": GOOD, "trials": 0}).encode(), auth)
    assert status == 400 and "trials" in body["error"]
    status, body = raw(service.url + "/jobs", "POST", json.dumps({"program": GOOD, "device": "cuda"}).encode(), auth)
    assert status == 400 and "no GPU" in body["error"]
    conn = http.client.HTTPConnection(urlsplit(service.url).netloc, timeout=10)
    conn.putrequest("POST", "/jobs")
    conn.putheader("Authorization", f"Bearer {TOKEN}")
    conn.putheader("Content-Length", str(5 * 1024 * 1024))  # the body is refused before it is sent
    conn.endheaders()
    response = conn.getresponse()
    assert response.status == 413 and "body over" in json.loads(response.read())["error"]
    conn.close()
    with pytest.raises(RunnerError) as e:
        service.client().submit(row_id="train/999999")
    assert e.value.status == 404 and "train/999999" in e.value.message
    with pytest.raises(RunnerError) as e:
        service.client().job("nope")
    assert e.value.status == 404


def test_verdicts_of_good_wrong_and_stored_programs(service):
    client = service.client()
    good = client.submit(program=GOOD, trials=1)
    wrong = client.submit(program=WRONG, trials=1)
    row = client.submit(row_id="train/000000", trials=1)
    assert {good["state"], wrong["state"], row["state"]} <= {"queued", "running"}
    good, wrong, row = (client.wait(j["id"], timeout=60, poll=0.2) for j in (good, wrong, row))
    assert good["result"]["status"] == "ok" and good["result"]["correct_trials"] == 1
    assert wrong["result"]["status"] == "failed" and wrong["result"]["error_type"] == "output_mismatch"
    assert row["result"]["status"] == "ok" and row["result"]["row_id"] == "train/000000"
    assert row["row_id"] == "train/000000" and row["attempts"] == 1
    for job in (good, wrong, row):
        assert len(logged(service.runs_dir, job["result"]["program_sha256"])) == 1
        assert (service.runs_dir / "triton-cache" / job["result"]["program_sha256"]).is_dir()  # shared cache
    listed = {j["id"]: j["state"] for j in client.jobs(limit=10)}
    assert listed[good["id"]] == "done" and listed[row["id"]] == "done"


def test_a_runner_without_the_explorers_packages(tmp_path, fixture_store):
    """A GPU host may carry only stdlib, torch and triton: /health answers with the store's error, a row id is
    refused with 503 naming the missing package, and a program sent as text runs."""
    blocked = tmp_path / "blocked"
    blocked.mkdir()
    for name in ("duckdb", "pyarrow"):
        (blocked / f"{name}.py").write_text("raise ModuleNotFoundError(f'No module named {__name__!r}', name=__name__)\n")
    env = {"PYTHONPATH": os.pathsep.join([str(blocked), str(REPO)])}
    svc = Service(tmp_path / "runs", fixture_store, env=env).start()
    try:
        status, health = raw(svc.url + "/health")
        assert status == 200, health
        assert health["store"]["build_id"] is None and "lacks" in health["store"]["error"]
        client = svc.client()
        with pytest.raises(RunnerError, match=r"'(duckdb|pyarrow)'.*requirements\.txt"):
            client.submit(row_id="train/000000", trials=1)
        job = client.wait(client.submit(program=GOOD.replace("good_k", "bare_k"), trials=1)["id"], timeout=60,
                          poll=0.2)
        assert job["result"]["status"] == "ok", job
    finally:
        assert svc.stop() == 0, svc.log.read_text()


def test_duplicate_submissions_collapse(service):
    client = service.client()
    first = client.submit(program=GOOD.replace("good_k", "dup_k"), trials=1)
    again = client.submit(program=GOOD.replace("good_k", "dup_k"), trials=1)
    assert again["id"] == first["id"] and not again["created"] and first["created"]
    other = client.submit(program=GOOD.replace("good_k", "dup_k"), trials=2)  # other options: another job
    assert other["id"] != first["id"]
    done = client.wait(first["id"], timeout=60, poll=0.2)
    reuse = client.submit(program=GOOD.replace("good_k", "dup_k"), trials=1)
    assert reuse["id"] == first["id"] and reuse["state"] == "done"
    forced = client.submit(program=GOOD.replace("good_k", "dup_k"), trials=1, force=True)
    assert forced["id"] != first["id"] and forced["created"]
    client.cancel(forced["id"]), client.cancel(other["id"])
    assert done["result"]["status"] == "ok"


def test_cancel_queued_and_running_jobs(service):
    client = service.client()
    slow = client.submit(program=SLOW.replace("good_k", "slow_k"), trials=1)
    queued = client.submit(program=GOOD.replace("good_k", "queued_k"), trials=1)
    deadline = time.monotonic() + 30
    while client.job(slow["id"])["state"] != "running" and time.monotonic() < deadline:
        time.sleep(0.1)
    assert client.job(queued["id"])["state"] == "queued"
    assert client.cancel(queued["id"])["state"] == "cancelled"
    started = time.monotonic()
    assert client.cancel(slow["id"])["state"] == "cancelled"
    while client.health()["workers"][0]["job"] is not None and time.monotonic() - started < 10:
        time.sleep(0.1)
    assert time.monotonic() - started < 2.5, "the running sandbox was not killed"
    time.sleep(0.3)
    for job in (slow, queued):
        final = client.job(job["id"])
        assert final["state"] == "cancelled" and final["result"] is None
        assert logged(service.runs_dir, final["program_sha256"]) == []


def test_queued_job_survives_a_killed_service(tmp_path, fixture_store):
    svc = Service(tmp_path / "runs", fixture_store).start()
    client = svc.client()
    running = client.submit(program=SLOW, trials=1)
    queued = client.submit(program=GOOD, trials=1)
    deadline = time.monotonic() + 30
    while client.job(running["id"])["state"] != "running" and time.monotonic() < deadline:
        time.sleep(0.1)
    svc.stop(signal.SIGKILL)
    second = Service(tmp_path / "runs", fixture_store).start()
    try:
        client = second.client()
        done_running = client.wait(running["id"], timeout=60, poll=0.2)
        done_queued = client.wait(queued["id"], timeout=60, poll=0.2)
    finally:
        assert second.stop() == 0
    assert done_running["result"]["status"] == "ok" and done_running["attempts"] == 2
    assert done_queued["result"]["status"] == "ok" and done_queued["attempts"] == 1
    assert "recovered {'requeued': 1, 'crashed': 0}" in second.log.read_text()
    for job in (done_running, done_queued):
        assert len(logged(tmp_path / "runs", job["program_sha256"])) == 1


def test_no_token_only_on_loopback(tmp_path):
    refused = subprocess.run(
        [sys.executable, "-m", "runner", "serve", "--host", "0.0.0.0", "--port", "0", "--device", "cpu",
         "--runs-dir", str(tmp_path)],
        cwd=REPO, env={k: v for k, v in os.environ.items() if k != "TLX_RUNNER_TOKEN"},
        capture_output=True, text=True, timeout=30,
    )
    assert refused.returncode != 0 and "without TLX_RUNNER_TOKEN" in refused.stderr
    svc = Service(tmp_path, None, token=None).start()
    try:
        token_file = tmp_path / "runner.token"
        assert token_file.stat().st_mode & 0o077 == 0
        token = token_file.read_text().strip()
        assert token not in svc.log.read_text()
        assert svc.client(token).jobs() == []
        with pytest.raises(RunnerError):
            svc.client(None).jobs()
    finally:
        assert svc.stop() == 0


def test_client_reports_an_absent_service():
    with pytest.raises(RunnerUnavailable):
        RunnerClient("http://127.0.0.1:9", TOKEN, timeout=2).health()


# queue mechanics of the job store (no evaluation)


def test_claims_are_atomic_and_fifo(tmp_path):
    store = JobStore(tmp_path / "runner.sqlite3")
    ids = [store.submit(f"p{i}", RunSpec("cpu"))[0].id for i in range(40)]
    claimed: list[str] = []
    lock = threading.Lock()

    def worker(name: str) -> None:
        while (job := store.claim(name)) is not None:
            with lock:
                claimed.append(job.id)

    threads = [threading.Thread(target=worker, args=(f"w{i}",)) for i in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert sorted(claimed) == sorted(ids) and len(set(claimed)) == 40
    assert store.counts()["running"] == 40


def test_recover_requeues_then_gives_up_as_crashed(tmp_path):
    store = JobStore(tmp_path / "runner.sqlite3", max_attempts=2)
    job, _ = store.submit("print(1)", RunSpec("cpu"), row_id="train/000001")
    crashed = RunResult.crashed("gave up", job.spec, id=job.result_id, row_id=job.row_id,
                                program_sha256=job.program_sha256).to_dict()
    assert store.claim("w").attempts == 1
    assert store.recover(lambda j: crashed) == (1, [])
    assert store.claim("w").attempts == 2
    assert store.recover(lambda j: crashed) == (0, [crashed])
    final = store.get(job.id)
    assert final.state == "done" and final.result == crashed and final.attempts == 2
    assert final.result["error_type"] == "crashed" and final.result["method"]["options_key"] == RunSpec("cpu").key()
    assert final.result["device"] == "cpu-interpreter" and final.result["id"] == "train/000001"
    assert store.finish(job.id, RunResult.passed("late").to_dict()) is False  # no longer running: late results dropped


def test_one_slot_per_visible_gpu(monkeypatch):
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "2,5")
    slots = make_slots("auto", gpus=["NVIDIA H200", "NVIDIA H200"])
    assert [(s.name, s.device, s.visible_devices) for s in slots] == [("gpu0", "cuda", "2"), ("gpu1", "cuda", "5")]
    assert [(s.name, s.visible_devices) for s in make_slots("cpu", cpu_workers=2)] == [("cpu0", ""), ("cpu1", "")]
    assert [s.device for s in make_slots("auto", gpus=[])] == ["cpu"]
    with pytest.raises(RuntimeError, match="no CUDA GPU"):
        make_slots("cuda", gpus=[])
