"""A size cap on everything a job writes (issue 45: three files of 960 MiB, each under the file-size limit, grew
the host's disk by 2.9 GB): where the runner may mount (root), each job folder (`runner.sandbox.jobdirs`: its
`work/`, its `tmp/` that is the job's /tmp, its Triton cache) is a tmpfs of its own, capped at the job's
`EvalOptions.disk_limit_bytes` (`resize` when the job is handed out: a spare's folder is made before its options
are known). A write past the cap fails with "No space left on device", and the result carries the flag
`disk_full`. The tmpfs's pages count against the job's memory cgroup too. Where mounting is refused the folder
is plain disk, bounded per file only (RLIMIT_FSIZE), and /health says so (`state`)."""

from __future__ import annotations

import ctypes
import os
import shutil
from pathlib import Path

from runner.sandbox import jail

DEFAULT_CAP_BYTES = 2 << 30  # EvalOptions.disk_limit_bytes's default
FULL_MARGIN_BYTES = 1 << 20  # less than this left: the job filled its folder
MNT_DETACH = 2
_refused: list[str] = []  # why the last mount failed ("" when one worked since)


def cap(root: Path, size_bytes: int = DEFAULT_CAP_BYTES) -> bool:
    """Mount a tmpfs of `size_bytes` on the (empty) folder `root`; False where the host refuses."""
    try:
        jail._mount("tmpfs", str(root), "tmpfs", jail.MS_NOSUID | jail.MS_NODEV, f"size={size_bytes},mode=0777")
    except OSError as exc:
        _refused[:] = [str(exc)]
        return False
    _refused[:] = []
    return True


def is_capped(root: Path) -> bool:
    return os.path.ismount(root)


def resize(root: Path, size_bytes: int) -> None:
    """Set a capped folder's size (a size below what it holds is refused by the kernel: OSError)."""
    if is_capped(root):
        jail._mount(None, str(root), None, jail.MS_REMOUNT | jail.MS_NOSUID | jail.MS_NODEV, f"size={size_bytes}")


def filled(root: Path) -> bool:
    """Whether a capped folder has (next to) no room left."""
    if not is_capped(root):
        return False
    st = os.statvfs(root)
    return st.f_bavail * st.f_frsize < FULL_MARGIN_BYTES


def remove(path: Path) -> None:
    """Remove a job folder (or a parent of job folders) with the caps mounted in it."""
    for point in _mount_points_under(path):
        jail._libc.umount2(point.encode(), ctypes.c_int(MNT_DETACH))
    shutil.rmtree(path, ignore_errors=True)


def _mount_points_under(path: Path) -> list[str]:
    real = os.path.realpath(path)
    try:
        with open("/proc/self/mountinfo") as fh:
            points = [line.split()[4].encode().decode("unicode_escape") for line in fh]
    except OSError:
        return []
    inside = [p for p in points if p == real or p.startswith(real.rstrip("/") + "/")]
    return sorted(set(inside), key=lambda p: -p.count("/"))


def state() -> str:
    """For /health: how job folders are bounded."""
    return f"no size cap per job (tmpfs refused: {_refused[0]})" if _refused else "a tmpfs per job, size-capped"
