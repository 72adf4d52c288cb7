"""The job's filesystem view (`runner.sandbox.isolation.plan`): the job's own folder is /tmp, and a runner folder
stays hidden wherever it lies, whatever the host's TMPDIR (the repository cloned under /tmp once showed a job the
runs folder inside it, and a TMPDIR outside /tmp once hid the repository from the job: exit 127)."""

from __future__ import annotations

import tempfile
import uuid
from pathlib import Path

import pytest

from runner.sandbox import isolation
from runner.sandbox.isolation import Mount, plan


def _depth_of(mounts: list[Mount], kind: str, dest: Path) -> int:
    return mounts.index(Mount(kind, str(dest), str(dest) if kind == "ro" else ""))


def test_a_runs_folder_inside_a_repo_under_tmp_is_hidden_again(tmp_path, monkeypatch):
    repo, runs = tmp_path / "repo", tmp_path / "repo" / ".runs"
    runs.mkdir(parents=True)
    monkeypatch.setattr(isolation, "_readable_roots", lambda: [str(repo)])
    mounts = plan(tmp_path / "jobs" / "j", [str(runs)])
    assert mounts[1] == Mount("rw", "/tmp", str(tmp_path / "jobs" / "j" / "tmp"))
    assert _depth_of(mounts, "ro", repo) < _depth_of(mounts, "tmpfs", runs)  # the repo back, its runs folder not


def test_the_hosts_tmpdir_neither_shows_a_runner_folder_nor_hides_the_repo(tmp_path, monkeypatch):
    outside = Path("/var/tmp") / f"tlx-plan-test-{uuid.uuid4().hex[:8]}"  # not under /tmp, wherever the clone is
    hidden = outside / "runs"
    try:
        hidden.mkdir(parents=True)
    except OSError as e:
        pytest.skip(f"cannot make a folder outside /tmp: {e}")
    try:
        monkeypatch.setattr(tempfile, "tempdir", str(outside))
        repo_under_tmp = tmp_path / "repo"
        repo_under_tmp.mkdir()
        monkeypatch.setattr(isolation, "_readable_roots", lambda: [str(repo_under_tmp)])
        mounts = plan(tmp_path / "jobs" / "j", [str(hidden)])
        assert Mount("tmpfs", str(hidden)) in mounts
        assert Mount("ro", str(repo_under_tmp), str(repo_under_tmp)) in mounts
    finally:
        hidden.rmdir()
        outside.rmdir()
