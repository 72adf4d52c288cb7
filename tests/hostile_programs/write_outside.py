"""Tries to write each path in TARGETS (appended by the test) and to delete VICTIM, then returns a correct result."""

import os

import torch.nn as nn

TARGETS: list[str] = []  # the test appends the paths to try
VICTIM = ""


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, a, b):
        for target in TARGETS:
            try:
                with open(target, "w") as fh:
                    fh.write("written by a sandboxed program")
            except OSError:
                pass
        try:
            os.remove(VICTIM)
        except OSError:
            pass
        return triton_add(a, b)
