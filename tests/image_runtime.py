"""The hosted explorer's image for the tests: build it (scripts/build_image.sh), mount it, start it.

Two ways to start it, each yielding the server's host PID and a base URL:
- `podman run`, as a Docker Space runs the image. runc where installed: crun refuses cgroups in hybrid mode,
  and both runtimes are refused when they try to raise open-file and process limits to their defaults, so the
  limits are given explicitly (4096, above what the explorer uses).
- the image's own filesystem (`podman image mount`, read-only) entered with `chroot` as the image's user,
  running the image's start command with its environment and working directory, on the host's network.
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import os
import shutil
import signal
import socket
import subprocess
import time
import urllib.request
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from tests.ui_services import REPO, free_port

IMAGE = "localhost/tlx-explorer:test"
PORT = 7860  # what the image listens on (its PORT), inside the container and, under chroot, on the host


class RuntimeRefused(RuntimeError):
    """`podman run` could not start the container here."""


@dataclasses.dataclass
class Started:
    way: str
    url: str
    pid: int  # the server's process on the host
    seconds: float  # from the start command to the first healthy answer
    logs: Callable[[], str]  # what the server has printed so far


def require_image_tools() -> None:
    """Skip without root or podman/debootstrap, unless CI=true, where their absence is a failure."""
    missing = [tool for tool in ("podman", "debootstrap", "chroot") if shutil.which(tool) is None]
    if os.geteuid() != 0:
        reason = "building and entering the image needs root (podman build, debootstrap, chroot)"
    elif missing:
        reason = f"not installed: {', '.join(missing)} (apt-get install podman debootstrap runc)"
    else:
        return
    if os.environ.get("CI") == "true":
        pytest.fail(f"CI=true but {reason}")
    pytest.skip(reason)


def podman(*args: str, check: bool = True, timeout: float = 120) -> subprocess.CompletedProcess:
    return subprocess.run(["podman", *args], capture_output=True, text=True, check=check, timeout=timeout)


def build_image() -> float:
    """scripts/build_image.sh as `IMAGE`; returns the seconds it took."""
    started = time.monotonic()
    subprocess.run(["bash", str(REPO / "scripts" / "build_image.sh")], env=dict(os.environ, TLX_IMAGE=IMAGE),
                   check=True, timeout=1800)
    return time.monotonic() - started


def image_config() -> dict:
    return json.loads(podman("image", "inspect", IMAGE).stdout)[0]["Config"]


@contextlib.contextmanager
def mounted_image() -> Iterator[Path]:
    root = podman("image", "mount", IMAGE).stdout.strip()
    try:
        yield Path(root)
    finally:
        podman("image", "unmount", IMAGE)


def user_ids(root: Path, user: str) -> tuple[int, int]:
    """The image's user (name or uid) as (uid, gid), from the image's own /etc/passwd."""
    for line in (root / "etc" / "passwd").read_text().splitlines():
        name, _, uid, gid, *_ = line.split(":")
        if user in (name, uid):
            return int(uid), int(gid)
    raise LookupError(f"user {user!r} is not in the image's /etc/passwd")


def wait_healthy(url: str, alive, logs, started: float) -> float:
    deadline = started + 90
    while True:
        try:
            with urllib.request.urlopen(url + "/_stcore/health", timeout=2):
                return time.monotonic() - started
        except OSError:
            if not alive() or time.monotonic() > deadline:
                raise RuntimeError(f"the image's server did not answer at {url}:\n{logs()[-3000:]}") from None
            time.sleep(0.3)


def container_state(container: str, field: str) -> str:
    return podman("inspect", "--format", f"{{{{.State.{field}}}}}", container).stdout.strip()


@contextlib.contextmanager
def podman_run() -> Iterator[Started]:
    runtime = ["--runtime", "runc"] if shutil.which("runc") else []
    host_port = free_port()
    container = f"tlx-image-test-{os.getpid()}-{host_port}"
    started = time.monotonic()
    run = podman(*runtime, "run", "--detach", "--name", container, "--ulimit", "nofile=4096:4096", "--ulimit",
                 "nproc=4096:4096", "--publish", f"127.0.0.1:{host_port}:{PORT}", IMAGE, check=False)
    try:
        if run.returncode != 0:
            raise RuntimeRefused(run.stderr.strip().splitlines()[-1])
        url = f"http://127.0.0.1:{host_port}"
        def logs() -> str:
            printed = podman("logs", container, check=False)
            return printed.stdout + printed.stderr

        seconds = wait_healthy(url, lambda: container_state(container, "Running") == "true", logs, started)
        yield Started(f"podman run ({'runc' if runtime else 'default runtime'})", url,
                      int(container_state(container, "Pid")), seconds, logs)
    finally:
        podman("rm", "--force", "--ignore", "--time", "10", container)  # a refused one may exist, created


def port_taken(port: int) -> bool:
    with socket.socket() as s:
        return s.connect_ex(("127.0.0.1", port)) == 0


@contextlib.contextmanager
def chroot_start(root: Path, log: Path) -> Iterator[Started]:
    """The image's start command in its mounted filesystem, as its user, with only its environment."""
    if port_taken(PORT):
        raise RuntimeError(f"port {PORT} is taken on this host, and the chroot shares the host's network")
    config = image_config()
    uid, gid = user_ids(root, config["User"])
    command = ["chroot", f"--userspec={uid}:{gid}", str(root), "/usr/bin/env", "-i",
               f"--chdir={config['WorkingDir']}", *config["Env"], *(config.get("Entrypoint") or []),
               *config["Cmd"]]
    started = time.monotonic()
    with log.open("w") as out:
        proc = subprocess.Popen(command, stdout=out, stderr=subprocess.STDOUT, start_new_session=True)
    try:
        url = f"http://127.0.0.1:{PORT}"
        seconds = wait_healthy(url, lambda: proc.poll() is None, log.read_text, started)
        yield Started("chroot into the mounted image", url, proc.pid, seconds, log.read_text)
    finally:
        os.killpg(proc.pid, signal.SIGTERM)
        try:
            proc.wait(timeout=15)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()


@contextlib.contextmanager
def started_image(way: str, root: Path, log: Path) -> Iterator[Started]:
    """way "runtime": `podman run`, falling back to the chroot where the runtime is refused (and saying why);
    way "chroot": the chroot."""
    with contextlib.ExitStack() as stack:
        if way == "chroot":
            yield stack.enter_context(chroot_start(root, log))
            return
        try:
            current = stack.enter_context(podman_run())
        except RuntimeRefused as refused:
            fallback = stack.enter_context(chroot_start(root, log))
            current = dataclasses.replace(fallback, way=f"{fallback.way}; podman run was refused: {refused}")
        yield current

def listeners(pid: int) -> set[tuple[int, int]]:
    """(port, uid) of every listening TCP socket in the process's network namespace."""
    found = set()
    for table in ("tcp", "tcp6"):
        for line in Path(f"/proc/{pid}/net/{table}").read_text().splitlines()[1:]:
            fields = line.split()
            if fields[3] == "0A":  # TCP_LISTEN
                found.add((int(fields[1].rsplit(":", 1)[1], 16), int(fields[7])))
    return found


def process_uid(pid: int) -> int:
    status = Path(f"/proc/{pid}/status").read_text()
    return int(next(line for line in status.splitlines() if line.startswith("Uid:")).split()[1])
