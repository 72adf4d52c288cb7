"""On CPU runs only (inside the child): send programs' hard-coded "cuda" devices to the CPU.

Patches `Tensor.cuda`/`Tensor.to`, `Module.cuda`/`Module.to`, the `device=` keyword of torch's factory
functions and `torch.cuda.synchronize`; `remapped()` tells whether any of them fired."""

from __future__ import annotations

import functools
from typing import Any

_FACTORIES = (
    "tensor", "as_tensor", "empty", "zeros", "ones", "full", "rand", "randn", "randint", "randperm", "arange",
    "linspace", "logspace", "eye", "empty_like", "zeros_like", "ones_like", "full_like", "rand_like",
    "randn_like", "randint_like", "empty_strided", "tril_indices", "triu_indices", "normal",
)
_TENSOR_NEW = ("new_empty", "new_zeros", "new_ones", "new_full", "new_tensor", "new_empty_strided")

_fired = False


def remapped() -> bool:
    return _fired


def _is_cuda(dev: Any) -> bool:
    try:
        import torch

        if isinstance(dev, torch.device):
            return dev.type == "cuda"
        if isinstance(dev, str):
            return dev.split(":")[0].strip() == "cuda"
        return isinstance(dev, int) and not isinstance(dev, bool)  # a bare ordinal means a CUDA device
    except Exception:
        return False


def _mark() -> None:
    global _fired
    _fired = True


def _fix_device_kw(kwargs: dict[str, Any]) -> dict[str, Any]:
    if "device" in kwargs and _is_cuda(kwargs["device"]):
        _mark()
        kwargs = dict(kwargs, device="cpu")
    return kwargs


def _wrap_kw(fn: Any) -> Any:
    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        return fn(*args, **_fix_device_kw(kwargs))

    return wrapper


def _wrap_to(fn: Any) -> Any:
    @functools.wraps(fn)
    def to(self: Any, *args: Any, **kwargs: Any) -> Any:
        if args and _is_cuda(args[0]):
            _mark()
            args = ("cpu", *args[1:])
        return fn(self, *args, **_fix_device_kw(kwargs))

    return to


def _to_self(self: Any, *args: Any, **kwargs: Any) -> Any:
    _mark()
    return self


def install() -> None:
    """Patch torch in this process. Call once, before the program is imported."""
    import torch

    for name in _FACTORIES:
        if hasattr(torch, name):
            setattr(torch, name, _wrap_kw(getattr(torch, name)))
    for name in _TENSOR_NEW:
        if hasattr(torch.Tensor, name):
            setattr(torch.Tensor, name, _wrap_kw(getattr(torch.Tensor, name)))
    torch.Tensor.to = _wrap_to(torch.Tensor.to)
    torch.Tensor.cuda = _to_self
    torch.nn.Module.to = _wrap_to(torch.nn.Module.to)
    torch.nn.Module.cuda = _to_self
    torch.cuda.synchronize = lambda *a, **k: None
    set_default = torch.set_default_device

    def set_default_device(device: Any) -> None:
        if _is_cuda(device):
            _mark()
            device = "cpu"
        set_default(device)

    torch.set_default_device = set_default_device
