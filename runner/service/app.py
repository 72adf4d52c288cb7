"""`python -m runner serve`: the local runner service (stdlib `ThreadingHTTPServer`, JSON over HTTP).

API (design §3b): `GET /health` (open), `POST /jobs` `{"row_id": ...}` or `{"program": "..."}` plus options
`device` (auto|cuda|cpu), `timeout_s`, `trials`, `profile`, `atol`, `rtol`, `inputs_device` (device|cpu), `force`
-> `{"id", "state"}`; a pair job (`runner.service.pairs`: two programs timed back to back in one job) instead gives
`"pair": {"a": {"row_id" | "program"}, "b": {...}}` with the same options; `GET /jobs/{id}` ->
`{"id", "state", "result", ...}`; `GET /jobs?limit=N&state=S`; `DELETE /jobs/{id}` cancels (a running job's
sandbox is killed). Errors are JSON `{"error": "..."}` with a 4xx status. The HTTP layer (parsing, limits on
bodies, time and connections, the server class) is `runner.service.http`.

Security:
- Every request except `GET /health` needs `Authorization: Bearer <token>` (compared in constant time).
- The token comes from `TLX_RUNNER_TOKEN`. Without it, the service refuses to listen on a non-loopback host; on
  a loopback host it generates a random token, writes it to `RUNS_DIR/runner.token` (mode 0600; the `submit`
  command reads it from there) and prints that path, never the token itself.
- One service per runs directory (`RUNS_DIR/runner.lock`), so recovering jobs left `running` by a dead service
  can never requeue a job that another live service is running.

Jobs live in `RUNS_DIR/runner.sqlite3` (see `runner.service.jobs`), finished results are also appended to
`RUNS_DIR/results/service-<host>-<pid>.jsonl`. SIGTERM/SIGINT: stop accepting, let running jobs finish for
`--grace` seconds, then kill their sandboxes and put them back in the queue for the next start.
"""

from __future__ import annotations

import argparse
import fcntl
import hmac
import ipaddress
import os
import secrets
import signal
import socket
import sys
import threading
import time
from importlib import metadata
from pathlib import Path
from typing import Any

from common.hardware import result_device
from common.program_hash import is_utf8
from common.results_log import ResultsLog, default_writer
from common.row_id import BadRowId, check_row_id
from common.settings import DEFAULT_PORT, Settings, load_settings
from runner.gpu.gate import gates_report
from runner.gpu.host_lock import prefer_this_process
from runner.gpu.oom_rerun import warm_gpu_slots
from runner.gpu.slots import Slot, make_slots
from runner.result import RunResult
from runner.rows import RowNotFound, StoreUnavailable, load_program, store_identity
from runner.sandbox import isolation, scrub
from runner.sandbox.spares import fork_servers_state
from runner.service.http import BadRequest, Limits, make_server
from runner.service.jobs import STATES, Job, JobStore
from runner.service.pairs import MEMBERS, PAIR_FIELD, member_link, pair_result, run_records
from runner.service.workers import Evaluator, WorkerPool, sandbox_evaluator
from runner.spec import RunSpec

MAX_TIMEOUT_S = 3600.0
MAX_TRIALS = 100
_OPTION_KEYS = {"device", "timeout_s", "trials", "profile", "atol", "rtol", "inputs_device", "force"}
JOB_KINDS = ("single", "pair")  # what POST /jobs accepts; /health says so, for clients to ask before submitting


def is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def parse_spec(body: dict[str, Any], has_gpu: bool) -> tuple[RunSpec, bool]:
    """The option fields of a POST /jobs body -> (run settings with defaults filled, force). `RunSpec` checks the
    settings (`runner.options.check_settings`); the service adds what only it decides: `auto` and `cuda` against
    its GPUs, and caps on what one untrusted job may ask for."""
    device = body.get("device", "auto")
    if device == "cuda" and not has_gpu:
        raise BadRequest(400, "device 'cuda' asked, but this runner has no GPU")
    if device == "auto":
        device = "cuda" if has_gpu else "cpu"
    try:
        spec = RunSpec.build(device, timeout_s=body.get("timeout_s"), trials=body.get("trials"),
                                profile=body.get("profile"), atol=body.get("atol"), rtol=body.get("rtol"),
                                inputs_device=body.get("inputs_device"))
    except (ValueError, TypeError) as e:
        raise BadRequest(400, str(e)) from None
    if spec.timeout_s > MAX_TIMEOUT_S:
        raise BadRequest(400, f"timeout_s must be at most {MAX_TIMEOUT_S:g}, not {spec.timeout_s:g}")
    if spec.trials > MAX_TRIALS:
        raise BadRequest(400, f"trials must be at most {MAX_TRIALS}, not {spec.trials}")
    force = body.get("force", False)
    if not isinstance(force, bool):
        raise BadRequest(400, f"force must be true or false, not {force!r}")
    return spec, force


class RunnerService:
    """The state behind the HTTP handler: job store, results log, workers."""

    def __init__(self, runs_dir: Path, store: Path | None, slots: list[Slot], evaluate: Evaluator, token: str,
                 settings: Settings | None = None):
        self.runs_dir = Path(runs_dir)
        self.store = store
        self.settings = settings  # where a row id's store is when `store` is None (the sample store)
        self.slots = slots
        self.token = token
        self.started_at = time.time()
        self.jobs = JobStore(self.runs_dir / "runner.sqlite3")
        self.log = ResultsLog(self.runs_dir, default_writer("service"))
        self.pool = WorkerPool(self.jobs, self.log, slots, evaluate)
        self.has_gpu = any(s.device == "cuda" for s in slots)

    def start(self) -> dict[str, int]:
        """Recover what a dead service left running, then start the workers."""

        def crashed_run(job: Job, pair: dict[str, Any] | None = None) -> dict[str, Any]:
            result = RunResult.crashed(f"the runner service died {job.attempts} times while running this job",
                                       job.spec, id=job.result_id, row_id=job.row_id,
                                       program_sha256=job.program_sha256)
            result.pair = pair
            return result.to_dict()

        def gave_up(job: Job) -> dict[str, Any]:
            if not job.is_pair:
                return crashed_run(job)
            started = job.started_at or job.created_at
            runs = {m.label: crashed_run(job.member_job(m), member_link(job.id, m, i, started, job.members[1 - i]))
                    for i, m in enumerate(job.members)}
            return pair_result(job.id, job.worker or "", "", None, runs, dict.fromkeys(runs, started))

        requeued, crashed = self.jobs.recover(gave_up)
        for result in crashed:
            for record in run_records(result):
                self.log.append(record)
        self.pool.start()
        return {"requeued": requeued, "crashed": len(crashed)}

    def stop(self, grace_s: float) -> None:
        self.pool.stop(grace_s)
        self.jobs.close()

    def authorized(self, header: str | None) -> bool:
        scheme, _, given = (header or "").partition(" ")
        return scheme.lower() == "bearer" and hmac.compare_digest(given.strip().encode(), self.token.encode())

    def health(self) -> dict[str, Any]:
        versions = {"python": sys.version.split()[0]}
        for pkg in ("torch", "triton"):
            try:
                versions[pkg] = metadata.version(pkg)
            except metadata.PackageNotFoundError:
                versions[pkg] = None
        counts = self.jobs.counts()
        running = self.pool.running()
        return {
            "status": "ok",
            "job_kinds": list(JOB_KINDS),
            "hostname": socket.gethostname(),
            "device": result_device("cuda" if self.has_gpu else "cpu"),
            "gpus": [s.gpu_name for s in self.slots if s.device == "cuda"],
            "versions": versions,
            "queue_length": counts["queued"],
            "running": counts["running"],
            "jobs": counts,
            "workers": [{"name": s.name, "device": s.device, "job": running.get(s.name)} for s in self.slots],
            "gpu_gates": gates_report(),  # per GPU: seconds held by jobs (busy) and timing, and their fractions
            "uptime_s": round(time.time() - self.started_at, 1),
            "isolation": isolation.current().describe(),  # mode "none": every result is flagged not_isolated
            "fork_server": fork_servers_state(self.settings.runner.forkserver),  # judges forked from a server with torch imported, or why not
            "store": store_identity(self.store, self.settings),  # the store row ids are resolved against
        }

    def submit(self, body: Any) -> tuple[int, dict[str, Any]]:
        if not isinstance(body, dict):
            raise BadRequest(400, "the request body must be a JSON object")
        if PAIR_FIELD in body:
            return self._submit_pair(body)
        unknown = set(body) - _OPTION_KEYS - {"row_id", "program"}
        if unknown:
            raise BadRequest(400, f"unknown field(s): {', '.join(sorted(unknown))}")
        row_id, program = body.get("row_id"), body.get("program")
        if (row_id is None) == (program is None):
            raise BadRequest(400, "give exactly one of 'row_id' or 'program'")
        spec, force = parse_spec(body, self.has_gpu)
        job, created = self.jobs.submit(self._program(row_id, program), spec, row_id=row_id, force=force)
        return self._queued(job, created)

    def _submit_pair(self, body: dict[str, Any]) -> tuple[int, dict[str, Any]]:
        """A pair job: `pair` = {"a": member, "b": member}, each member {"row_id"} or {"program"}; every refusal
        names its field (`pair.b.row_id`)."""
        unknown = set(body) - _OPTION_KEYS - {PAIR_FIELD}
        if unknown:
            raise BadRequest(400, f"unknown field(s) beside 'pair': {', '.join(sorted(unknown))}")
        pair = body[PAIR_FIELD]
        if not isinstance(pair, dict) or set(pair) != set(MEMBERS):
            raise BadRequest(400, "pair must be an object with exactly the members 'a' and 'b', each "
                                  '{"row_id": ...} or {"program": ...}')
        programs = {}
        for label in MEMBERS:
            member, where = pair[label], f"pair.{label}"
            if not isinstance(member, dict) or len(member) != 1 or set(member) - {"row_id", "program"}:
                raise BadRequest(400, f"{where} must be an object with exactly one of 'row_id' or 'program'")
            row_id, program = member.get("row_id"), member.get("program")
            programs[label] = (row_id, self._program(row_id, program, f"{where}."))
        spec, force = parse_spec(body, self.has_gpu)
        job, created = self.jobs.submit_pair(programs, spec, force=force)
        return self._queued(job, created)

    def _program(self, row_id: Any, program: Any, where: str = "") -> str:
        """The program text of a row id or of a given program, checked; refusals name the field (`where`)."""
        if row_id is not None:
            try:
                return load_program(self.store, check_row_id(row_id), self.settings)
            except BadRowId as e:
                raise BadRequest(400, f"{where}row_id: {e}" if where else str(e)) from None
            except RowNotFound as e:
                raise BadRequest(404, f"{where}row_id: {e}" if where else str(e)) from None
            except StoreUnavailable as e:
                raise BadRequest(503, str(e)) from None
        if not isinstance(program, str) or not program.strip():
            raise BadRequest(400, f"{where}program must be a non-empty string")
        if not is_utf8(program):  # a lone surrogate ("\ud800") that JSON can carry
            raise BadRequest(400, f"{where}program must be valid UTF-8 text (it holds a lone surrogate)")
        return program

    def _queued(self, job: Job, created: bool) -> tuple[int, dict[str, Any]]:
        if created:
            self.pool.wake()
        return (201 if created else 200), {"id": job.id, "state": job.state, "created": created}

    def job(self, job_id: str) -> dict[str, Any]:
        job = self.jobs.get(job_id)
        if job is None:
            raise BadRequest(404, f"no job {job_id!r:.80}")
        return job.summary()

    def recent(self, limit: int, state: str | None) -> list[dict[str, Any]]:
        """The newest `limit` jobs, of one state if given."""
        if state is not None and state not in STATES:
            raise BadRequest(400, f"unknown state {state!r:.40}")
        return [job.summary() for job in self.jobs.recent(limit, state)]

    def cancel(self, job_id: str) -> dict[str, Any]:
        job = self.jobs.cancel(job_id)
        if job is None:
            raise BadRequest(404, f"no job {job_id!r:.80}")
        self.pool.cancel_running(job_id)
        return job.summary()


def resolve_token(host: str, runs_dir: Path, token: str | None) -> str:
    """The service token: `token` (`TLX_RUNNER_TOKEN`), else one generated (see the module docstring); raises
    SystemExit when none may be generated."""
    if token:
        return token
    if not is_loopback(host):
        raise SystemExit(f"serve: refusing to listen on non-loopback host {host!r} without TLX_RUNNER_TOKEN")
    token = secrets.token_urlsafe(32)
    scrub.register(token)  # not in the environment, where scrub finds the others: results never carry it
    path = runs_dir / "runner.token"
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w") as f:
        f.write(token + "\n")
    os.chmod(path, 0o600)
    print(f"[runner] no TLX_RUNNER_TOKEN: generated one in {path} "
          f"(export TLX_RUNNER_TOKEN=$(cat {path}))", file=sys.stderr)
    return token


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=DEFAULT_PORT)
    parser.add_argument("--store", type=Path, default=None, help="store for row ids (default TLX_STORE)")
    parser.add_argument("--runs-dir", type=Path, default=None, help="jobs DB and results (default TLX_RUNS_DIR)")
    parser.add_argument("--device", choices=("auto", "cuda", "cpu"), default="auto",
                        help="auto: one worker per visible GPU, else CPU interpreter workers")
    parser.add_argument("--cpu-workers", type=int, default=1, help="interpreter workers when there is no GPU")
    parser.add_argument("--jobs-per-gpu", type=int, default=None,
                        help="jobs sharing each GPU, timed one at a time (default TLX_RUNNER_JOBS_PER_GPU, "
                             "else min(6, cores / 2))")
    parser.add_argument("--grace", type=float, default=10.0, help="seconds running jobs get on shutdown")
    http = Limits()
    parser.add_argument("--idle-timeout", type=float, default=http.idle_timeout_s,
                        help="seconds a connection may stay silent (idle keep-alive, stalled upload)")
    parser.add_argument("--request-deadline", type=float, default=http.request_deadline_s,
                        help="seconds a request may take to arrive whole, from its first byte")
    parser.add_argument("--max-connections", type=int, default=http.max_connections,
                        help="open connections served at once (one thread each); more get a 503")


def main(args: argparse.Namespace) -> int:
    settings = load_settings()
    runs_dir = (args.runs_dir or settings.runs_dir).expanduser()
    runs_dir.mkdir(parents=True, exist_ok=True)
    lock = open(runs_dir / "runner.lock", "w")  # held for the life of the service
    try:
        fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        print(f"serve: another runner service already uses {runs_dir}", file=sys.stderr)
        return 1
    token = resolve_token(args.host, runs_dir, settings.runner.token)
    prefer_this_process()  # a re-run someone waits for goes before a bulk run's next steps on the same GPU
    try:
        slots = make_slots(args.device, args.cpu_workers, triton_cache_dir=str(runs_dir / "triton-cache"),
                           jobs_per_gpu=args.jobs_per_gpu or settings.runner.jobs_per_gpu,
                           placement=settings.job_placement())
    except (RuntimeError, ValueError) as e:
        print(f"serve: {e}", file=sys.stderr)
        return 1
    store = args.store or (None if settings.store_is_sample else settings.store)
    isolation.keep_private(runs_dir, store)  # named by flags, not settings: no job may see them either
    service = RunnerService(runs_dir, store, slots, sandbox_evaluator, token, settings)
    try:
        server = make_server(service, args.host, args.port,
                             Limits(args.idle_timeout, args.request_deadline, args.max_connections))
    except OSError as e:
        print(f"serve: cannot listen on {args.host}:{args.port}: {e}", file=sys.stderr)
        return 1
    recovered = service.start()
    warmed = warm_gpu_slots(slots)  # the first re-run finds warm processes (CPU slots: at their first job)

    def shutdown(signum: int, _frame: Any) -> None:
        print(f"[runner] {signal.Signals(signum).name}: shutting down", file=sys.stderr)
        threading.Thread(target=server.shutdown, daemon=True).start()

    signal.signal(signal.SIGTERM, shutdown)
    signal.signal(signal.SIGINT, shutdown)
    host, port = server.server_address[:2]
    print(f"[runner] listening on http://{host}:{port} ({len(slots)} worker(s): "
          f"{', '.join(s.name for s in slots)}; recovered {recovered}; spares warming for {warmed} GPU "
          "configuration(s))", file=sys.stderr, flush=True)
    try:
        server.serve_forever(poll_interval=0.5)
    finally:
        server.server_close()
        service.stop(args.grace)
        lock.close()
        print("[runner] stopped", file=sys.stderr)
    return 0
