"""Client of the runner service (stdlib only; the explorer imports it) and `python -m runner submit`.

    settings = load_settings()  # once, at the process's entry
    client = RunnerClient(settings.runner_url, resolve_token(settings))
    job = client.submit(row_id="train/000123", timeout_s=60, profile="kernelbench-strict")  # or atol=..., rtol=...
    done = client.wait(job["id"], timeout=300)
    print(done["result"]["status"])
    pair = client.submit_pair({"row_id": "train/000123"}, {"row_id": "train/000456"}, force=True)
    both = client.wait(pair["id"])["result"]  # runs["a"], runs["b"], b_speedup_over_a, differences, ...

`RunnerUnavailable`: nothing answers at the URL (connection refused, DNS, timeout).
`RunnerError`: the service answered with an HTTP error; `.status` and the service's message.
`PairJobsUnsupported` (a `RunnerError`): the service predates pair jobs. All are `common.errors.TlxError`s.
"""

from __future__ import annotations

import argparse
import http.client
import json
import sys
import time
import urllib.error
import urllib.parse
import urllib.request
from pathlib import Path
from typing import Any

from common.errors import TlxError
from common.settings import Settings, load_settings
from common.terminal import inert
from runner.spec_args import add_spec_arguments, spec_fields

FINAL_STATES = ("done", "cancelled")
PAIR_KIND = "pair"  # in /health's `job_kinds` where the service runs pair jobs


class RunnerUnavailable(TlxError):
    """No runner service answers at the configured URL."""


class RunnerError(TlxError):
    """The runner service answered with an HTTP error."""

    def __init__(self, status: int, message: str):
        super().__init__(f"runner service: HTTP {status}: {message}")
        self.status = status
        self.message = message


class PairJobsUnsupported(RunnerError):
    """The runner service does not know pair jobs (it runs one program per job: an older runner)."""

    def __init__(self, url: str):
        super().__init__(400, f"the runner service at {url} runs one program per job: it does not know pair jobs "
                              "(an older runner); update it to time two programs in one job")


def runs_pair_jobs(health: dict[str, Any]) -> bool:
    """Whether a service's `/health` answer says it runs pair jobs."""
    kinds = health.get("job_kinds")
    return isinstance(kinds, list) and PAIR_KIND in kinds


class RunnerClient:
    def __init__(self, url: str, token: str | None, timeout: float = 10.0):
        self.url = url.rstrip("/")
        self.token = token
        self.timeout = timeout

    def _request(self, method: str, path: str, body: dict[str, Any] | None = None) -> dict[str, Any]:
        data = None if body is None else json.dumps(body).encode("utf-8")
        req = urllib.request.Request(self.url + path, data=data, method=method)
        req.add_header("Accept", "application/json")
        if data is not None:
            req.add_header("Content-Type", "application/json")
        if self.token:
            req.add_header("Authorization", f"Bearer {self.token}")
        try:
            with urllib.request.urlopen(req, timeout=self.timeout) as resp:
                raw, status = resp.read(), resp.status
        except urllib.error.HTTPError as e:
            try:
                raw = e.read()
            except (OSError, http.client.HTTPException):
                raw = b""
            try:
                message = json.loads(raw).get("error") or raw.decode("utf-8", "replace")
            except (ValueError, AttributeError):
                message = raw.decode("utf-8", "replace") or e.reason
            raise RunnerError(e.code, str(message)) from None
        except (urllib.error.URLError, ConnectionError, TimeoutError, OSError, http.client.HTTPException) as e:
            reason = getattr(e, "reason", e)
            raise RunnerUnavailable(f"no runner service answers at {self.url}: {reason}") from None
        try:
            answer = json.loads(raw or b"{}")
        except ValueError:
            answer = None
        if not isinstance(answer, dict):  # a success status, but not from a runner service
            raise RunnerError(status, f"the answer from {self.url} is not a JSON object")
        return answer

    def health(self) -> dict[str, Any]:
        return self._request("GET", "/health")

    def submit(self, row_id: str | None = None, program: str | None = None, **fields: Any) -> dict[str, Any]:
        """Queue a run of a store row or of a program text; returns `{"id", "state"}`. Options: device,
        timeout_s, trials, profile, atol, rtol, inputs_device, force (None: the service's default)."""
        if (row_id is None) == (program is None):
            raise ValueError("submit needs exactly one of row_id or program")
        body: dict[str, Any] = {"row_id": row_id} if row_id is not None else {"program": program}
        body.update({k: v for k, v in fields.items() if v is not None})
        return self._request("POST", "/jobs", body)

    def submit_pair(self, a: dict[str, str], b: dict[str, str], **fields: Any) -> dict[str, Any]:
        """Queue one job that times two programs back to back on one GPU under one set of options; `a` and `b`
        are each `{"row_id": ...}` or `{"program": ...}`. Returns `{"id", "state"}`; the finished job's result
        holds both runs (`runs`), their order, start times, `differences` and `b_speedup_over_a`. Raises
        `PairJobsUnsupported` when the service predates pair jobs."""
        for label, member in (("a", a), ("b", b)):
            if not isinstance(member, dict) or len(member) != 1 or set(member) - {"row_id", "program"}:
                raise ValueError(f"submit_pair: {label} must be {{'row_id': ...}} or {{'program': ...}}")
        body: dict[str, Any] = {"pair": {"a": a, "b": b}} | {k: v for k, v in fields.items() if v is not None}
        try:
            return self._request("POST", "/jobs", body)
        except RunnerError as error:  # an older service names the field it does not know
            if error.status == 400 and error.message.startswith("unknown field(s):") and "pair" in error.message:
                raise PairJobsUnsupported(self.url) from None
            raise

    def job(self, job_id: str) -> dict[str, Any]:
        return self._request("GET", f"/jobs/{urllib.parse.quote(job_id, safe='')}")

    def jobs(self, limit: int = 50, state: str | None = None) -> list[dict[str, Any]]:
        query = {"limit": limit} | ({"state": state} if state else {})
        return self._request("GET", "/jobs?" + urllib.parse.urlencode(query))["jobs"]

    def cancel(self, job_id: str) -> dict[str, Any]:
        return self._request("DELETE", f"/jobs/{urllib.parse.quote(job_id, safe='')}")

    def wait(self, job_id: str, timeout: float = 600.0, poll: float = 0.5) -> dict[str, Any]:
        """Poll until the job is done or cancelled; TimeoutError after `timeout` seconds."""
        deadline = time.monotonic() + timeout
        while True:
            job = self.job(job_id)
            if job["state"] in FINAL_STATES:
                return job
            if time.monotonic() >= deadline:
                raise TimeoutError(f"job {job_id} still {job['state']} after {timeout:g} s")
            time.sleep(poll)


def resolve_token(settings: Settings, runs_dir: Path | None = None) -> str | None:
    """`TLX_RUNNER_TOKEN`, else the token a loopback service wrote to `runner.token` in `runs_dir` (default the
    settings' runs dir)."""
    if settings.runner_token:
        return settings.runner_token
    path = Path(runs_dir or settings.runs_dir) / "runner.token"
    return path.read_text().strip() if path.is_file() else None


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("row_id", nargs="?", help="store row id, e.g. train/000123")
    parser.add_argument("--program", type=Path, help="evaluate this program file instead of a row")
    parser.add_argument("--url", default=None, help="service URL (default TLX_RUNNER_URL, else the local one)")
    parser.add_argument("--runs-dir", type=Path, default=None, help="where a loopback service keeps its token")
    parser.add_argument("--device", choices=("auto", "cuda", "cpu"), default=None)
    add_spec_arguments(parser)
    parser.add_argument("--force", action="store_true", help="run again even if the same run is done")
    parser.add_argument("--wait", action="store_true", help="wait for the verdict")
    parser.add_argument("--wait-timeout", type=float, default=3600.0)
    parser.add_argument("--json", action="store_true", help="print JSON")


def _print_job(job: dict[str, Any], as_json: bool) -> None:
    if as_json:
        print(json.dumps(job, indent=2))
        return
    result = job.get("result")
    line = f"job {job['id']}: {job['state']}"
    if result:
        line += f"; {result.get('status')}"
        if result.get("error_type"):
            line += f" ({result['error_type']}): {result.get('message') or ''}".rstrip(": ")
        timing = result.get("timing") or {}
        if timing.get("median_ms") is not None:
            line += f"; median {timing['median_ms']:.4g} ms"
    print(inert(line))  # the program's message: shown, never obeyed by the terminal


def main(args: argparse.Namespace) -> int:
    if (args.row_id is None) == (args.program is None):
        print("submit: give a ROW_ID or --program FILE (one of them)", file=sys.stderr)
        return 2
    settings = load_settings()
    url = args.url or settings.runner_url
    client = RunnerClient(url, resolve_token(settings, args.runs_dir), timeout=30.0)
    fields = {"device": args.device, **spec_fields(args)}
    if args.force:
        fields["force"] = True
    try:
        if args.program is not None:
            job = client.submit(program=args.program.read_text(encoding="utf-8"), **fields)
        else:
            job = client.submit(row_id=args.row_id, **fields)
        if args.wait:
            job = client.wait(job["id"], timeout=args.wait_timeout)
        else:
            job = client.job(job["id"])
    except (RunnerUnavailable, RunnerError, TimeoutError, OSError) as e:
        print(inert(f"submit: {e}"), file=sys.stderr)
        return 1
    _print_job(job, args.json)
    return 0
