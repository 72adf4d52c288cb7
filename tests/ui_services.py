"""Subprocess services for the explorer's tests: a runner service and a `streamlit run app.py` server."""

from __future__ import annotations

import contextlib
import os
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _stop(proc: subprocess.Popen) -> None:
    proc.terminate()
    try:
        proc.wait(timeout=15)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()


@contextlib.contextmanager
def runner_service(store: Path, runs_dir: Path, token: str = "test-token-123") -> Iterator[tuple[str, str]]:
    """`python -m runner serve --device cpu` on a free port with a token; yields (url, token)."""
    from runner.service.client import RunnerClient, RunnerUnavailable

    port = free_port()
    env = dict(os.environ, TLX_RUNNER_TOKEN=token, TLX_STORE=str(store), TLX_RUNS_DIR=str(runs_dir))
    proc = subprocess.Popen(
        [sys.executable, "-m", "runner", "serve", "--port", str(port), "--device", "cpu", "--store", str(store),
         "--runs-dir", str(runs_dir)],
        cwd=REPO, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
    )
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 30
        while True:
            try:
                RunnerClient(url, token).health()
                break
            except RunnerUnavailable:
                if proc.poll() is not None or time.monotonic() > deadline:
                    raise RuntimeError(f"runner service did not start: {proc.stderr.read()[-2000:]}") from None
                time.sleep(0.2)
        yield url, token
    finally:
        _stop(proc)


CHROMIUM = Path("/usr/bin/chromium")


def require_chromium() -> None:
    """Skip without Debian chromium, unless TLX_REQUIRE_BROWSER=1 (CI), where its absence is a failure."""
    import pytest

    if not CHROMIUM.exists():
        if os.environ.get("TLX_REQUIRE_BROWSER") == "1":
            pytest.fail("TLX_REQUIRE_BROWSER=1 but Debian chromium is not installed at /usr/bin/chromium")
        pytest.skip("Debian chromium is not installed at /usr/bin/chromium (apt-get install chromium)")


def streamlit_command(port: int) -> list[str]:
    return [sys.executable, "-m", "streamlit", "run", "app.py", "--server.headless", "true", "--server.port",
            str(port), "--browser.gatherUsageStats", "false", "--server.fileWatcherType", "none"]


@contextlib.contextmanager
def streamlit_server(env_overrides: dict[str, str], command=streamlit_command) -> Iterator[str]:
    """The explorer (`command(port)`, by default `streamlit run app.py` headless) on a free port, also given as
    `PORT` in its environment; yields its base URL once it answers."""
    import urllib.request

    port = free_port()
    env = dict(os.environ, **env_overrides, PORT=str(port))
    proc = subprocess.Popen(command(port), cwd=REPO, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                            text=True)
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                with urllib.request.urlopen(url + "/_stcore/health", timeout=2):
                    break
            except OSError:
                if proc.poll() is not None or time.monotonic() > deadline:
                    raise RuntimeError(f"streamlit did not start: {proc.stderr.read()[-2000:]}") from None
                time.sleep(0.3)
        yield url
    finally:
        _stop(proc)
