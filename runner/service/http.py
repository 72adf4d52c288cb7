"""The runner service's HTTP layer: request parsing and limits, the handler, the server (stdlib only).

Every answer is JSON, errors included (`{"error": "..."}` with 4xx, or 500 for a bug), also for what the standard
library itself refuses (a malformed request line, too many headers, an unknown method). Limits:

- bodies: `Content-Length` of ASCII digits only, at most `MAX_BODY_BYTES`, UTF-8, JSON nested at most
  `MAX_JSON_DEPTH` deep (checked before parsing, so a deeply nested body cannot exhaust the parser's recursion);
- time: each socket read or write waits at most `Limits.idle_timeout_s` (an idle keep-alive connection or a
  stalled upload is closed, with a 408 where a request was under way), and a request must arrive whole within
  `Limits.request_deadline_s` of its first byte (a watchdog shuts the reading side of a connection that
  trickles);
- connections: the listen backlog is `LISTEN_BACKLOG`; past `Limits.max_connections` open connections a new one
  gets a 503 at once instead of a thread;
- keep-alive: a response that leaves a request's body unread (a 401, say) closes the connection, so the body can
  never be read as the next request.

The handler parses and routes; what a request does is the service's (`Service`, which
`runner.service.app.RunnerService` implements): this module imports nothing of the service's.
"""

from __future__ import annotations

import json
import re
import socket
import sys
import threading
import time
import traceback
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Protocol
from urllib.parse import parse_qs, urlsplit

from common.errors import TlxError
from common.terminal import inert

MAX_BODY_BYTES = 4 * 1024 * 1024
MAX_JSON_DEPTH = 16
LISTEN_BACKLOG = 1024
LINGER_S = 1.0

_ASCII_INT = re.compile(r"[0-9]{1,12}")
_JSON_STRING = re.compile(r'"(?:[^"\\]++|\\.)*+"', re.DOTALL)
_NOT_A_BRACKET = re.compile(r"[^\[\]{}]++")


@dataclass(frozen=True)
class Limits:
    """Time and connection limits of the server (`python -m runner serve` flags)."""

    idle_timeout_s: float = 20.0
    request_deadline_s: float = 30.0
    max_connections: int = 256


class BadRequest(TlxError):
    """A request the service refuses; `status` is the HTTP status of the answer."""

    def __init__(self, status: int, message: str):
        super().__init__(message)
        self.status = status


def ascii_int(text: str | None) -> int | None:
    """`text` as an int if it is ASCII digits only (not '²' or '١٢٣', which `str.isdigit` accepts), else None."""
    return int(text) if text is not None and _ASCII_INT.fullmatch(text) else None


class Service(Protocol):
    """What the handler asks of the service; each method answers a JSON-ready dict or raises BadRequest."""

    def health(self) -> dict[str, Any]: ...
    def authorized(self, header: str | None) -> bool: ...
    def submit(self, body: Any) -> tuple[int, dict[str, Any]]: ...
    def job(self, job_id: str) -> dict[str, Any]: ...
    def recent(self, limit: int, state: str | None) -> list[dict[str, Any]]: ...
    def cancel(self, job_id: str) -> dict[str, Any]: ...


def nesting_depth(text: str, limit: int) -> int:
    """How deep JSON `text` nests arrays and objects, counting no further than `limit` + 1 (strings skipped)."""
    depth = deepest = 0
    for bracket in _NOT_A_BRACKET.sub("", _JSON_STRING.sub("", text)):
        depth += 1 if bracket in "[{" else -1
        if depth > deepest:
            deepest = depth
            if deepest > limit:
                break
    return deepest


def parse_json_body(raw: bytes) -> Any:
    """The JSON value of a request body; BadRequest(400) when it is not UTF-8 JSON or nests too deep."""
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as e:
        raise BadRequest(400, f"request body is not UTF-8: {e}") from None
    if nesting_depth(text, MAX_JSON_DEPTH) > MAX_JSON_DEPTH:
        raise BadRequest(400, f"request body nests arrays/objects more than {MAX_JSON_DEPTH} deep")
    try:
        return json.loads(text)
    except (ValueError, RecursionError) as e:
        raise BadRequest(400, f"request body is not valid JSON: {e}") from None


class Handler(BaseHTTPRequestHandler):
    server_version = "tlx-runner/1"
    protocol_version = "HTTP/1.1"
    default_request_version = "HTTP/1.0"  # not 0.9: answers to a malformed request line keep their status line
    timeout: float  # StreamRequestHandler sets it on the socket (every read and write); set by `make_server`
    service: Service  # set on the subclass built in `make_server`
    server: RunnerHTTPServer

    def log_message(self, format: str, *args: Any) -> None:  # the request line is the client's: shown inert
        sys.stderr.write(f"[runner] {self.address_string()} {inert(format % args)}\n")

    def handle_one_request(self) -> None:
        """Wait (idle timeout) for the next request's first byte, then handle it under the request deadline."""
        self._body_left = False
        try:
            if not self.rfile.peek(1):
                self.close_connection = True
                return
        except (TimeoutError, OSError):
            self.close_connection = True
            return
        self.server.watchdog.watch(self.connection)
        try:
            super().handle_one_request()
        finally:
            self.server.watchdog.forget(self.connection)

    def send_error(self, code: int, message: str | None = None, explain: str | None = None) -> None:
        """The standard library's own refusals, as JSON; the connection is closed after them."""
        self.close_connection = True
        self._send(code, {"error": message or self.responses.get(code, ("error",))[0]})

    def _send(self, status: int, payload: dict[str, Any]) -> None:
        data = json.dumps(payload).encode("utf-8")
        if self._body_left:
            self.close_connection = True  # the unread body must not be parsed as the next request
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.send_header("Cache-Control", "no-store")
        if status == 401:
            self.send_header("WWW-Authenticate", 'Bearer realm="tlx-runner"')
        if self.close_connection:
            self.send_header("Connection", "close")
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(data)

    def _body_length(self) -> int:
        """The declared body length (0 without one); BadRequest for chunked, conflicting or non-ASCII lengths."""
        if self.headers.get("Transfer-Encoding"):
            self.close_connection = True
            raise BadRequest(411, "chunked bodies are not accepted: send a Content-Length")
        lengths = set(self.headers.get_all("Content-Length") or [])
        if not lengths:
            return 0
        length = ascii_int(lengths.pop().strip()) if len(lengths) == 1 else None
        if length is None:
            self.close_connection = True
            raise BadRequest(400, "Content-Length must be one number of ASCII digits")
        return length

    def _read_json(self) -> Any:
        if self.headers.get("Content-Length") is None:
            raise BadRequest(411, "a JSON body with a Content-Length header is required")
        length = self._body_length()
        if length > MAX_BODY_BYTES:
            self.close_connection = True
            raise BadRequest(413, f"request body over {MAX_BODY_BYTES} bytes")
        try:
            raw = self.rfile.read(length)
        except (TimeoutError, OSError):
            raw = b""
        self._body_left = False
        if len(raw) < length:
            self.close_connection = True
            limits = self.server.limits
            raise BadRequest(408, f"the request body ({length} bytes) did not arrive within the time limits "
                                  f"({limits.idle_timeout_s:g} s idle, {limits.request_deadline_s:g} s in all)")
        return parse_json_body(raw)

    def _dispatch(self, method: str) -> None:
        try:
            self._body_left = self._body_length() > 0 or bool(self.headers.get("Transfer-Encoding"))
            if self.server.watchdog.expired(self.connection):
                self.close_connection = True
                raise BadRequest(408, f"the request did not arrive whole within "
                                      f"{self.server.limits.request_deadline_s:g} s")
            self._route(method)
        except BadRequest as e:
            self._send(e.status, {"error": str(e)})
        except (BrokenPipeError, ConnectionResetError, TimeoutError):  # the client went away mid-answer
            self.close_connection = True
        except Exception:  # a bug: answered and logged, never a dropped connection
            traceback.print_exc(file=sys.stderr)
            self.close_connection = True
            self._send(500, {"error": "internal error in the runner service (see its log)"})

    def _route(self, method: str) -> None:
        url = urlsplit(self.path)
        parts = [p for p in url.path.split("/") if p]
        if method == "GET" and parts == ["health"]:
            return self._send(200, self.service.health())
        if not self.service.authorized(self.headers.get("Authorization")):
            return self._send(401, {"error": "missing or wrong bearer token"})
        if parts == ["jobs"] and method == "POST":
            status, payload = self.service.submit(self._read_json())
            return self._send(status, payload)
        if parts == ["jobs"] and method == "GET":
            return self._send(200, {"jobs": self._recent(parse_qs(url.query))})
        if len(parts) == 2 and parts[0] == "jobs" and method in ("GET", "DELETE"):
            if method == "DELETE":
                return self._send(200, self.service.cancel(parts[1]))
            return self._send(200, self.service.job(parts[1]))
        if parts in (["health"], ["jobs"]) or (len(parts) == 2 and parts[0] == "jobs"):
            raise BadRequest(405, f"{method} not allowed on {url.path:.80}")
        raise BadRequest(404, f"no such endpoint: {url.path:.80}")

    def _recent(self, query: dict[str, list[str]]) -> list[dict[str, Any]]:
        raw_limit = query.get("limit", ["50"])[-1]
        limit = ascii_int(raw_limit)
        if limit is None or not 1 <= limit <= 1000:
            raise BadRequest(400, f"limit must be an integer in [1, 1000] in ASCII digits, not {raw_limit!r:.40}")
        return self.service.recent(limit, query.get("state", [None])[-1])

    def do_GET(self) -> None:  # stdlib naming
        self._dispatch("GET")

    def do_POST(self) -> None:
        self._dispatch("POST")

    def do_DELETE(self) -> None:
        self._dispatch("DELETE")

    def do_PUT(self) -> None:
        self._dispatch("PUT")


def _drain_and_close(conn: socket.socket) -> None:
    """Close a refused connection after reading what it sent (unread input would turn the close into a reset)."""
    try:
        while conn.recv(65536):
            pass
    except OSError:  # nothing more to read now (non-blocking), or the peer is gone
        pass
    conn.close()


class Watchdog:
    """One thread that (a) shuts the reading side of connections whose request passed its deadline, so a
    trickling client frees its thread with a 408 instead of holding it, and (b) closes finished connections after
    a short linger, reading what the client still sent: closing a socket with unread input resets the connection,
    and the client could lose the answer (a 503, or an error about a request it had not finished sending)."""

    def __init__(self, deadline_s: float) -> None:
        self.deadline_s = deadline_s
        self._lock = threading.Lock()
        self._deadlines: dict[socket.socket, float] = {}
        self._expired: set[socket.socket] = set()
        self._lingering: list[tuple[float, socket.socket]] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="runner-http-watchdog", daemon=True)
        self._thread.start()

    def watch(self, conn: socket.socket) -> None:
        with self._lock:
            self._deadlines[conn] = time.monotonic() + self.deadline_s

    def forget(self, conn: socket.socket) -> None:
        with self._lock:
            self._deadlines.pop(conn, None)
            self._expired.discard(conn)

    def expired(self, conn: socket.socket) -> bool:
        """Whether the connection's request passed its deadline (its reading side is shut)."""
        with self._lock:
            return conn in self._expired

    def linger(self, conn: socket.socket) -> None:
        """Close `conn` (its writing side already shut) in `LINGER_S`, after reading what it sent meanwhile."""
        try:
            conn.setblocking(False)
        except OSError:
            pass
        with self._lock:
            self._lingering.append((time.monotonic() + LINGER_S, conn))

    def _run(self) -> None:
        while not self._stop.wait(0.25):
            now = time.monotonic()
            with self._lock:
                late = [c for c, deadline in self._deadlines.items() if deadline <= now]
                for conn in late:
                    del self._deadlines[conn]
                    self._expired.add(conn)
                done = [c for t, c in self._lingering if t <= now]
                self._lingering = [(t, c) for t, c in self._lingering if t > now]
            for conn in late:
                try:
                    conn.shutdown(socket.SHUT_RD)
                except OSError:
                    pass
            for conn in done:
                _drain_and_close(conn)

    def stop(self) -> None:
        self._stop.set()
        self._thread.join()
        with self._lock:
            for _, conn in self._lingering:
                _drain_and_close(conn)
            self._lingering.clear()


class RunnerHTTPServer(ThreadingHTTPServer):
    """`ThreadingHTTPServer` with a real listen backlog, a cap on connections (threads) and the watchdog."""

    request_queue_size = LISTEN_BACKLOG
    daemon_threads = True

    def __init__(self, address: tuple[str, int], handler: type[Handler], limits: Limits):
        self.limits = limits
        self.watchdog = Watchdog(limits.request_deadline_s)
        self._open = 0
        self._open_lock = threading.Lock()
        try:
            super().__init__(address, handler)
        except BaseException:
            self.watchdog.stop()
            raise

    def process_request(self, request: socket.socket, client_address: Any) -> None:
        with self._open_lock:
            full = self._open >= self.limits.max_connections
            self._open += not full
        if full:
            self._refuse(request)
            return
        try:
            super().process_request(request, client_address)
        except BaseException:
            with self._open_lock:
                self._open -= 1
            raise

    def process_request_thread(self, request: socket.socket, client_address: Any) -> None:
        try:
            super().process_request_thread(request, client_address)
        finally:
            with self._open_lock:
                self._open -= 1

    def _refuse(self, request: socket.socket) -> None:
        """A 503 sent from the accepting thread (it fits the socket's buffer); closed later by the watchdog."""
        body = json.dumps({"error": f"the runner service has {self.limits.max_connections} open connections; "
                                    "retry shortly"}).encode()
        head = (f"HTTP/1.1 503 Service Unavailable\r\nContent-Type: application/json\r\nContent-Length: "
                f"{len(body)}\r\nRetry-After: 1\r\nConnection: close\r\n\r\n").encode()
        try:
            request.settimeout(0)
            request.send(head + body)
        except OSError:
            pass
        self.shutdown_request(request)

    def shutdown_request(self, request: socket.socket) -> None:
        """A graceful close: stop writing, let the watchdog read what is left and close (see `Watchdog`)."""
        try:
            request.shutdown(socket.SHUT_WR)
        except OSError:
            request.close()
            return
        self.watchdog.linger(request)

    def handle_error(self, request: Any, client_address: Any) -> None:
        kind, error = sys.exc_info()[:2]
        if kind is not None and issubclass(kind, OSError):  # the client went away mid-answer
            sys.stderr.write(f"[runner] {client_address[0]}: connection lost: {error}\n")
        else:
            super().handle_error(request, client_address)

    def server_close(self) -> None:
        super().server_close()
        self.watchdog.stop()


def make_server(service: Service, host: str, port: int, limits: Limits = Limits()) -> RunnerHTTPServer:
    handler = type("BoundHandler", (Handler,), {"service": service, "timeout": limits.idle_timeout_s})
    return RunnerHTTPServer((host, port), handler, limits)
