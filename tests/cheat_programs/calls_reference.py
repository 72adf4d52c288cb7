"""Cheat: ModelNew calls the reference Model. Correct, no Triton kernel: `no_triton_launch`."""

import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()
        self.ref = Model()

    def forward(self, a, b):
        return self.ref(a, b)
