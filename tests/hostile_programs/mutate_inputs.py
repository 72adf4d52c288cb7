"""output_mismatch: the reference works in place (its output is its first input); the candidate zeroes its own
inputs and returns zeros, which would match only if it had been handed the reference's tensors."""

import torch
import torch.nn as nn


class Model(nn.Module):  # works in place on its first input
    def __init__(self):
        super().__init__()

    def forward(self, a, b):
        return a.add_(b)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, a, b):
        a.zero_()
        b.zero_()
        return torch.zeros_like(a)
