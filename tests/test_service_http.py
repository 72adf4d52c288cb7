"""Hostile HTTP against a real `python -m runner serve` on loopback (issue 14 item 4): deep JSON bodies, non-ASCII
digits in row ids, limits and lengths, the standard library's own refusals, a 401 on a keep-alive connection,
stalled and trickling uploads, more connections than the cap, the listen backlog. Every answer must be JSON with
a 4xx status (never a dropped connection or a traceback), and nothing may be queued by a refused request.
The service runs with short limits (2 s idle, 4 s per request, 16 connections) so the time cases are quick."""

from __future__ import annotations

import http.client
import json
import select
import socket
import subprocess
import threading
import time
from http.server import BaseHTTPRequestHandler, HTTPServer
from urllib.parse import quote, urlsplit

import pytest

from common.results_log import read_results
from runner.service.client import RunnerClient, RunnerError
from runner.service.http import Limits, make_server
from tests.test_runner_service import TOKEN, Service

IDLE_S, DEADLINE_S, MAX_CONNECTIONS = 2.0, 4.0, 16
AUTH = f"Authorization: Bearer {TOKEN}\r\n"


@pytest.fixture(scope="module")
def service(tmp_path_factory, fixture_store):
    svc = Service(tmp_path_factory.mktemp("runs"), fixture_store,
                  args=("--idle-timeout", str(IDLE_S), "--request-deadline", str(DEADLINE_S),
                        "--max-connections", str(MAX_CONNECTIONS))).start()
    yield svc
    assert svc.stop() == 0, svc.log.read_text()
    assert "Traceback" not in svc.log.read_text()


class _Unclosable:
    """The connection's read buffer as handed to each `HTTPResponse`, which would close it after one response."""

    def __init__(self, file):
        self._file = file

    def __getattr__(self, name: str):
        return getattr(self._file, name)

    def close(self) -> None:
        pass


class Conn:
    """A raw loopback connection: send bytes, read one HTTP response, tell whether the server closed it."""

    def __init__(self, svc: Service, timeout: float = 10.0):
        host, port = urlsplit(svc.url).netloc.rsplit(":", 1)
        self.sock = socket.create_connection((host, int(port)), timeout=timeout)
        self.file = self.sock.makefile("rb")

    def send(self, data: bytes | str) -> Conn:
        """Text goes as Latin-1 where it can (the server reads header bytes as Latin-1: '²' arrives as '²'),
        else as UTF-8."""
        if isinstance(data, str):
            try:
                data = data.encode("latin-1")
            except UnicodeEncodeError:
                data = data.encode("utf-8")
        self.sock.sendall(data)
        return self

    def response(self) -> tuple[int, http.client.HTTPMessage, dict]:
        reply = http.client.HTTPResponse(self.sock)
        reply.fp = _Unclosable(self.file)  # one buffer for every response of the connection
        reply.begin()
        assert reply.getheader("Content-Type") == "application/json", reply.getheader("Content-Type")
        return reply.status, reply.headers, json.loads(reply.read())

    def closed_by_server(self) -> bool:
        """True when the server closed the connection with nothing more to say."""
        return self.file.read() == b""

    def close(self) -> None:
        self.file.close()
        self.sock.close()


def request(method: str, path: str, body: bytes = b"", headers: str = AUTH) -> bytes:
    return (f"{method} {path} HTTP/1.1\r\nHost: x\r\n{headers}Content-Length: {len(body)}\r\n\r\n").encode() + body


def jobs_and_results(svc: Service) -> tuple[int, int]:
    return len(svc.client().jobs(limit=1000)), len(list(read_results(svc.runs_dir)))


def threads(svc: Service) -> int:
    with open(f"/proc/{svc.proc.pid}/status") as fh:
        return next(int(line.split()[1]) for line in fh if line.startswith("Threads:"))


def settle_threads(svc: Service, at_most: int, within_s: float) -> int:
    deadline = time.monotonic() + within_s
    while (n := threads(svc)) > at_most and time.monotonic() < deadline:
        time.sleep(0.2)
    return n


@pytest.mark.parametrize("body", [
    b"[" * 200_000 + b"]" * 200_000,
    b'{"program": ' + b"[" * 100_000 + b"]" * 100_000 + b"}",
    b'{"a": ' * 50_000 + b"1" + b"}" * 50_000,
    b"[" * 17 + b"]" * 17,
], ids=["array-200k", "in-object-100k", "objects-50k", "just-over-the-limit"])
def test_deep_json_bodies_get_a_400_and_keep_the_connection(service, body):
    before = jobs_and_results(service)
    conn = Conn(service).send(request("POST", "/jobs", body))
    status, _, answer = conn.response()
    assert status == 400 and "nests arrays/objects more than 16 deep" in answer["error"]
    status, _, answer = conn.send(request("GET", "/jobs?limit=1")).response()  # the same connection still serves
    assert status == 200 and "jobs" in answer
    conn.close()
    assert jobs_and_results(service) == before


def test_deep_brackets_inside_strings_are_not_nesting(service):
    body = json.dumps({"program": "[" * 100_000 + "{" * 1000, "trials": 0}).encode()
    status, _, answer = Conn(service).send(request("POST", "/jobs", body)).response()
    assert status == 400 and "trials" in answer["error"]  # parsed; refused for its options, not its depth


@pytest.mark.parametrize("row_id", [
    "train/²", "train/١٢٣", "train/۰۰۰۱۲۳", "train/０００１２３", "train/000001\n", " train/000001", "train/1",
    "train/0000001", "TRAIN/000001", "valid/000001", "../train/000001", "train/+00001", "train/-00001", "", 123,
    ["train/000001"], "train/" + "1" * 5000, "train/00000\ud800",
])
def test_row_ids_must_be_ascii_train_or_test_and_canonical(service, row_id):
    before = jobs_and_results(service)
    body = json.dumps({"row_id": row_id, "trials": 1}).encode()
    status, _, answer = Conn(service).send(request("POST", "/jobs", body)).response()
    assert status == 400 and "bad row id" in answer["error"]
    assert jobs_and_results(service) == before  # nothing queued, nothing filed under another id


@pytest.mark.parametrize("program", ["\ud800", "print(1)\n# \udfff tail", "x = '\ud83d'"])
def test_a_program_that_is_not_utf8_is_a_400_not_a_500(service, program):
    """Issue 27: a lone surrogate in `program` (JSON can carry one as an escape) is refused as bad input."""
    before = jobs_and_results(service)
    body = json.dumps({"program": program, "trials": 1}).encode()
    status, _, answer = Conn(service).send(request("POST", "/jobs", body)).response()
    assert status == 400 and "UTF-8" in answer["error"]
    assert jobs_and_results(service) == before


def test_a_good_row_id_is_still_accepted(service):
    job = service.client().submit(row_id="test/000001", trials=1)
    assert job["state"] in ("queued", "running", "done")
    assert service.client().job(job["id"])["row_id"] == "test/000001"
    service.client().cancel(job["id"])


@pytest.mark.parametrize("limit", ["²", "١٢٣", "１０", "-1", "1e3", "0", "1001", " 5", "5 ", "9" * 400])
def test_limit_must_be_ascii_digits_in_range(service, limit):
    status, _, answer = Conn(service).send(request("GET", f"/jobs?limit={quote(limit)}")).response()
    assert status == 400 and "limit must be an integer in [1, 1000]" in answer["error"]


@pytest.mark.parametrize("length", ["²", "١٢", "-1", "1e3", "0x10", "12, 13"])
def test_content_length_must_be_one_ascii_number(service, length):
    conn = Conn(service).send(f"POST /jobs HTTP/1.1\r\nHost: x\r\n{AUTH}Content-Length: {length}\r\n\r\n{{}}")
    status, headers, answer = conn.response()
    assert status == 400 and "Content-Length must be one number of ASCII digits" in answer["error"]
    assert headers["Connection"] == "close" and conn.closed_by_server()


def test_chunked_and_oversized_bodies_are_refused(service):
    conn = Conn(service).send(f"POST /jobs HTTP/1.1\r\nHost: x\r\n{AUTH}Transfer-Encoding: chunked\r\n\r\n2\r\n{{}}\r\n0\r\n\r\n")
    status, _, answer = conn.response()
    assert status == 411 and "chunked" in answer["error"] and conn.closed_by_server()
    conn = Conn(service).send(f"POST /jobs HTTP/1.1\r\nHost: x\r\n{AUTH}Content-Length: 99999999999\r\n\r\n")
    status, _, answer = conn.response()
    assert status == 413 and conn.closed_by_server()
    status, _, answer = Conn(service).send(request("POST", "/jobs", b'{"program": "\xff\xfe"}')).response()
    assert status == 400 and "not UTF-8" in answer["error"]
    status, _, answer = Conn(service).send(request("POST", "/jobs", b'{"program": "x", "trials": 1' + b"0" * 5000
                                                   + b"}")).response()
    assert status == 400


def test_keep_alive_body_of_a_401_is_not_read_as_the_next_request(service):
    """Issue 14: the body of a request refused with 401 was parsed as a second request on the connection."""
    smuggled = b"DELETE /jobs/x HTTP/1.1\r\nHost: x\r\n\r\n"
    conn = Conn(service).send(request("POST", "/jobs", smuggled, headers="Authorization: Bearer wrong\r\n"))
    status, headers, answer = conn.response()
    assert status == 401 and headers["Connection"] == "close"
    assert conn.closed_by_server(), "a second response came: the body was parsed as a request"
    conn = Conn(service).send(request("POST", "/jobs", b"{not json"))  # a read body keeps the connection
    assert conn.response()[0] == 400
    assert conn.send(request("GET", "/health", headers="")).response()[0] == 200


@pytest.mark.parametrize("raw, status", [
    ("GARBAGE\r\n\r\n", 400),
    ("PATCH /jobs HTTP/1.1\r\nHost: x\r\n\r\n", 501),
    ("GET /health HTTP/2.0\r\n\r\n", 505),
    ("GET /" + "a" * 70_000 + " HTTP/1.1\r\n\r\n", 414),
    ("GET /health HTTP/1.1\r\n" + "".join(f"X-{i}: y\r\n" for i in range(120)) + "\r\n", 431),
    ("GET /health HTTP/1.1\r\nX-Long: " + "y" * 70_000 + "\r\n\r\n", 431),
])
def test_the_standard_librarys_refusals_are_json(service, raw, status):
    conn = Conn(service).send(raw)
    got, _, answer = conn.response()
    assert got == status and answer["error"]
    assert conn.closed_by_server()


def test_a_stalled_upload_gets_a_408_and_frees_its_thread(service):
    baseline = threads(service)
    conn = Conn(service).send(f"POST /jobs HTTP/1.1\r\nHost: x\r\n{AUTH}Content-Length: 100\r\n\r\n{{\"prog")
    started = time.monotonic()
    status, _, answer = conn.response()
    assert status == 408 and "did not arrive" in answer["error"]
    assert IDLE_S - 0.5 < time.monotonic() - started < DEADLINE_S + 2
    assert conn.closed_by_server()
    assert settle_threads(service, baseline, 3) <= baseline


def test_a_trickling_request_is_cut_at_its_deadline(service):
    baseline = threads(service)
    conn = Conn(service).send(f"GET /jobs HTTP/1.1\r\nHost: x\r\n{AUTH}")
    started = time.monotonic()
    while time.monotonic() - started < DEADLINE_S + IDLE_S + 5:
        if select.select([conn.sock], [], [], 1.0)[0]:  # the server answered
            break
        conn.send("X-Slow: y\r\n")  # one header line per second: never idle for the 2 s idle timeout
    elapsed = time.monotonic() - started
    status, _, answer = conn.response()
    assert status == 408 and "did not arrive whole" in answer["error"]
    assert DEADLINE_S - 0.5 < elapsed < DEADLINE_S + IDLE_S + 3
    assert settle_threads(service, baseline, 3) <= baseline


def test_many_stalled_uploads_hold_neither_threads_nor_the_service(service):
    """Issue 14: 1,000 stalled uploads held 1,003 threads with no read timeout. Here 120 against a cap of 16."""
    baseline = threads(service)
    opened = [Conn(service).send(f"POST /jobs HTTP/1.1\r\nHost: x\r\n{AUTH}Content-Length: 50\r\n\r\n{{")
              for _ in range(120)]
    time.sleep(0.5)
    assert threads(service) <= baseline + MAX_CONNECTIONS + 1
    with pytest.raises(RunnerError) as refused:  # the client reports the cap as the service's answer
        service.client().health()
    assert refused.value.status == 503 and "open connections" in refused.value.message
    answers = [c.response()[0] for c in opened]
    assert answers.count(503) >= 120 - MAX_CONNECTIONS and set(answers) <= {408, 503}
    for c in opened:
        c.close()
    assert settle_threads(service, baseline, 5) <= baseline
    assert service.client().health()["status"] == "ok"


def test_a_real_listen_backlog(service):
    port = urlsplit(service.url).port
    listing = subprocess.run(["ss", "-ltnH", f"sport = :{port}"], capture_output=True, text=True, check=True).stdout
    backlog = int(listing.split()[2])  # Send-Q of a listening socket: its backlog
    assert backlog >= 128, listing


def test_idle_keep_alive_connections_are_closed(service):
    conn = Conn(service)
    assert conn.send(request("GET", "/health", headers="")).response()[0] == 200
    started = time.monotonic()
    assert conn.closed_by_server()
    assert IDLE_S - 0.5 < time.monotonic() - started < IDLE_S + 2


def test_the_client_refuses_an_answer_that_is_not_json():
    """Something else on the runner's port (here: a static file server) is reported, not a crash in the client."""

    class Static(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            self.send_response(200)
            self.send_header("Content-Length", "13")
            self.end_headers()
            self.wfile.write(b"<html></html>")

        def log_message(self, *args) -> None:
            pass

    server = HTTPServer(("127.0.0.1", 0), Static)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        with pytest.raises(RunnerError, match="not a JSON object"):
            RunnerClient(f"http://127.0.0.1:{server.server_address[1]}", TOKEN, timeout=5).health()
    finally:
        server.shutdown()
        server.server_close()


def test_a_bug_in_a_handler_is_a_500_json_not_a_dropped_connection(capfd):
    """Fault injection into the HTTP layer alone: a service whose `/health` raises."""

    class Broken:
        def health(self) -> dict:
            raise RuntimeError("injected")

    server = make_server(Broken(), "127.0.0.1", 0, Limits(idle_timeout_s=2, request_deadline_s=4))
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.1}, daemon=True)
    thread.start()
    try:
        conn = http.client.HTTPConnection("127.0.0.1", server.server_address[1], timeout=10)
        conn.request("GET", "/health")
        reply = conn.getresponse()
        assert reply.status == 500 and "internal error" in json.loads(reply.read())["error"]
        conn.close()
    finally:
        server.shutdown()
        server.server_close()
    assert "RuntimeError: injected" in capfd.readouterr().err  # logged with its traceback
