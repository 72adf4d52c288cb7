"""Evaluation profiles: which tolerance decides correctness and which torch backend flags the job runs under.

- `kernelbench` (the default): torch's backend flags untouched (TF32 as torch ships it: on for cuDNN
  convolutions, off for matmuls), atol = rtol = 1e-2 for every output dtype, as KernelBench v0/v0.1 and most
  published Triton-kernel results evaluate.
- `kernelbench-strict`: fp32/fp64 outputs at atol = rtol = 1e-4, fp16/bf16 at 1e-2, TF32 off for matmuls and
  convolutions (a true-fp32 reference).
- `custom`: the given atol/rtol for every dtype, flags as in `kernelbench` (untouched).

Every result records its profile, tolerances and whether TF32 was allowed in `method`, and, per output, the
tightest tolerance of `LADDER` it passes (`tolerance_passed`), so "correct at 1e-2, not at 1e-4" needs no re-run.
"""

from __future__ import annotations

from dataclasses import dataclass

DEFAULT_PROFILE = "kernelbench"
CUSTOM = "custom"
LADDER = (1e-5, 1e-4, 1e-3, 1e-2, 1e-1)  # standard tolerances (atol = rtol), tightest first
STRICT_BY_DTYPE = {"float32": 1e-4, "float64": 1e-4, "float16": 1e-2, "bfloat16": 1e-2}


@dataclass(frozen=True)
class Profile:
    name: str
    atol: float | None  # for every dtype; None: by dtype (STRICT_BY_DTYPE, else 1e-2), atol = rtol
    rtol: float | None
    tf32_off: bool  # turn TF32 off for matmuls and cuDNN; False leaves torch's flags as they are
    summary: str  # one line for pickers (the explorer's Re-run panel)

    def tolerances(self, dtype_name: str) -> tuple[float, float]:
        """(atol, rtol) for an output of this dtype (`torch.float32` or `float32`)."""
        by_dtype = STRICT_BY_DTYPE.get(dtype_name.removeprefix("torch."), 1e-2)
        return (self.atol if self.atol is not None else by_dtype, self.rtol if self.rtol is not None else by_dtype)


PROFILES = {
    "kernelbench": Profile("kernelbench", 1e-2, 1e-2, tf32_off=False,
                           summary="default: torch flags, atol = rtol = 1e-2"),
    "kernelbench-strict": Profile("kernelbench-strict", None, None, tf32_off=True,
                                  summary="fp32 1e-4, TF32 off"),
}
NAMES = (*PROFILES, CUSTOM)


def check(profile: str, atol: float | None, rtol: float | None) -> str:
    """The profile name a job runs under: `custom` whenever atol or rtol is given. Raises ValueError for an
    unknown name, a custom profile without tolerances, or a tolerance that is not a positive finite number."""
    for label, value in (("atol", atol), ("rtol", rtol)):
        if value is not None and (isinstance(value, bool) or not isinstance(value, int | float)
                                  or not 0 <= value < float("inf")):
            raise ValueError(f"{label} must be a finite number >= 0, not {value!r}")
    if atol is not None or rtol is not None:
        if profile not in (DEFAULT_PROFILE, CUSTOM):
            raise ValueError(f"atol/rtol make a custom profile; do not combine them with profile {profile!r}")
        return CUSTOM
    if profile == CUSTOM:
        raise ValueError("profile 'custom' needs atol and/or rtol")
    if profile not in PROFILES:
        raise ValueError(f"unknown profile {profile!r}; choose one of {', '.join(NAMES)}")
    return profile


def resolve(profile: str, atol: float | None = None, rtol: float | None = None) -> Profile:
    """The checked profile; a custom one given only atol or only rtol uses that value for both."""
    name = check(profile, atol, rtol)
    if name != CUSTOM:
        return PROFILES[name]
    atol = rtol if atol is None else atol
    rtol = atol if rtol is None else rtol
    return Profile(CUSTOM, float(atol), float(rtol), tf32_off=False, summary=f"atol {atol:g}, rtol {rtol:g}")


def tightest_passed(worst_ratio: float | None) -> float | None:
    """The smallest ladder tolerance t with |cand - ref| <= t + t * |ref| everywhere, given the worst
    |cand - ref| / (1 + |ref|) over the values; None when no rung passes (or nothing was compared)."""
    if worst_ratio is None:
        return None
    return next((t for t in LADDER if worst_ratio <= t), None)
