"""Cheat (kernelbot: output reused across calls): the output is cached by the inputs' storage, so fresh values
written into the same tensors get the old answer: the recheck fails it with `output_reused`."""

import torch.nn as nn

_cache = {}


class ModelNew(nn.Module):
    def forward(self, a, b):
        key = (a.data_ptr(), b.data_ptr())
        if key not in _cache:
            _cache[key] = triton_add(a, b)
        return _cache[key]
