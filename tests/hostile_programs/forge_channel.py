"""Looks for the verdict channel among its open descriptors, writes a passing verdict to every pipe it finds
and exits: nothing may accept it (the candidate's process holds no verdict channel; the program exits, so:
crashed)."""

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
