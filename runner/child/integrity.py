"""What the judge's own comparison rests on, checked untouched by the reference part it runs (issue 42): torch's
functions, the tensor classes' methods, `torch.nn.functional`, `math`, the builtins and the judge's modules. A
snapshot of their attributes (by identity) is taken before the reference part is imported; `changed` names what
the reference part has replaced or removed since (and, on a class, added: a method added to `torch.Tensor` shadows
the base class's). Names a module gains are no change (torch imports submodules lazily). The judge checks after
each step the reference takes (import, `Model(...)`, `get_inputs()`, `Model.forward`) and refuses the run
(`reference_rejected`) when something changed, before it compares anything."""

from __future__ import annotations

import builtins
import math
import sys
from typing import Any

JUDGE_MODULES = ("runner.child.compare", "runner.child.link", "runner.child.evaluate", "runner.child.steps",
                 "runner.child.main", "runner.child.candidate_client")


def _owners() -> dict[str, tuple[Any, bool]]:
    """name -> (object whose attributes are watched, whether it is a class)."""
    import torch
    import torch.nn.functional as functional

    owners: dict[str, tuple[Any, bool]] = {"torch": (torch, False), "torch.nn.functional": (functional, False),
                                           "math": (math, False), "builtins": (builtins, False),
                                           "torch.Tensor": (torch.Tensor, True),
                                           "torch._C.TensorBase": (torch._C.TensorBase, True),
                                           "torch.nn.Module": (torch.nn.Module, True)}
    owners.update({name: (sys.modules[name], False) for name in JUDGE_MODULES if name in sys.modules})
    return owners


class Snapshot:
    def __init__(self) -> None:
        self.owners = _owners()
        self.ids = {name: {key: id(value) for key, value in list(vars(obj).items())}
                    for name, (obj, _) in self.owners.items()}
        self.kept = {name: list(vars(obj).values()) for name, (obj, _) in self.owners.items()}  # ids stay unique

    def changed(self) -> list[str]:
        """`owner.attr` of every watched attribute replaced or removed (added, on a class) since the snapshot."""
        found = []
        for name, (obj, is_class) in self.owners.items():
            before, now = self.ids[name], vars(obj)
            found += [f"{name}.{key}" for key, ident in before.items() if key not in now or id(now[key]) != ident]
            if is_class:
                found += [f"{name}.{key}" for key in now if key not in before]
        return found
