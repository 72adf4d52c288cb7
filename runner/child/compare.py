"""Compare a candidate's output with the reference's: structure and shape, NaN/Inf, then allclose under the job's
profile, with each output's max abs/rel difference and the tightest standard tolerance it passes.

The comparison runs where the reference lives (the GPU in a CUDA run) a chunk at a time (`CHUNK` values, in
float64), so it needs a few hundred MB beyond the two outputs, whatever their size. Should even that not fit, the
verdict is `out_of_memory` with the outputs' shapes, dtypes and sizes in the message."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from common.outcomes import ErrorType
from runner.options import EvalOptions
from runner.profiles import LADDER, tightest_passed
from runner.result import OutputDiff

CHUNK = 1 << 24  # values per chunk: 128 MiB per float64 temporary


@dataclass
class Comparison:
    error_type: ErrorType  # OK when the outputs match
    message: str
    max_abs_diff: float | None = None
    max_rel_diff: float | None = None
    outputs: list[OutputDiff] = field(default_factory=list)


@dataclass
class _Stats:
    """Counts and maxima over the chunks of one output."""

    nonfinite_bad: int  # non-finite candidate values where the reference is finite
    nonfinite_nan: int
    mismatched: int  # values outside atol/rtol (NaN in either counts)
    nonfinite_unequal: int  # positions with a NaN, or an infinity the other side does not have
    max_abs: float
    max_rel: float
    worst_ratio: float  # max |c - r| / (1 + |r|): the ladder rung passed (atol = rtol = t)


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


def _chunks(t: Any) -> Any:
    """1-D pieces of `t` of at most CHUNK values, without copying a contiguous tensor as a whole."""
    if t.dim() == 0:
        yield t.reshape(1)
        return
    if t.is_contiguous() or t.dim() == 1:
        flat = t.reshape(-1) if t.is_contiguous() else t
        for start in range(0, flat.numel(), CHUNK):
            yield flat[start:start + CHUNK]
        return
    for piece in t.unbind(0):  # non-contiguous: one slice of the first dimension at a time
        yield from _chunks(piece)


def _chunk_stats(r: Any, c: Any, atol: float, rtol: float) -> Any:
    """One chunk's `_Stats` fields as a float64 tensor where the chunk lives: no host synchronisation, so a
    comparison on the GPU waits for the device once per output, not several times per chunk."""
    import torch

    rf = r.to(dtype=torch.float64)
    cf = c.to(device=rf.device, dtype=torch.float64)
    r_fin, c_fin = torch.isfinite(rf), torch.isfinite(cf)
    bad, both = ~c_fin & r_fin, r_fin & c_fin
    diff = torch.where(both, (cf - rf).abs(), 0.0)
    ref_abs = torch.where(both, rf.abs(), 1.0)
    counts = [bad.sum(), (torch.isnan(cf) & bad).sum(), (~torch.isclose(cf, rf, atol=atol, rtol=rtol)).sum(),
              (~both & (cf != rf)).sum()]
    maxima = [diff.max(), (diff / ref_abs.clamp_min(atol)).max(), (diff / (1.0 + ref_abs)).max()]
    return torch.stack([v.to(torch.float64) for v in counts + maxima])


def _output_stats(r: Any, c: Any, atol: float, rtol: float) -> _Stats:
    import torch

    total = None
    for rc, cc in zip(_chunks(r.detach()), _chunks(c.detach()), strict=True):
        part = _chunk_stats(rc, cc, atol, rtol)
        total = part if total is None else torch.cat([total[:4] + part[:4], torch.maximum(total[4:], part[4:])])
    values = total.tolist() if total is not None else [0.0] * 7
    return _Stats(*(int(v) for v in values[:4]), *values[4:])


def _gib(t: Any) -> str:
    return f"{t.numel() * t.element_size() / 2**30:.2f} GiB"


def _compare_tensor(i: int, r: Any, c: Any, options: EvalOptions) -> tuple[Comparison | None, OutputDiff]:
    """(a failing Comparison or None, the output's record)."""
    atol, rtol = options.tolerance(str(r.dtype))
    stats = _output_stats(r, c, atol, rtol)
    # NaN never passes; the same infinity on both sides is no difference
    passed = None if stats.nonfinite_unequal else tightest_passed(stats.worst_ratio)
    record = OutputDiff(i, list(r.shape), str(r.dtype).removeprefix("torch."), stats.max_abs, stats.max_rel, passed)
    if stats.nonfinite_bad:
        return Comparison(ErrorType.NAN_OUTPUT, f"output {i}: {stats.nonfinite_bad} non-finite value(s) "
                          f"({stats.nonfinite_nan} NaN) where the reference is finite"), record
    if stats.mismatched:
        return Comparison(ErrorType.OUTPUT_MISMATCH, f"output {i}: {stats.mismatched} of {r.numel()} values differ "
                          f"beyond atol={atol:g}, rtol={rtol:g} (max abs diff {stats.max_abs:.6g}, max rel diff "
                          f"{stats.max_rel:.6g})"), record
    return None, record


def compare_outputs(ref: Any, cand: Any, options: EvalOptions) -> Comparison:
    import torch

    refs, cands = flatten(ref), flatten(cand)
    if len(refs) != len(cands):
        return Comparison(ErrorType.SHAPE_MISMATCH, f"expected {len(refs)} output(s), got {len(cands)}")
    records: list[OutputDiff] = []
    failure: Comparison | None = None
    for i, (r_raw, c_raw) in enumerate(zip(refs, cands, strict=True)):
        r, c = _as_tensor(r_raw), _as_tensor(c_raw)
        if r is None:
            same = r_raw == c_raw
            records.append(OutputDiff(i, [], type(r_raw).__name__, None, None, LADDER[0] if same else None))
            if not same:
                failure = Comparison(ErrorType.OUTPUT_MISMATCH, f"output {i}: expected {r_raw!r}, got {c_raw!r}")
                break
            continue
        if c is None:
            failure = Comparison(ErrorType.SHAPE_MISMATCH, f"output {i}: expected a tensor, got {type(c_raw).__name__}")
            break
        if tuple(r.shape) != tuple(c.shape):
            failure = Comparison(ErrorType.SHAPE_MISMATCH,
                                 f"output {i}: expected shape {tuple(r.shape)}, got {tuple(c.shape)}")
            break
        try:
            failed, record = _compare_tensor(i, r, c, options)
        except torch.OutOfMemoryError:
            failure = Comparison(ErrorType.OUT_OF_MEMORY, f"output {i}: no device memory left to compare chunks of "
                                 f"{CHUNK} values (reference {tuple(r.shape)} {r.dtype} {_gib(r)} on {r.device}, "
                                 f"candidate {c.dtype} {_gib(c)} on {c.device})")
            break
        records.append(record)
        if failed is not None:
            failure = failed
            break
    diffs = [d.max_abs_diff for d in records if d.max_abs_diff is not None]
    rels = [d.max_rel_diff for d in records if d.max_rel_diff is not None]
    result = failure or Comparison(ErrorType.OK, "")
    result.max_abs_diff = max(diffs) if diffs else None
    result.max_rel_diff = max(rels) if rels else None
    result.outputs = records
    return result
