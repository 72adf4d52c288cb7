"""Shared pytest fixtures: `fixture_store`, the store ingested from `tests/fixtures.py` (built once per session)."""

from __future__ import annotations

from pathlib import Path

import pytest


@pytest.fixture(scope="module")
def empty_runs(tmp_path_factory):
    """An empty runs folder for a whole test module (one cached connection), not the user's."""
    runs_dir = tmp_path_factory.mktemp("runs")
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("TLX_RUNS_DIR", str(runs_dir))
        yield runs_dir


@pytest.fixture(scope="session", autouse=True)
def _own_gpu_lock_dir(tmp_path_factory):
    """This test run's GPU gates lock among themselves only, not with another run or a runner on this host."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("TLX_RUNNER_LOCK_DIR", str(tmp_path_factory.mktemp("gpu-locks")))
        yield


@pytest.fixture(scope="session")
def fixture_store(tmp_path_factory) -> Path:
    from tests.fixtures import build_fixture_store

    return build_fixture_store(tmp_path_factory.mktemp("fixture"))


@pytest.fixture(autouse=True)
def _navigation_owns_pages_folder(monkeypatch):
    """A Streamlit server leaves its older `pages/` layout once app.py has called `st.navigation`, and
    `ui/routing.py` forces that on a fresh server's first deep link (the browser tests check that for real).
    AppTest resets the layout flag before every run, so here its pages manager turns the old layout off at once
    and every AppTest run goes through app.py, as on a server."""
    try:
        import streamlit.testing.v1.app_test as app_test
        from streamlit.runtime.pages_manager import PagesManager
    except ImportError:
        return

    class NavigationPagesManager(PagesManager):
        def __init__(self, *args, **kwargs):
            PagesManager.uses_pages_directory = False
            super().__init__(*args, **kwargs)

    monkeypatch.setattr(app_test, "PagesManager", NavigationPagesManager)


def pytest_terminal_summary(terminalreporter):
    """Show what tests recorded with `record_property`, e.g. which way the image test started the container."""
    for report in terminalreporter.getreports("passed") + terminalreporter.getreports("failed"):
        for name, value in report.user_properties:
            terminalreporter.write_line(f"{report.nodeid}: {name}: {value}")
