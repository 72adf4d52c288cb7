"""Kills the process group of the process that started it, then returns a correct result."""

import os
import signal
import time

import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, a, b):
        try:
            os.killpg(os.getpgid(os.getppid()), signal.SIGKILL)
        except OSError:
            pass
        time.sleep(1)
        return triton_add(a, b)
