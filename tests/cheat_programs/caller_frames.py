"""Cheat (reading the harness): walks its callers' frames for a tensor of the output's shape that the harness
computed (the reference's output) and returns it. In the candidate's process there is none: the kernel's
wrong output stands, `output_mismatch`."""

import sys

import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def forward(self, a, b):
        frame = sys._getframe(1)
        while frame is not None:
            for value in list(frame.f_locals.values()):
                if isinstance(value, torch.Tensor) and value.shape == a.shape and value is not a and value is not b:
                    return value
            frame = frame.f_back
        return triton_add(a, b) + 1
