"""Fault tests of the runner service.

    python scripts/fault_test.py --jobs 100 [--kill-after 5] [--cpu-workers 1] [--json]
    python scripts/fault_test.py --stalled 1000 [--json]

`--jobs`: SIGKILL `python -m runner serve` with N jobs queued, restart it, and check that every job finishes
exactly once (one `done` job in the job DB, one line in the results log per job).
`--stalled`: open N connections that each send the headers of an upload and part of its body, then nothing;
count the service's threads, how each connection was answered (408 after the idle timeout, or 503 at once past
the connection cap; anything else, a reset or no answer is an error), and how soon `/health` answers again.

CPU interpreter mode, loopback only, a fresh runs directory in a temp folder. The jobs are tiny distinct programs
that fail fast (`missing_symbol`): the test is about the queue, not evaluation. Prints a summary (and exits 1 when
a job was lost or duplicated); `tests/test_reliability_service.py` runs it with fewer jobs."""

from __future__ import annotations

import argparse
import json
import os
import re
import signal
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from common.results_log import read_results  # noqa: E402
from runner.service.client import RunnerClient, RunnerUnavailable  # noqa: E402
from runner.service.jobs import JobStore  # noqa: E402

TOKEN = "fault-test-token-0123456789"


def tiny_program(i: int) -> str:
    return f"import torch\n\n\nclass Model(torch.nn.Module):\n    pass  # job {i}\n"


class Service:
    """`python -m runner serve --device cpu --port 0` on loopback; `start` waits for its "listening on" line."""

    def __init__(self, runs_dir: Path, cpu_workers: int = 1) -> None:
        self.runs_dir, self.cpu_workers = runs_dir, cpu_workers
        self.proc: subprocess.Popen | None = None
        self.url = ""
        self.logs: list[Path] = []

    def start(self, timeout: float = 60.0) -> RunnerClient:
        env = {k: v for k, v in os.environ.items() if not k.startswith("TLX_")}
        env.update(TLX_RUNNER_TOKEN=TOKEN, TLX_CACHE_DIR=str(self.runs_dir / "cache"))
        log = self.runs_dir / f"service-{len(self.logs)}.log"
        self.logs.append(log)
        with open(log, "w") as err:
            self.proc = subprocess.Popen(
                [sys.executable, "-m", "runner", "serve", "--host", "127.0.0.1", "--port", "0", "--device", "cpu",
                 "--cpu-workers", str(self.cpu_workers), "--runs-dir", str(self.runs_dir), "--grace", "2"],
                cwd=REPO, env=env, stdout=subprocess.DEVNULL, stderr=err)
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            found = re.search(r"listening on (http://\S+?) \(", log.read_text())
            if found:
                self.url = found.group(1)
                return RunnerClient(self.url, TOKEN, timeout=10)
            if self.proc.poll() is not None:
                break
            time.sleep(0.1)
        raise RuntimeError(f"runner service did not start: {log.read_text()}")

    def stop(self, sig: int = signal.SIGTERM) -> int:
        self.proc.send_signal(sig)
        return self.proc.wait(60)


def kill_and_recover(runs_dir: Path, jobs: int, kill_after: int = 5, cpu_workers: int = 1,
                     timeout: float = 600.0) -> dict:
    """Submit `jobs` jobs, SIGKILL the service once `kill_after` are done, restart it, wait for all; count."""
    runs_dir.mkdir(parents=True, exist_ok=True)
    service = Service(runs_dir, cpu_workers)
    client = service.start()
    started = time.monotonic()
    ids = [client.submit(program=tiny_program(i), trials=1, timeout_s=60)["id"] for i in range(jobs)]
    while sum(j["state"] == "done" for j in client.jobs(limit=jobs)) < kill_after:
        time.sleep(0.05)
    service.stop(signal.SIGKILL)
    store = JobStore(runs_dir / "runner.sqlite3")
    at_kill = store.counts()
    store.close()
    client = service.start()
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            if not (client.health()["queue_length"] or any(j["state"] == "running" for j in client.jobs(limit=jobs))):
                break
        except RunnerUnavailable:  # a slow answer on a loaded host (a full CI run on 2 cores): ask again
            pass
        time.sleep(0.2)
    elapsed = time.monotonic() - started
    final = [client.job(i) for i in ids]
    service.stop()
    results = Counter(r.get("id") for r in read_results(runs_dir))
    states = Counter(j["state"] for j in final)
    by_job = [results.get(j["result"]["id"] if j["result"] else None, 0) for j in final]
    return {
        "jobs": jobs, "at_kill": at_kill, "states": dict(states),
        "logged_once": sum(n == 1 for n in by_job), "logged_twice_or_more": sum(n > 1 for n in by_job),
        "not_logged": sum(n == 0 for n in by_job), "attempts": dict(Counter(j["attempts"] for j in final)),
        "error_types": dict(Counter((j["result"] or {}).get("error_type") for j in final)),
        "restart_line": next((line for line in service.logs[-1].read_text().splitlines() if "recovered" in line),
                             None),
        "elapsed_s": round(elapsed, 1), "jobs_per_min": round(jobs / elapsed * 60, 1),
    }


def stalled_uploads(runs_dir: Path, connections: int, answer_timeout: float = 120.0) -> dict:
    """Open `connections` stalled uploads at once against a fresh service; see the module docstring."""
    import socket
    import threading
    from urllib.parse import urlsplit

    runs_dir.mkdir(parents=True, exist_ok=True)
    service = Service(runs_dir)
    client = service.start()
    host, port = urlsplit(service.url).netloc.rsplit(":", 1)
    peak = {"threads": 0}
    stop = threading.Event()

    def sample() -> None:
        while not stop.wait(0.1):
            peak["threads"] = max(peak["threads"], _threads(service.proc.pid))

    client.health()
    baseline = _threads(service.proc.pid)
    sampler = threading.Thread(target=sample, daemon=True)
    sampler.start()
    head = (f"POST /jobs HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer {TOKEN}\r\nContent-Length: 1000\r\n\r\n"
            '{"program": "').encode()
    started = time.monotonic()
    socks = []
    for _ in range(connections):
        sock = socket.create_connection((host, int(port)), timeout=answer_timeout)
        sock.sendall(head)
        socks.append(sock)
    opened_s = time.monotonic() - started
    answers: Counter = Counter()
    for sock in socks:
        try:
            data = b""
            while chunk := sock.recv(65536):
                data += chunk
            status = data.split(b" ", 2)[1].decode() if data.startswith(b"HTTP/1.1 ") else "no answer"
            answers[status if data.rstrip().endswith(b"}") else f"{status} without a JSON body"] += 1
        except OSError as e:
            answers[type(e).__name__] += 1
        finally:
            sock.close()
    answered_s = time.monotonic() - started
    while True:
        try:
            client.health()
            break
        except Exception:  # refused while connections were still being closed
            time.sleep(0.1)
    healthy_s = time.monotonic() - started
    settled = _threads(service.proc.pid)
    stop.set()
    service.stop()
    return {
        "connections": connections, "opened_in_s": round(opened_s, 1), "threads_before": baseline,
        "threads_peak": peak["threads"], "threads_after": settled, "answers": dict(answers),
        "all_answered_after_s": round(answered_s, 1), "health_ok_after_s": round(healthy_s, 1),
        "errors": sum(n for status, n in answers.items() if status not in ("408", "503")),
        "service_log_tracebacks": sum(log.read_text().count("Traceback") for log in service.logs),
    }


def _threads(pid: int) -> int:
    with open(f"/proc/{pid}/status") as fh:
        return next(int(line.split()[1]) for line in fh if line.startswith("Threads:"))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--jobs", type=int, default=100)
    parser.add_argument("--kill-after", type=int, default=5, help="jobs done before the SIGKILL")
    parser.add_argument("--cpu-workers", type=int, default=1)
    parser.add_argument("--stalled", type=int, default=0, help="run the stalled-uploads test with N connections")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    if args.stalled:
        with tempfile.TemporaryDirectory(prefix="tlx-fault-") as tmp:
            stats = stalled_uploads(Path(tmp) / "runs", args.stalled)
        print(json.dumps(stats, indent=None if args.json else 2))
        return 0 if stats["errors"] == 0 and stats["service_log_tracebacks"] == 0 else 1
    with tempfile.TemporaryDirectory(prefix="tlx-fault-") as tmp:
        stats = kill_and_recover(Path(tmp) / "runs", args.jobs, args.kill_after, args.cpu_workers)
    print(json.dumps(stats, indent=None if args.json else 2))
    ok = stats["states"] == {"done": args.jobs} and stats["logged_once"] == args.jobs
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
