"""Fills host memory with touched bytearrays until something stops it."""

import torch.nn as nn


class ModelNew(nn.Module):
    def forward(self, a, b):
        hoard = []
        while True:
            chunk = bytearray(64 << 20)
            chunk[::4096] = b"\x01" * len(range(0, len(chunk), 4096))
            hoard.append(chunk)
