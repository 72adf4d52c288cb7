"""Monkey-patches the clocks the harness could use (time.perf_counter, torch.cuda.Event) so that any timing
would read as zero, and returns a wrong result."""

import time

import torch
import torch.nn as nn

_now = [0.0]
time.perf_counter = lambda: _now[0]
torch.cuda.Event.elapsed_time = lambda self, other: 1e-6


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, a, b):
        return triton_add(a, b) + 1
