"""Raises with a secret in its message (SECRET, appended by the test: the runner's token as a program could have
learned it), printing it to stdout and stderr too."""

import sys

import torch.nn as nn

SECRET = ""


class ModelNew(nn.Module):
    def forward(self, a, b):
        print(f"stdout has {SECRET}")
        print(f"stderr has {SECRET}", file=sys.stderr)
        raise RuntimeError(f"the runner's token is {SECRET}")
