"""`make run`: start the local runner service and the explorer on the same token, stop both together.

The store is `TLX_STORE` or the embedded sample (built on first use). The runner listens on loopback only;
a token is generated for this session unless `TLX_RUNNER_TOKEN` is set. In read-only mode no runner starts.
"""

from __future__ import annotations

import os
import secrets
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path
from urllib.parse import urlparse

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from common.settings import load_settings  # noqa: E402
from queries.ingest import ensure_sample_store  # noqa: E402


def _wait_healthy(url: str, proc: subprocess.Popen, seconds: float = 30.0) -> bool:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline and proc.poll() is None:
        try:
            with urllib.request.urlopen(f"{url}/health", timeout=2) as reply:
                return reply.status == 200
        except OSError:
            time.sleep(0.3)
    return False


def explorer_port(env: dict[str, str], first: int = 8501, tries: int = 100) -> int:
    """The port the explorer will listen on: `STREAMLIT_SERVER_PORT` when set, else the first free one from `first`
    up. It is passed to Streamlit explicitly, so the address printed is the one served (Streamlit, left to pick,
    moves on from a busy 8501 to 8502 without telling this script: issue 46)."""
    if env.get("STREAMLIT_SERVER_PORT"):
        return int(env["STREAMLIT_SERVER_PORT"])
    for port in range(first, first + tries):
        with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
            try:
                probe.bind(("", port))
            except OSError:
                continue
        return port
    raise RuntimeError(f"no free port in {first}-{first + tries - 1} for the explorer; set STREAMLIT_SERVER_PORT")


def main() -> int:
    env = dict(os.environ)
    settings = load_settings(env)
    if settings.store_is_sample:
        print("[run] store: the embedded sample (built on first start, a few seconds)", flush=True)
        print(f"[run] store: {ensure_sample_store(settings)}", flush=True)
    runner = None
    if not settings.read_only:
        env.setdefault("TLX_RUNNER_TOKEN", secrets.token_urlsafe(24))
        port = str(urlparse(settings.runner_url).port or 8765)
        print(f"[run] runner: starting on {settings.runner_url} (imports torch: up to ~30 s)", flush=True)
        runner = subprocess.Popen([sys.executable, "-m", "runner", "serve", "--port", port], cwd=REPO, env=env)
        if _wait_healthy(settings.runner_url, runner):
            print(f"[run] runner: ready at {settings.runner_url} (token in this process's environment)", flush=True)
        else:
            print("runner: did not start; the explorer runs without re-runs", file=sys.stderr)
    try:
        port = explorer_port(env)
        print(f"[run] explorer: loading the store, then serving http://localhost:{port}", flush=True)
        return subprocess.call([sys.executable, str(REPO / "scripts" / "serve_app.py"), "--server.port", str(port)],
                               cwd=REPO, env=env)
    except KeyboardInterrupt:
        return 0
    finally:
        if runner is not None and runner.poll() is None:
            runner.terminate()
            runner.wait(timeout=15)


if __name__ == "__main__":
    raise SystemExit(main())
