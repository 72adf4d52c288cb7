"""Cheat (KernelBench static checker: torch compute in forward): a Triton kernel is defined (by the base), but
ModelNew computes with torch. Correct, and no Triton kernel runs: `no_triton_launch`."""

import torch.nn as nn


class ModelNew(nn.Module):
    def forward(self, a, b):
        return a.add(b)
