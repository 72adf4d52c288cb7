"""Reaches a TCP listener on 127.0.0.1 (PORT, appended by the test) by the routes the audit hook does not see, then
fails with what each route gave as JSON in its message."""

import ctypes
import socket
import struct
import subprocess
import sys

PORT = 0


def _ctypes_connect():
    libc = ctypes.CDLL("libc.so.6", use_errno=True)
    fd = libc.socket(socket.AF_INET, socket.SOCK_STREAM, 0)
    addr = struct.pack("=HH4s8x", socket.AF_INET, socket.htons(PORT), socket.inet_aton("127.0.0.1"))
    if libc.connect(fd, addr, len(addr)) != 0:
        err = ctypes.get_errno()
        raise OSError(err, __import__("os").strerror(err))
    libc.write(fd, b"ctypes", 6)


SCRIPT = f"import socket; socket.create_connection(('127.0.0.1', {PORT}), timeout=5).sendall(b'python')"
ROUTES = {
    "python -c subprocess": lambda: subprocess.run([sys.executable, "-c", SCRIPT], check=True, capture_output=True,
                                                   timeout=20),
    "ctypes connect": _ctypes_connect,
    "bash /dev/tcp": lambda: subprocess.run(["bash", "-c", f"echo bash > /dev/tcp/127.0.0.1/{PORT}"], check=True,
                                            capture_output=True, timeout=20),
}
