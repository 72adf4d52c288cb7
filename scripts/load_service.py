"""Bounded load test of the runner service: N concurrent HTTP clients against `python -m runner serve` on loopback
(CPU interpreter, a fresh runs directory), for `--duration` seconds (`scripts/load_test.py --target service`).

Each client opens a new connection per request (the worst case for the listen backlog) and loops over: `GET
/health`; `POST /jobs` of one of `--programs` tiny distinct programs that fail fast (most submissions collapse
onto an existing job, so the HTTP layer is measured, not the sandbox); `GET /jobs/{id}` of the job it got;
`GET /jobs?limit=20`; and, every `--bad-every` rounds, one hostile request from `BAD` that must get its 4xx.
An error is any answer other than the expected status, a reset, or a timeout. Afterwards it waits for the queue
to drain and checks that every job it was given exists, was created (201) exactly once, is `done`, and is in
the results log exactly once.
Prints p50/p95/max per request kind, errors, the service's peak thread count and RSS."""

from __future__ import annotations

import http.client
import json
import statistics
import sys
import tempfile
import threading
import time
from collections import Counter, defaultdict
from pathlib import Path
from urllib.parse import urlsplit

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from common.results_log import read_results  # noqa: E402
from scripts.fault_test import TOKEN, Service, tiny_program  # noqa: E402
from scripts.load_common import percentile, run_clients  # noqa: E402

AUTH = {"Authorization": f"Bearer {TOKEN}"}
# (name, method, path, body, expected status): inputs that broke or bent the service before issue 14.
BAD = [
    ("deep json", "POST", "/jobs", b"[" * 200_000 + b"]" * 200_000, 400),
    ("arabic-indic row id", "POST", "/jobs", json.dumps({"row_id": "train/١٢٣"}).encode(), 400),
    ("superscript row id", "POST", "/jobs", json.dumps({"row_id": "train/²"}).encode(), 400),
    ("superscript limit", "GET", "/jobs?limit=%C2%B2", b"", 400),
    ("wrong token with a body", "POST", "/jobs", b"GET /health HTTP/1.1\r\n\r\n", 401),
]


class Client(threading.Thread):
    """One load client: its own request loop, timings by request kind, errors, the job ids it was given."""

    def __init__(self, index: int, netloc: str, until: float, programs: int, bad_every: int, timeout: float):
        super().__init__(daemon=True)
        self.index, self.netloc, self.until, self.programs = index, netloc, until, programs
        self.bad_every, self.timeout = bad_every, timeout
        self.times: dict[str, list[float]] = defaultdict(list)
        self.errors: list[str] = []
        self.job_ids: set[str] = set()
        self.created = 0  # submissions answered 201 (a new job): each distinct program exactly once

    def call(self, kind: str, method: str, path: str, body: bytes | None, expect: tuple[int, ...],
             headers: dict[str, str] | None = None) -> dict | None:
        started = time.monotonic()
        conn = http.client.HTTPConnection(self.netloc, timeout=self.timeout)
        try:
            conn.request(method, path, body=body, headers=dict(AUTH if headers is None else headers))
            reply = conn.getresponse()
            data = reply.read()
            answer = json.loads(data)
        except (OSError, http.client.HTTPException, ValueError) as e:
            self.errors.append(f"{kind}: {type(e).__name__}: {e}"[:200])
            return None
        finally:
            conn.close()
        self.times[kind].append(time.monotonic() - started)
        if reply.status not in expect:
            self.errors.append(f"{kind}: HTTP {reply.status} (expected {expect}): {answer}"[:200])
            return None
        self.created += reply.status == 201
        return answer

    def run(self) -> None:
        round_ = 0
        while time.monotonic() < self.until:
            self.call("health", "GET", "/health", None, (200,), headers={})
            program = tiny_program((self.index * 7 + round_) % self.programs)
            job = self.call("submit", "POST", "/jobs", json.dumps(
                {"program": program, "trials": 1, "timeout_s": 60}).encode(), (200, 201))
            if job:
                self.job_ids.add(job["id"])
                self.call("job", "GET", f"/jobs/{job['id']}", None, (200,))
            self.call("list", "GET", "/jobs?limit=20", None, (200,))
            if self.bad_every and round_ % self.bad_every == 0:
                name, method, path, body, expect = BAD[(self.index + round_ // self.bad_every) % len(BAD)]
                headers = {"Authorization": "Bearer wrong"} if expect == 401 else None
                self.call(f"bad: {name}", method, path, body, (expect,), headers=headers)
            round_ += 1


def ms(values: list[float], q: float) -> float | None:
    """The q-quantile of durations in seconds, in milliseconds."""
    return percentile(values, q, scale=1000, digits=1)


def sample_process(pid: int, peaks: dict[str, int], stop: threading.Event) -> None:
    while not stop.wait(0.2):
        try:
            with open(f"/proc/{pid}/status") as fh:
                fields = dict(line.split(":", 1) for line in fh)
        except OSError:
            return
        peaks["threads"] = max(peaks["threads"], int(fields["Threads"]))
        peaks["rss_kib"] = max(peaks["rss_kib"], int(fields["VmRSS"].split()[0]))


def load(runs_dir: Path, clients: int, duration: float, programs: int, bad_every: int, timeout: float) -> dict:
    runs_dir.mkdir(parents=True, exist_ok=True)
    service = Service(runs_dir)
    client = service.start()
    netloc = urlsplit(service.url).netloc
    peaks = {"threads": 0, "rss_kib": 0}
    until = time.monotonic() + duration
    workers = [Client(i, netloc, until, programs, bad_every, timeout) for i in range(clients)]
    elapsed = run_clients(workers, sample_process, service.proc.pid, peaks)
    ids = set().union(*(w.job_ids for w in workers))
    drain_deadline = time.monotonic() + 600
    while client.health()["queue_length"] or client.health()["running"]:
        if time.monotonic() > drain_deadline:
            break
        time.sleep(0.5)
    final = {i: client.job(i) for i in ids}
    service.stop()
    logged = Counter(r.get("id") for r in read_results(runs_dir))
    by_job = [logged.get((j.get("result") or {}).get("id"), 0) for j in final.values()]
    times: dict[str, list[float]] = defaultdict(list)
    for w in workers:
        for kind, values in w.times.items():
            times[kind].extend(values)
    every = [t for kind, v in times.items() if not kind.startswith("bad") for t in v]
    errors = [e for w in workers for e in w.errors]
    return {
        "clients": clients, "duration_s": round(elapsed, 1), "requests": sum(len(v) for v in times.values()),
        "requests_per_s": round(sum(len(v) for v in times.values()) / elapsed, 1),
        "errors": len(errors), "error_examples": errors[:5],
        "p50_ms": ms(every, 0.5), "p95_ms": ms(every, 0.95),
        "per_kind": {k: {"n": len(v), "p50_ms": ms(v, 0.5), "p95_ms": ms(v, 0.95),
                         "max_ms": round(max(v) * 1000, 1), "mean_ms": round(statistics.fmean(v) * 1000, 1)}
                     for k, v in sorted(times.items())},
        "service_peak_threads": peaks["threads"], "service_peak_rss_mib": round(peaks["rss_kib"] / 1024),
        "jobs": len(ids), "jobs_created_201": sum(w.created for w in workers), "jobs_states": dict(Counter(j["state"] for j in final.values())),
        "jobs_logged_once": sum(n == 1 for n in by_job), "jobs_logged_twice_or_more": sum(n > 1 for n in by_job),
        "jobs_not_logged": sum(n == 0 for n in by_job),
        "service_log_tracebacks": sum(log.read_text().count("Traceback") for log in service.logs),
    }


def run(args) -> dict:
    with tempfile.TemporaryDirectory(prefix="tlx-load-service-") as tmp:
        return load(Path(tmp) / "runs", args.clients, min(args.duration, 600.0), args.programs, args.bad_every,
                    args.request_timeout)


def ok(stats: dict) -> bool:
    return (stats["errors"] == 0 and stats["jobs_states"] == {"done": stats["jobs"]}
            and stats["jobs_created_201"] == stats["jobs"]
            and stats["jobs_logged_once"] == stats["jobs"] and stats["service_log_tracebacks"] == 0)
