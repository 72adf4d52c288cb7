"""The job's filesystem view (`runner.sandbox.isolation.plan`): built from what the child needs (an empty read-only
root, the system's folders, the interpreter, the repository's code packages), so that a folder named nowhere, or
by a command-line flag only, is out of view (issue 45: `runner serve --runs-dir D --store S` showed jobs D, its
token file and S); the job's own folder is /tmp, and a runner folder stays covered where it lies inside what is
shown, whatever the host's TMPDIR (the repository cloned under /tmp once showed a job the runs folder inside it,
and a TMPDIR outside /tmp once hid the repository from the job: exit 127)."""

from __future__ import annotations

import os
import stat
import tempfile
import uuid
from pathlib import Path

import pytest

from runner.sandbox import isolation
from runner.sandbox.isolation import Mount, bwrap_args, plan


def _depth_of(mounts: list[Mount], kind: str, dest: Path) -> int:
    return mounts.index(Mount(kind, str(dest), str(dest) if kind == "ro" else ""))


def _shows(mounts: list[Mount], path: str) -> bool:
    """Whether the view holds the host's `path`: a bind of a host folder at or above it (the root is empty, a tmpfs
    shows nothing of the host, and the job's /tmp is its own folder bound there: the host's /tmp is not shown)."""
    return any(m.kind in ("ro", "rw") and isolation._under(path, m.src) for m in mounts)


def test_a_folder_named_nowhere_is_out_of_view(tmp_path):
    for named_by_flag in (Path("/var/tmp") / f"tlx-runs-{uuid.uuid4().hex[:8]}", isolation.REPO_ROOT / ".runs"):
        mounts = plan(tmp_path / "jobs" / "j", [])
        assert not _shows(mounts, str(named_by_flag)), [m for m in mounts if _shows([m], str(named_by_flag))]
        args = bwrap_args(mounts)
        binds = [args[i + 1] for i, a in enumerate(args) if a in ("--ro-bind", "--bind", "--dev-bind")]  # host sides
        assert "/" not in binds and not any(isolation._under(str(named_by_flag), src) for src in binds)
    assert _shows(mounts, str(isolation.REPO_ROOT / "runner" / "child" / "main.py"))
    assert _shows(mounts, os.path.realpath(os.__file__))  # the standard library


def test_a_runs_folder_inside_a_shown_folder_is_covered(tmp_path, monkeypatch):
    repo, runs, store = tmp_path / "repo", tmp_path / "repo" / ".runs", tmp_path / "repo" / "store"
    runs.mkdir(parents=True)
    store.mkdir()
    monkeypatch.setattr(isolation, "_needed_paths", lambda: [str(repo)])
    monkeypatch.setattr(isolation, "_private", set())
    isolation.keep_private(store)  # named by a flag (`runner serve --store`)
    mounts = plan(tmp_path / "jobs" / "j", [str(runs)])
    assert Mount("rw", "/tmp", str(tmp_path / "jobs" / "j" / "tmp")) in mounts
    assert _depth_of(mounts, "ro", repo) < _depth_of(mounts, "tmpfs", runs)  # the repo shown, its runs folder not
    assert _depth_of(mounts, "ro", repo) < _depth_of(mounts, "tmpfs", store)


def test_links_on_the_way_stay_links(tmp_path, monkeypatch):
    real, link = tmp_path / "main" / ".venv", tmp_path / "wt" / ".venv"
    (real / "bin").mkdir(parents=True)
    link.parent.mkdir()
    link.symlink_to(real)
    monkeypatch.setattr(isolation, "_needed_paths", lambda: [str(link / "bin")])
    mounts = plan(tmp_path / "jobs" / "j", [])
    assert Mount("symlink", str(link), str(real)) in mounts and Mount("ro", str(real), str(real)) in mounts


def test_files_in_etc_others_may_not_read_are_empty(tmp_path):
    mounts = plan(tmp_path / "jobs" / "j", [])
    for path in ("/etc/shadow", "/etc/gshadow"):
        if os.path.isfile(path) and not os.stat(path).st_mode & stat.S_IROTH:
            assert Mount("ro", path, os.devnull) in mounts
    assert Mount("ro", "/etc", "/etc") in mounts


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
        monkeypatch.setattr(isolation, "_needed_paths", lambda: [str(repo_under_tmp)])
        mounts = plan(tmp_path / "jobs" / "j", [str(hidden)])
        assert not _shows(mounts, str(hidden))
        assert Mount("ro", str(repo_under_tmp), str(repo_under_tmp)) in mounts
    finally:
        hidden.rmdir()
        outside.rmdir()
