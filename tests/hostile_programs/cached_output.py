"""output_mismatch: computes the first call's output once and returns it for every later call."""

import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, a, b):
        if not hasattr(self, "cached"):
            self.cached = triton_add(a, b)
        return self.cached
