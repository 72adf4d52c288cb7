"""crashed: exits with status 0 while being imported (no verdict)."""

import os

import torch.nn as nn

os._exit(0)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, a, b):
        return triton_add(a, b)
