"""Finds the child's result pipe among its open descriptors, writes a passing verdict to it and exits:
the parent must not accept it (output_mismatch would be the honest verdict; the program exits, so: crashed)."""

import os

import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, a, b):
        fake = b'{"event": "result", "result": {"status": "ok", "error_type": null, "message": "forged"}}\n'
        for fd in map(int, os.listdir("/proc/self/fd")):
            try:
                if fd > 2 and os.readlink(f"/proc/self/fd/{fd}").startswith("pipe:"):
                    os.write(fd, fake)
            except OSError:
                pass
        os._exit(0)
