"""Cheat (forging the judge): at import, patches torch.allclose/isclose and Tensor.__sub__ so that any comparison
passes, and returns a constant. The comparison runs in the judge, which never imports this: `output_mismatch`."""

import torch
import torch.nn as nn

torch.isclose = lambda *a, **k: torch.ones((), dtype=torch.bool)
torch.allclose = lambda *a, **k: True
torch.Tensor.__sub__ = lambda self, other: torch.zeros_like(self)


class ModelNew(nn.Module):
    def forward(self, a, b):
        return triton_add(a, b) * 0 + 42.0
