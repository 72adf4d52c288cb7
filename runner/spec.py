"""What a submitter chooses for a run (`RunSpec`) and what makes two runs "the same run": used by the service
(duplicate jobs), bulk runs (resume) and the `submit`/`eval` commands.

A run is identified by row id + program hash + options key + hardware label:
- the options key hashes the `RunSpec` (device, timeout, trials, profile, tolerances, where inputs are made, with
  defaults filled in); it is stamped into every stored result as `method["options_key"]`, so results written by
  the service and by bulk runs are recognised by each other;
- the hardware label is the GPU name (`system["gpu"]`) for CUDA runs, `cpu-interpreter` otherwise
  (`common.hardware`).
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
from dataclasses import dataclass
from typing import Any

from common.hardware import hardware_label, result_device
from runner import profiles
from runner.options import EvalOptions, check_settings, refuse_unknown

_DEFAULTS = EvalOptions()


@dataclass(frozen=True)
class RunSpec:
    """The run settings, one form from the command line or the HTTP body to the child (`eval_options`)."""

    device: str  # cuda | cpu (already resolved from auto)
    timeout_s: float = _DEFAULTS.timeout_s
    trials: int = _DEFAULTS.trials
    profile: str = profiles.DEFAULT_PROFILE
    atol: float | None = None
    rtol: float | None = None
    inputs_device: str = "device"

    def __post_init__(self) -> None:
        resolved = check_settings(self.device, self.timeout_s, self.trials, self.inputs_device, self.profile,
                                  self.atol, self.rtol, devices=("cuda", "cpu"))  # auto is resolved before
        object.__setattr__(self, "timeout_s", float(self.timeout_s))
        object.__setattr__(self, "profile", resolved.name)
        if resolved.name == profiles.CUSTOM:
            object.__setattr__(self, "atol", resolved.atol)
            object.__setattr__(self, "rtol", resolved.rtol)

    @classmethod
    def build(cls, device: str, **given: Any) -> RunSpec:
        """A spec from optional settings (None: the default)."""
        return cls(device=device, **{k: v for k, v in given.items() if v is not None})

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> RunSpec:
        refuse_unknown(cls, d, "unknown run settings")
        return cls(**d)

    def method_basics(self) -> dict[str, Any]:
        """The evaluation method as far as the settings say it: what a result the parent makes (a timeout, a
        crash) records, so that it counts under its profile like the child's results do."""
        atol, rtol = profiles.resolve(self.profile, self.atol, self.rtol).tolerances("float32")
        return {"profile": self.profile, "atol": atol, "rtol": rtol, "timeout_s": self.timeout_s,
                "options_key": self.key()}

    @property
    def result_device(self) -> str:
        """The `device` a result of this run carries."""
        return result_device(self.device)

    def key(self) -> str:
        """A stable hash of the settings."""
        blob = json.dumps(self.to_dict(), sort_keys=True, separators=(",", ":"), default=str)
        return hashlib.sha256(blob.encode("utf-8")).hexdigest()[:16]

    def eval_options(self, **placement: Any) -> EvalOptions:
        """The child's options: these settings plus where the job runs (visible_devices, triton_cache_dir,
        spares, ...)."""
        return EvalOptions(**self.to_dict(), **placement)


def result_key(result: dict[str, Any]) -> tuple[str, str, str, str] | None:
    """(row id, program hash, options key, hardware) of a stored result; None when it cannot be matched."""
    method = result.get("method") if isinstance(result.get("method"), dict) else {}
    if not result.get("row_id") or not result.get("program_sha256") or not method.get("options_key"):
        return None
    return (result["row_id"], result["program_sha256"], method["options_key"], hardware_label(result))
