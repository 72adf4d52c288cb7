"""Opens a TCP connection to a loopback port (PORT is appended by the test), then returns a correct result."""

import socket

import torch.nn as nn

PORT = 0  # the test appends the port of its listener


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, a, b):
        with socket.create_connection(("127.0.0.1", PORT), timeout=5) as s:
            s.sendall(b"hello from the sandbox")
        return triton_add(a, b)
