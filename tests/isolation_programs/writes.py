"""Writes outside the job's folder by the routes the audit hook does not see (issue 27), then fails with what each
route gave as JSON in its message. TARGET (a folder outside the job), VICTIM (a file whose mtime must not change)
and HOME_PROBE are appended by the test."""

import ctypes
import os
import socket
import sqlite3
import subprocess
import sys

TARGET = ""
VICTIM = ""
HOME_PROBE = ""


def _ctypes_open(path):
    libc = ctypes.CDLL("libc.so.6", use_errno=True)
    fd = libc.open(path.encode(), os.O_WRONLY | os.O_CREAT, 0o644)
    if fd < 0:
        raise OSError(ctypes.get_errno(), os.strerror(ctypes.get_errno()))
    os.close(fd)


def _bind(path):
    with socket.socket(socket.AF_UNIX) as s:
        s.bind(path)


def _torch_save(path):
    import torch

    torch.save(torch.zeros(3), path)


ROUTES = {
    "sh -c": lambda: subprocess.run(["sh", "-c", f"echo x > {TARGET}/sh"], check=True, capture_output=True),
    "python -c subprocess": lambda: subprocess.run(
        [sys.executable, "-c", f"open({TARGET + '/py'!r}, 'w').write('x')"], check=True, capture_output=True),
    "ctypes open": lambda: _ctypes_open(f"{TARGET}/ctypes"),
    "sqlite3.connect": lambda: sqlite3.connect(f"{TARGET}/db.sqlite").execute("create table t (x)"),
    "torch.save": lambda: _torch_save(f"{TARGET}/t.pt"),
    "os.mkfifo": lambda: os.mkfifo(f"{TARGET}/fifo"),
    "AF_UNIX bind": lambda: _bind(f"{TARGET}/sock"),
    "os.utime": lambda: os.utime(VICTIM, (0, 0)),
    "home (sh -c)": lambda: subprocess.run(["sh", "-c", f"echo x > {HOME_PROBE}"], check=True, capture_output=True),
}
