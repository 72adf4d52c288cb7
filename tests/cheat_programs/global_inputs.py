"""Cheat: keeps the inputs in a module global at the first call and recomputes with torch from them; no Triton
kernel runs after the first: `no_triton_launch` (the launch check calls it again)."""

import torch.nn as nn

_seen = []


class ModelNew(nn.Module):
    def forward(self, a, b):
        _seen.append((a, b))
        if len(_seen) == 1:
            return triton_add(a, b)
        return _seen[-1][0] + _seen[-1][1]
