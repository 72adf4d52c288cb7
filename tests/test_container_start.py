"""The hosted container's start command (`scripts/docker_start.sh`, the Dockerfile's CMD) serves read-only.

Docker cannot run here, so this runs the same script the container runs, on a free port, against a built store,
and checks in a real browser that the explorer answers, shows the store, and offers no re-run control.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path
from urllib.parse import quote

import pytest

from tests.ui_services import CHROMIUM, REPO, require_chromium, streamlit_server

pytestmark = pytest.mark.browser


def docker_start(port: int) -> list[str]:
    return ["sh", str(REPO / "scripts" / "docker_start.sh")]  # it reads the port from $PORT, as in the container


def test_dockerfile_runs_the_start_script_read_only():
    dockerfile = (REPO / "Dockerfile").read_text()
    assert 'CMD ["sh", "scripts/docker_start.sh"]' in dockerfile
    assert "USER user" in dockerfile and "--uid 1000" in dockerfile and "EXPOSE 7860" in dockerfile
    assert "TLX_READ_ONLY=1" in (REPO / "scripts" / "docker_start.sh").read_text()


def test_start_script_serves_read_only(fixture_store, tmp_path):
    require_chromium()
    from playwright.sync_api import sync_playwright

    env = {
        "TLX_STORE": str(fixture_store), "TLX_READ_ONLY": "0",  # the script must force it on
        "TLX_RUNS_DIR": str(tmp_path / "runs"), "TLX_CACHE_DIR": str(tmp_path / "cache"),
        "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}",
    }
    with streamlit_server(env, command=docker_start) as base:
        with sync_playwright() as pw:
            browser = pw.chromium.launch(executable_path=str(CHROMIUM), args=[
                "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                "--disable-background-networking", "--disable-component-update", "--disable-sync"])
            tab = browser.new_page(viewport={"width": 1400, "height": 1000})
            tab.goto(f"{base}/row?row={quote('train/000000', safe='')}")
            tab.get_by_text("read-only", exact=False).first.wait_for(timeout=30000)
            tab.get_by_text("class ModelNew", exact=False).first.wait_for(timeout=30000)
            assert tab.locator('[data-testid="stException"]').count() == 0
            # writable mode would show the Re-run section (here: its "no runner reachable" hint); read-only: nothing
            assert tab.get_by_role("heading", name="Re-run").count() == 0
            assert tab.get_by_text("No runner service is reachable", exact=False).count() == 0
            browser.close()
    assert not (tmp_path / "runs").exists(), "read-only mode wrote run data"
