"""Cheat (issue 42, 4.81x on an H100): ModelNew returns a `torch.Tensor` subclass; the call computes half of the
output, and the other half is computed when the output is first read (any torch function on it). The candidate's
process hands over only plain tensors, without reading a subclass: `shape_mismatch` naming the subclass (and the
static flag `tensor_subclass`)."""

import torch
import torch.nn as nn


class _Deferred(torch.Tensor):
    pending = None

    @classmethod
    def __torch_function__(cls, func, types, args=(), kwargs=None):
        for arg in args:
            if isinstance(arg, _Deferred) and arg.pending is not None:
                a, b, out, half = arg.pending
                arg.pending = None
                plain = out.as_subclass(torch.Tensor)
                plain[half:] = triton_add(a[half:].contiguous(), b[half:].contiguous())
        return super().__torch_function__(func, types, args, kwargs or {})


class ModelNew(nn.Module):
    def forward(self, a, b):
        half = a.numel() // 2
        out = torch.empty_like(a)
        out[:half] = triton_add(a[:half].contiguous(), b[:half].contiguous())
        lazy = out.as_subclass(_Deferred)
        lazy.pending = (a, b, out, half)
        return lazy
