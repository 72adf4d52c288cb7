"""`make run` installs only what running needs and shows pip's progress; `make test` adds the dev tools
(issue 15 item 11). Checked on the commands make would run (`make -n`) for a fresh virtual environment."""

from __future__ import annotations

import shutil
import subprocess

import pytest

from tests.ui_services import REPO

pytestmark = pytest.mark.skipif(shutil.which("make") is None, reason="make is not installed")


def planned(target: str, tmp_path) -> str:
    return subprocess.run(["make", "-n", target, f"VENV={tmp_path / 'venv'}"], cwd=REPO, capture_output=True,
                          text=True, check=True, timeout=30).stdout


def test_run_installs_what_running_needs_with_progress(tmp_path):
    plan = planned("run", tmp_path)
    assert "-r requirements.txt" in plan and "requirements-dev.txt" not in plan
    assert "--quiet" not in plan and "--progress-bar on" in plan
    assert "scripts/serve_local.py" in plan
    dev = (REPO / "requirements-dev.txt").read_text()
    running = (REPO / "requirements.txt").read_text() + (REPO / "requirements-explorer.txt").read_text()
    for tool in ("pytest", "ruff", "playwright", "ray"):
        assert tool in dev and tool not in running


def test_test_target_installs_the_dev_tools(tmp_path):
    plan = planned("test", tmp_path)
    assert "-r requirements.txt" in plan and "-r requirements-dev.txt" in plan
    assert "ruff check" in plan and "pytest" in plan
