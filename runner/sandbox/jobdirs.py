"""Job folders under one runner-owned parent per process, so that a SIGKILLed service or bulk run leaves nothing
behind for good.

Every job (and every pre-warmed spare, whose folder becomes its job's) gets `PARENT/tlx-run-XXXX` where PARENT is
`<work_root or the system temp dir>/tlx-runner-<pid>-<start time>`: the owner's pid and its start time (clock ticks
since boot, `/proc/<pid>/stat`), so a reused pid is not taken for the owner. The first job folder a process makes
removes the parents of owners that are gone. A job folder holds `work/` (HOME, cwd, the program), `tmp/` (the
job's scratch, its /tmp inside the isolation) and `triton-cache/`; all three are mode 0777 so that the judge can
hand them to the unprivileged candidate process. Where the host allows, a job folder is a size-capped tmpfs
(`runner.sandbox.scratch`)."""

from __future__ import annotations

import atexit
import os
import re
import tempfile
import threading
from pathlib import Path

from runner.procfs import stat_fields
from runner.sandbox import scratch

PARENT_RE = re.compile(r"^tlx-runner-(\d+)-(\d+)$")
JOB_SUBDIRS = ("work", "tmp", "triton-cache")
_lock = threading.Lock()
_swept: set[str] = set()  # bases already cleaned by this process


def start_time(pid: int) -> int | None:
    """The process's start time in clock ticks since boot, None if there is no such process."""
    try:
        return int(stat_fields(pid)[19])
    except (OSError, IndexError, ValueError):
        return None


def base_dir(work_root: str | None) -> Path:
    return Path(work_root or tempfile.gettempdir())


def parent_dir(work_root: str | None) -> Path:
    """This process's parent of job folders (made on first use, mode 0711: others cannot list the jobs)."""
    pid = os.getpid()
    parent = base_dir(work_root) / f"tlx-runner-{pid}-{start_time(pid) or 0}"
    with _lock:
        if str(parent.parent) not in _swept:
            _swept.add(str(parent.parent))
            remove_stale(parent.parent)
        if not parent.is_dir():
            parent.mkdir(parents=True)
            os.chmod(parent, 0o711)  # whatever the umask (the H200's runner had 077: mkdir's mode is masked)
            atexit.register(scratch.remove, parent)  # a clean exit leaves nothing; a SIGKILL, the sweep above
    return parent


def remove_stale(base: Path) -> list[Path]:
    """Remove the job-folder parents under `base` whose owner process is gone; returns them."""
    removed = []
    try:
        entries = list(base.iterdir())
    except OSError:
        return removed
    for entry in entries:
        m = PARENT_RE.match(entry.name)
        if not m or not entry.is_dir() or entry.is_symlink():
            continue
        pid, started = int(m.group(1)), int(m.group(2))
        if start_time(pid) != started:
            scratch.remove(entry)
            removed.append(entry)
    return removed


def _mount_points_in_scratch(root: Path) -> None:
    """The isolation shows `root/tmp` as /tmp and then `root` at its own path; when `root` lies under /tmp, the
    folders on the way to it are made inside `root/tmp`, and bubblewrap would make them 0700, out of the
    candidate's reach (seen with bubblewrap 0.8): make them here, searchable."""
    tmp = Path(os.path.realpath(tempfile.gettempdir()))
    real = Path(os.path.realpath(root))
    if tmp not in real.parents:
        return
    inside = real / "tmp"
    for part in real.relative_to(tmp).parts:
        inside = inside / part
        inside.mkdir(exist_ok=True)
        os.chmod(inside, 0o711)


def make_job_dir(work_root: str | None) -> Path:
    """A fresh job folder with its three subfolders (see the module docstring), size-capped where the host lets
    the runner mount (`runner.sandbox.scratch`)."""
    root = Path(tempfile.mkdtemp(prefix="tlx-run-", dir=parent_dir(work_root)))
    try:
        scratch.cap(root)
        for name in JOB_SUBDIRS:
            (root / name).mkdir()
        for path in (root, *(root / name for name in JOB_SUBDIRS)):
            os.chmod(path, 0o777)
        _mount_points_in_scratch(root)
    except BaseException:
        scratch.remove(root)
        raise
    return root
