"""One check shared by the runner's `from_dict` constructors (options, run settings, results)."""

from __future__ import annotations

import dataclasses
from typing import Any


def refuse_unknown(cls: type, d: dict[str, Any], what: str) -> None:
    """Raise ValueError(`what`: the sorted keys of `d` that are no field of the dataclass `cls`)."""
    unknown = set(d) - {f.name for f in dataclasses.fields(cls)}
    if unknown:
        raise ValueError(f"{what}: {sorted(unknown)}")
