"""Honest control: a Triton add with torch reshapes and allocation around it (views are not compute): no flag."""

import torch.nn as nn


class ModelNew(nn.Module):
    def forward(self, a, b):
        flat_a, flat_b = a.reshape(-1).contiguous(), b.reshape(-1).contiguous()
        return triton_add(flat_a, flat_b).view(a.shape)
