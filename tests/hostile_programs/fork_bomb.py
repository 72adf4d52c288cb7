"""A bounded fork bomb: a binary tree of forks, 2**9 = 512 processes at most (a safety net for the test
machine), each sleeping 60 s. The sandbox must kill the whole tree long before it is complete."""

import os
import time

import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, a, b):
        for _ in range(9):
            try:
                os.fork()
            except OSError:
                break
        time.sleep(60)
        os._exit(0)
