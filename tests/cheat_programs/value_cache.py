"""Cheat (robust-kbench: output caching): the output is cached under the input's shape and two sampled values,
so a timing loop that reuses one input measures a dictionary lookup. Correct on fresh inputs; the launch check
replays the first trial's inputs and sees no Triton launch (`no_triton_launch`), and on the GPU its time depends
on seeing the same input again (`faster_on_repeated_inputs`)."""

import torch.nn as nn

_cache = {}


class ModelNew(nn.Module):
    def forward(self, a, b):
        key = (tuple(a.shape), float(a.reshape(-1)[0]), float(b.reshape(-1)[-1]))
        if key not in _cache:
            _cache[key] = triton_add(a, b)
        return _cache[key]
