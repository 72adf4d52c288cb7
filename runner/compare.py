"""Compare a candidate's output with the reference's: structure and shape, NaN/Inf, then allclose."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from runner.options import EvalOptions
from runner.result import ErrorType


@dataclass
class Comparison:
    error_type: ErrorType  # OK when the outputs match
    message: str
    max_abs_diff: float | None = None
    max_rel_diff: float | None = None


def flatten(out: Any) -> list[Any]:
    """Outputs as a flat list of leaves (tensors or scalars), from a tensor, a tuple/list or a dict."""
    if isinstance(out, (list, tuple)):
        return [leaf for item in out for leaf in flatten(item)]
    if isinstance(out, dict):
        return [leaf for key in sorted(out, key=str) for leaf in flatten(out[key])]
    return [out]


def _as_tensor(value: Any) -> Any:
    import torch

    if isinstance(value, torch.Tensor):
        return value
    if isinstance(value, (bool, int, float, complex)):
        return torch.tensor(value)
    return None


def compare_outputs(ref: Any, cand: Any, options: EvalOptions) -> Comparison:
    import torch

    refs, cands = flatten(ref), flatten(cand)
    if len(refs) != len(cands):
        return Comparison(ErrorType.SHAPE_MISMATCH, f"expected {len(refs)} output(s), got {len(cands)}")
    max_abs = max_rel = 0.0
    for i, (r_raw, c_raw) in enumerate(zip(refs, cands, strict=True)):
        r, c = _as_tensor(r_raw), _as_tensor(c_raw)
        if r is None:
            if r_raw != c_raw:
                return Comparison(ErrorType.OUTPUT_MISMATCH, f"output {i}: expected {r_raw!r}, got {c_raw!r}")
            continue
        if c is None:
            return Comparison(ErrorType.SHAPE_MISMATCH, f"output {i}: expected a tensor, got {type(c_raw).__name__}")
        if tuple(r.shape) != tuple(c.shape):
            return Comparison(
                ErrorType.SHAPE_MISMATCH, f"output {i}: expected shape {tuple(r.shape)}, got {tuple(c.shape)}"
            )
        atol, rtol = options.tolerance(str(r.dtype))
        rf = r.detach().to(dtype=torch.float64)  # compared where the reference lives (the GPU, in a CUDA run):
        cf = c.detach().to(device=rf.device, dtype=torch.float64)  # host CPU ops on big outputs take seconds
        bad = ~torch.isfinite(cf) & torch.isfinite(rf)
        if bool(bad.any()):
            n_nan = int(torch.isnan(cf).logical_and(bad).sum())
            return Comparison(
                ErrorType.NAN_OUTPUT,
                f"output {i}: {int(bad.sum())} non-finite value(s) ({n_nan} NaN) where the reference is finite",
            )
        both = torch.isfinite(rf) & torch.isfinite(cf)
        if rf.numel():
            diff = (cf - rf).abs()[both]
            if diff.numel():
                max_abs = max(max_abs, float(diff.max()))
                max_rel = max(max_rel, float((diff / rf.abs()[both].clamp_min(atol)).max()))
        if not torch.allclose(cf, rf, atol=atol, rtol=rtol, equal_nan=False):
            mismatched = int((~torch.isclose(cf, rf, atol=atol, rtol=rtol)).sum())
            return Comparison(
                ErrorType.OUTPUT_MISMATCH,
                f"output {i}: {mismatched} of {rf.numel()} values differ beyond atol={atol:g}, rtol={rtol:g} "
                f"(max abs diff {max_abs:.6g}, max rel diff {max_rel:.6g})",
                max_abs,
                max_rel,
            )
    return Comparison(ErrorType.OK, "", max_abs, max_rel)
