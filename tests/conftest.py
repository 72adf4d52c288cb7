"""Shared pytest fixtures: `fixture_store`, the store ingested from `tests/fixtures.py` (built once per session)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))


@pytest.fixture(scope="session")
def fixture_store(tmp_path_factory) -> Path:
    from tests.fixtures import build_fixture_store

    return build_fixture_store(tmp_path_factory.mktemp("fixture"))
