"""Compare a candidate's output with the reference's, as they are: structure (`structure`: the same nesting of
tuples/lists and dicts as Model's, a list and a tuple alike), plain tensors (a `torch.Tensor` subclass, which can
do work when it is read, arrives as a `Foreign` leaf and fails), shape, NaN/Inf, then allclose under the job's
profile for floating outputs, exact equality for integer and bool outputs (a tolerance of 1e-2 passes any index
off by one past 100), and both parts of complex outputs; with each output's max abs/rel difference and the
tightest standard tolerance it passes. Outputs of any strides compare value by value.

The comparison runs where the reference lives (the GPU in a CUDA run) a chunk at a time (`CHUNK` values, in
float64), so it needs a few hundred MB beyond the two outputs, whatever their size. Should even that not fit, the
verdict is `out_of_memory` with the outputs' shapes, dtypes and sizes in the message."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from common.outcomes import ErrorType
from runner.child.link import Foreign
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


def structure(out: Any) -> str:
    """The nesting of an output, leaves as `*`: `(*,*)` for a pair (list or tuple), `{a:*,b:*}` for a dict."""
    if isinstance(out, (list, tuple)):
        return "(" + ",".join(structure(item) for item in out) + ")"
    if isinstance(out, dict):
        return "{" + ",".join(f"{key}:{structure(out[key])}" for key in sorted(out, key=str)) + "}"
    return "*"


def _as_tensor(value: Any) -> Any:
    import torch

    if isinstance(value, torch.Tensor):
        return value
    if isinstance(value, (bool, int, float, complex)):
        return torch.tensor(value)
    return None


def _chunk_pairs(r: Any, c: Any) -> Any:
    """Matching 1-D pieces of `r` and `c` (the same shape, any strides) of at most CHUNK values, without copying
    a contiguous tensor as a whole: a small pair is flattened (copied where a stride needs it), a large one split
    along its first dimension until the pieces are contiguous or small."""
    if r.numel() <= CHUNK or r.dim() <= 1 or (r.is_contiguous() and c.is_contiguous()):
        flat_r, flat_c = r.reshape(-1), c.reshape(-1)
        for start in range(0, flat_r.numel(), CHUNK):
            yield flat_r[start:start + CHUNK], flat_c[start:start + CHUNK]
        return
    for pair in zip(r.unbind(0), c.unbind(0), strict=True):
        yield from _chunk_pairs(*pair)


def _chunk_stats(r: Any, c: Any, atol: float, rtol: float) -> Any:
    """One chunk's `_Stats` fields as a float64 tensor where the chunk lives: no host synchronisation, so a
    comparison on the GPU waits for the device once per output, not several times per chunk."""
    import torch

    c = c.to(device=r.device)
    if r.is_complex() or c.is_complex():  # both parts, each compared as a float
        r, c = (torch.view_as_real(t.to(torch.complex128)) for t in (r, c))
    rf, cf = r.to(dtype=torch.float64), c.to(dtype=torch.float64)
    r_fin, c_fin = torch.isfinite(rf), torch.isfinite(cf)
    bad, both = ~c_fin & r_fin, r_fin & c_fin
    diff = torch.where(both, (cf - rf).abs(), 0.0)
    ref_abs = torch.where(both, rf.abs(), 1.0)
    exact = not (r.is_floating_point() or r.is_complex())  # integer and bool references: values must be equal
    unequal = (c != r) if exact else ~torch.isclose(cf, rf, atol=atol, rtol=rtol)
    counts = [bad.sum(), (torch.isnan(cf) & bad).sum(), unequal.sum(), (~both & (cf != rf)).sum()]
    maxima = [diff.max(), (diff / ref_abs.clamp_min(atol)).max(), (diff / (1.0 + ref_abs)).max()]
    return torch.stack([v.to(torch.float64) for v in counts + maxima])


def _output_stats(r: Any, c: Any, atol: float, rtol: float) -> _Stats:
    import torch

    total = None
    for rc, cc in _chunk_pairs(r.detach(), c.detach()):
        part = _chunk_stats(rc, cc, atol, rtol)
        total = part if total is None else torch.cat([total[:4] + part[:4], torch.maximum(total[4:], part[4:])])
    values = total.tolist() if total is not None else [0.0] * 7
    return _Stats(*(int(v) for v in values[:4]), *values[4:])


def _shown(nesting: str, limit: int = 200) -> str:
    return nesting if len(nesting) <= limit else nesting[:limit] + "..."


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
        exact = not (r.is_floating_point() or r.is_complex())
        beyond = f"from the reference's {r.dtype} values" if exact else f"beyond atol={atol:g}, rtol={rtol:g}"
        return Comparison(ErrorType.OUTPUT_MISMATCH, f"output {i}: {stats.mismatched} of {r.numel()} values differ "
                          f"{beyond} (max abs diff {stats.max_abs:.6g}, max rel diff {stats.max_rel:.6g})"), record
    return None, record


def compare_outputs(ref: Any, cand: Any, options: EvalOptions, cand_structure: str | None = None) -> Comparison:
    """`cand`: the candidate's outputs, nested or already flat (as the link carries them: then `cand_structure`,
    the nesting the candidate reported, is held to Model's)."""
    import torch

    refs, cands = flatten(ref), flatten(cand)
    expected = structure(ref)
    got = cand_structure if cand_structure is not None else structure(cand)
    if got != expected:
        return Comparison(ErrorType.SHAPE_MISMATCH, f"outputs nested as {_shown(got)}, Model's as {_shown(expected)} "
                          "(`*`: a tensor or value)")
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
            failure = Comparison(ErrorType.SHAPE_MISMATCH, f"output {i}: expected a plain tensor, got {c_raw!r}"
                                 if isinstance(c_raw, Foreign) else f"output {i}: expected a tensor, got "
                                 f"{type(c_raw).__name__}")
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
