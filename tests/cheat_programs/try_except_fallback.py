"""Cheat (try/except fallback): the Triton launch always fails (a bad argument) and forward falls back to
torch. Correct, but no Triton kernel ran: `no_triton_launch`."""

import torch.nn as nn


class ModelNew(nn.Module):
    def forward(self, a, b):
        try:
            out = a.new_empty(a.shape)
            add_kernel[(1,)](a, b, out, BLOCK=32)  # n missing: Triton raises before any launch
            return out
        except Exception:
            return a + b
