"""The init of a job's namespaces in isolation mode `unshare` (`runner.sandbox.isolation`):
`unshare --net --pid --ipc --mount --fork --kill-child --mount-proc -- python -I -S .../runner/sandbox/jail.py MOUNTS
CAPS -- CMD...`, running as pid 1 of the new PID namespace, as root with every capability.

It builds the job's filesystem view as bubblewrap would: every host mount read-only (and /proc's kernel knobs:
sys, sysrq-trigger, irq, bus), then an empty tmpfs that gets the steps of `MOUNTS` (JSON, `isolation.plan`): a
minimal /dev with the GPU devices, this namespace's /proc, links, empty read-only tmpfs, read-only and writable
binds (from descriptors opened before anything was covered); it becomes the root (pivot_root) and the host's tree
is detached. Then it drops every capability but `CAPS` from the bounding set (so the root it execs keeps only
those), sets PR_SET_NO_NEW_PRIVS, forks CMD as pid 2, reaps every orphan, and exits with CMD's status (128 +
signal for a signal, as bubblewrap does). Standard library only, run as a script."""

from __future__ import annotations

import ctypes
import json
import os
import platform
import sys

MS_RDONLY, MS_NOSUID, MS_NODEV, MS_NOEXEC = 1, 2, 4, 8
MS_REMOUNT, MS_BIND, MS_REC, MS_PRIVATE, MS_RELATIME = 32, 4096, 16384, 1 << 18, 1 << 21
MS_NOATIME, MS_NODIRATIME = 1024, 2048
ST_TO_MS = {os.ST_NOSUID: MS_NOSUID, os.ST_NODEV: MS_NODEV, os.ST_NOEXEC: MS_NOEXEC, os.ST_NOATIME: MS_NOATIME,
            os.ST_NODIRATIME: MS_NODIRATIME, os.ST_RELATIME: MS_RELATIME}
PROC_COVERED = ("/proc/sys", "/proc/sysrq-trigger", "/proc/irq", "/proc/bus")  # kernel knobs: root without
# capabilities may still write most sysctls (kernel.core_pattern: a host root shell), so they are read-only
PR_SET_DUMPABLE, PR_CAPBSET_DROP, PR_SET_NO_NEW_PRIVS = 4, 24, 38
CAP_NAMES = {"CAP_SETGID": 6, "CAP_SETUID": 7}
MNT_DETACH = 2
SYS_PIVOT_ROOT = {"x86_64": 155, "aarch64": 41}
NEW_ROOT = "/tmp"  # where the view is built before it becomes / (any folder: the namespace's mounts are its own)
SETUP_FAILED = 120  # exit status when the view could not be built (nothing of CMD ran)

_libc = ctypes.CDLL("libc.so.6", use_errno=True)  # not find_library: it runs subprocesses


def _enc(text: str | None) -> bytes | None:
    return text.encode() if text is not None else None


def _mount(src: str | None, dest: str, fstype: str | None, flags: int, data: str | None = None) -> None:
    if _libc.mount(_enc(src), _enc(dest), _enc(fstype), ctypes.c_ulong(flags), _enc(data)) != 0:
        err = ctypes.get_errno()
        raise OSError(err, f"mount {src or fstype} on {dest}: {os.strerror(err)}")


def _flags(path: str) -> int:
    """The mount's current per-mount flags, as mount(2) wants them back on a remount."""
    f = os.statvfs(path).f_flag
    return sum(ms for st, ms in ST_TO_MS.items() if f & st)


def _remount(path: str, readonly: bool) -> None:
    _mount(None, path, None, MS_REMOUNT | MS_BIND | _flags(path) | (MS_RDONLY if readonly else 0))


def _mount_points() -> list[str]:
    with open("/proc/self/mountinfo") as fh:
        points = [line.split()[4].encode().decode("unicode_escape") for line in fh]
    return sorted(set(points), key=lambda p: p.count("/"))


def _make_point(dest: str, is_dir: bool) -> None:
    if os.path.lexists(dest):
        return
    os.makedirs(os.path.dirname(dest), exist_ok=True)
    if is_dir:
        os.mkdir(dest)
    else:
        open(dest, "a").close()


def _bind(fd: int, dest: str, is_dir: bool, readonly: bool) -> None:
    _make_point(dest, is_dir)
    _mount(f"/proc/self/fd/{fd}", dest, None, MS_BIND | MS_REC)
    _remount(dest, readonly)  # a bind of a read-only mount starts read-only


def _pivot_root(new_root: str) -> None:
    """Make `new_root` the namespace's / and detach the host's tree from under it (pivot_root(".", "."))."""
    os.chdir(new_root)
    if _libc.syscall(SYS_PIVOT_ROOT[platform.machine()], b".", b".") != 0:
        err = ctypes.get_errno()
        raise OSError(err, f"pivot_root to {new_root}: {os.strerror(err)}")
    if _libc.umount2(b".", MNT_DETACH) != 0:
        err = ctypes.get_errno()
        raise OSError(err, f"detach the host's root: {os.strerror(err)}")
    os.chdir("/")


def _remount_read_only(points: list[str]) -> None:
    """Each of the host's mount `points` read-only (a recursive bind carries the mounts under it: read-only too).
    A point gone since it was listed is skipped: the runner removes a finished job's folder (its size cap's tmpfs
    with it) while this view is built, and the kernel then detaches this namespace's copy of that mount; a point
    still mounted that refuses is an error."""
    for point in points:
        try:
            _remount(point, True)
        except OSError:
            if point in _mount_points():
                raise


def build_view(mounts: list[dict]) -> None:
    """An empty tmpfs root with MOUNTS' steps applied in it, pivoted to; the host's tree is gone from the view."""
    cwd = os.getcwd()
    _mount(None, "/", None, MS_REC | MS_PRIVATE)
    sources = {}
    for m in mounts:
        for src in [*m.get("devices", ()), m.get("src") if m["kind"] != "symlink" else None]:
            if src and src not in sources and os.path.exists(src):
                sources[src] = os.open(src, os.O_PATH | os.O_CLOEXEC)
    _remount_read_only([p for p in _mount_points() if p != "/proc" and not p.startswith("/proc/")])
    for path in PROC_COVERED:
        if os.path.exists(path):
            _mount(path, path, None, MS_BIND | MS_REC)
            _remount(path, True)
    new = NEW_ROOT
    _mount("tmpfs", new, "tmpfs", MS_NOSUID | MS_NODEV, "mode=0755,size=1m")
    read_only_at_end = ["/"]
    for m in mounts:
        kind, dest = m["kind"], m["dest"]
        at = new + dest
        if kind == "dev":
            _make_point(at, True)
            _mount("tmpfs", at, "tmpfs", MS_NOSUID, "mode=0755,size=1m")
            for dev in m["devices"]:
                if dev in sources:
                    _bind(sources[dev], new + dev, os.path.isdir(f"/proc/self/fd/{sources[dev]}"), False)
            os.mkdir(f"{at}/shm")
            _mount("tmpfs", f"{at}/shm", "tmpfs", MS_NOSUID | MS_NODEV, "mode=1777")
            for name, target in (("fd", "/proc/self/fd"), ("stdin", "/proc/self/fd/0"),
                                 ("stdout", "/proc/self/fd/1"), ("stderr", "/proc/self/fd/2")):
                os.symlink(target, f"{at}/{name}")
            read_only_at_end.append(dest)
        elif kind == "proc":
            _make_point(at, True)
            _mount("/proc", at, None, MS_BIND | MS_REC)  # this PID namespace's (unshare --mount-proc)
        elif kind == "symlink":
            _make_point(os.path.dirname(at), True)
            if not os.path.lexists(at):
                os.symlink(m["src"], at)
        elif kind == "tmpfs":
            _make_point(at, True)
            _mount("tmpfs", at, "tmpfs", MS_NOSUID | MS_NODEV, "mode=0755,size=1m")
            read_only_at_end.append(dest)
        elif kind in ("ro", "rw") and m["src"] in sources:
            _bind(sources[m["src"]], at, os.path.isdir(f"/proc/self/fd/{sources[m['src']]}"), kind == "ro")
    for fd in sources.values():
        os.close(fd)
    _pivot_root(new)
    for dest in read_only_at_end:
        _remount(dest, True)
    os.chdir(cwd)  # the job's folder, bound at its own path: the old cwd would be a way back to the host's tree


def drop_privileges(keep: list[str]) -> None:
    kept = {CAP_NAMES[c] for c in keep}
    last = int(open("/proc/sys/kernel/cap_last_cap").read())
    for cap in range(last + 1):
        if cap not in kept and _libc.prctl(PR_CAPBSET_DROP, cap, 0, 0, 0) != 0:
            raise OSError(ctypes.get_errno(), f"cannot drop capability {cap}")
    if _libc.prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0:
        raise OSError(ctypes.get_errno(), "cannot set no_new_privs")


def main(argv: list[str]) -> int:
    mounts_json, caps, sep, *cmd = argv
    if sep != "--" or not cmd:
        print("runner.sandbox.jail: usage: MOUNTS CAPS -- CMD...", file=sys.stderr)
        return SETUP_FAILED
    try:
        build_view(json.loads(mounts_json))
        drop_privileges([c for c in caps.split(",") if c])
        _libc.prctl(PR_SET_DUMPABLE, 0, 0, 0, 0)  # its /proc entries stay root's: nothing there for the job
    except (OSError, ValueError, KeyError) as exc:
        print(f"runner.sandbox.jail: could not build the job's isolation: {exc}", file=sys.stderr)
        return SETUP_FAILED
    pid = os.fork()
    if pid == 0:
        try:
            os.execvp(cmd[0], cmd)
        finally:
            os._exit(127)
    while True:  # pid 1: reap every orphan until the job's own process ends
        try:
            done, status = os.waitpid(-1, 0)
        except ChildProcessError:
            return SETUP_FAILED
        if done == pid:
            return os.waitstatus_to_exitcode(status) if os.WIFEXITED(status) else 128 + os.WTERMSIG(status)


if __name__ == "__main__":
    sys.stdout.flush()
    os._exit(main(sys.argv[1:]))
