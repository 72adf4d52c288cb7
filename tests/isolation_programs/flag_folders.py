"""Reads the folders a service was given by command-line flags only (`runner serve --runs-dir D --store S`: no
setting names them), its token file there (0600, root's) and its job database, and connects to a Unix socket
listening on a host path, from the reference `Model`'s constructor (run by the judge, as root: it fails only when
something got through) and from `ModelNew` (the candidate); fails with what the part got as JSON in its message.
A whole program: the reference part ends where the Triton import starts. The test sets FOLDERS and SOCKET in its
first lines, plain constants of the reference part (the judge runs nothing else of the module's level)."""

import base64
import json
import os
import socket

import torch
import torch.nn as nn


def _look():
    seen = {}
    for folder in FOLDERS:
        try:
            seen[folder] = sorted(os.listdir(folder))
        except OSError as exc:
            seen[folder] = f"{type(exc).__name__}: {exc.strerror}"
        for name in ("runner.token", "runner.sqlite3"):
            try:
                with open(os.path.join(folder, name), "rb") as fh:  # encoded and reversed: past a secret scrubber
                    seen[f"{folder}/{name}"] = "read " + base64.b64encode(fh.read(64)).decode()[::-1]
            except OSError as exc:
                seen[f"{folder}/{name}"] = f"{type(exc).__name__}: {exc.strerror}"
    try:
        with socket.socket(socket.AF_UNIX) as s:
            s.settimeout(5)
            s.connect(SOCKET)
            s.sendall(b"escaped")
        seen["socket"] = "done"
    except OSError as exc:
        seen["socket"] = f"{type(exc).__name__}: {exc.strerror}"
    return seen


def _got_through(seen):
    return any(isinstance(v, list) or v == "done" or v.startswith("read ") for v in seen.values())


class Model(nn.Module):
    def __init__(self):  # built by the judge alone
        super().__init__()
        seen = _look()
        if _got_through(seen):
            raise RuntimeError("OUTCOMES " + json.dumps({"reference": seen}))

    def forward(self, a, b):
        return a + b


def get_inputs():
    return [torch.randn(64), torch.randn(64)]


def get_init_inputs():
    return []


import triton  # noqa: E402
import triton.language as tl  # noqa: E402


@triton.jit
def add_kernel(a_ptr, b_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(out_ptr + offs, tl.load(a_ptr + offs, mask=mask) + tl.load(b_ptr + offs, mask=mask), mask=mask)


class ModelNew(nn.Module):
    def forward(self, a, b):
        out = torch.empty_like(a)
        add_kernel[(triton.cdiv(a.numel(), 32),)](a, b, out, a.numel(), BLOCK=32)
        raise RuntimeError("OUTCOMES " + json.dumps({"candidate": _look()}))
