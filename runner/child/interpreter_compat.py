"""On CPU runs only (inside the child): let `@triton.autotune` kernels run under Triton's interpreter.

The interpreter has no benchmarker, so an autotuner with more than one config fails ("0 active drivers") before
the kernel ever runs. Correctness does not depend on which config wins, so under the interpreter each autotuner
keeps only its first config; `narrowed()` tells whether that happened (the result is flagged)."""

from __future__ import annotations

import functools
from typing import Any

_narrowed = False


def narrowed() -> bool:
    return _narrowed


def install() -> None:
    """Patch `triton.autotune` in this process. Call once, before the program is imported."""
    import triton

    real_autotune = triton.autotune

    @functools.wraps(real_autotune)
    def autotune(configs: Any, *args: Any, **kwargs: Any) -> Any:
        global _narrowed
        configs = list(configs)
        if len(configs) > 1:
            _narrowed = True
            configs = configs[:1]
            kwargs.pop("prune_configs_by", None)
        return real_autotune(configs, *args, **kwargs)

    triton.autotune = autotune
