"""Outputs compared as they are (issue 42): integer and bool outputs exactly, complex outputs by both parts, any
strides value by value, Model's nesting held, and a `torch.Tensor` subclass never read and never passed."""

from __future__ import annotations

import io

import torch

from common.outcomes import ErrorType
from runner.child import compare
from runner.child.compare import compare_outputs, flatten, structure
from runner.child.link import decode_outputs, encode_outputs, send
from runner.options import EvalOptions

OPTS = EvalOptions()


def test_an_index_off_by_one_fails_whatever_its_size():
    ref = torch.arange(100, 612, dtype=torch.int64)
    cmp = compare_outputs(ref, ref + 1, OPTS)  # within atol = rtol = 1e-2 of every value past 100
    assert cmp.error_type is ErrorType.OUTPUT_MISMATCH and "512 of 512" in cmp.message
    assert compare_outputs(ref, ref.clone(), OPTS).error_type is ErrorType.OK


def test_bool_outputs_compare_exactly():
    ref = torch.tensor([True, False, True])
    assert compare_outputs(ref, ~ref, OPTS).error_type is ErrorType.OUTPUT_MISMATCH
    assert compare_outputs(ref, ref.clone(), OPTS).error_type is ErrorType.OK


def test_complex_outputs_compare_both_parts():
    ref = torch.complex(torch.randn(64), torch.randn(64))
    wrong_imag = torch.complex(ref.real, ref.imag + 1.0)
    assert compare_outputs(ref, wrong_imag, OPTS).error_type is ErrorType.OUTPUT_MISMATCH
    assert compare_outputs(ref, torch.complex(ref.real + 1.0, ref.imag), OPTS).error_type is ErrorType.OUTPUT_MISMATCH
    assert compare_outputs(ref, ref.clone(), OPTS).error_type is ErrorType.OK


def test_a_non_contiguous_reference_compares_value_by_value():
    base = torch.randn(512, 16)
    ref = base.t()  # (16, 512), transposed
    assert compare_outputs(ref, ref.contiguous(), OPTS).error_type is ErrorType.OK
    wrong = ref.contiguous()
    wrong[3, 7] += 1.0
    assert compare_outputs(ref, wrong, OPTS).error_type is ErrorType.OUTPUT_MISMATCH
    assert compare_outputs(ref.contiguous(), ref, OPTS).error_type is ErrorType.OK  # and the other way round


def test_large_strided_pairs_are_split_alike(monkeypatch):
    monkeypatch.setattr(compare, "CHUNK", 64)  # the chunked path, on small tensors
    ref = torch.randn(40, 30).t()
    assert compare_outputs(ref, ref.contiguous(), OPTS).error_type is ErrorType.OK
    wrong = ref.contiguous()
    wrong[-1, -1] += 1.0
    cmp = compare_outputs(ref, wrong, OPTS)
    assert cmp.error_type is ErrorType.OUTPUT_MISMATCH and "1 of 1200" in cmp.message


def test_the_nesting_must_be_models():
    a, b = torch.ones(3), torch.zeros(3)
    assert structure((a, [b, 1.0])) == structure([a, (b, 1.0)]) == "(*,(*,*))"
    assert structure({"y": a, "x": b}) == "{x:*,y:*}"
    cmp = compare_outputs((a, b), [a, b], OPTS, cand_structure="(*,*)")
    assert cmp.error_type is ErrorType.OK
    nested = compare_outputs(((a, b),), [a, b], OPTS, cand_structure="(*,*)")  # same leaves, other nesting
    assert nested.error_type is ErrorType.SHAPE_MISMATCH and "nested as (*,*)" in nested.message
    assert compare_outputs((a,), a, OPTS).error_type is ErrorType.SHAPE_MISMATCH  # a 1-tuple is not a tensor


class _Lazy(torch.Tensor):
    """Does its work when read: what a timed call that leaves work out would return."""

    reads = 0

    @classmethod
    def __torch_function__(cls, func, types, args=(), kwargs=None):
        _Lazy.reads += 1
        return super().__torch_function__(func, types, args, kwargs or {})


def _through_link(out):
    described, payloads, _ = encode_outputs(flatten(out))
    stream = io.BytesIO()
    send(stream, {"outputs": described}, payloads)
    stream.seek(0)
    from runner.child.link import receive

    header = receive(stream)
    return decode_outputs(stream, header, "cpu", 1 << 20)


def test_a_tensor_subclass_is_not_read_and_fails_by_name():
    ref = torch.randn(8)
    lazy = ref.clone().as_subclass(_Lazy)
    _Lazy.reads = 0
    leaves = _through_link(lazy)
    assert _Lazy.reads == 0  # its work never ran on the candidate's side
    cmp = compare_outputs(ref, leaves, OPTS, cand_structure="*")
    assert cmp.error_type is ErrorType.SHAPE_MISMATCH
    assert "plain tensor" in cmp.message and "torch.Tensor subclass _Lazy" in cmp.message


def test_plain_tensors_and_parameters_pass_the_link():
    ref = torch.randn(8)
    leaves = _through_link((ref.clone(), torch.nn.Parameter(ref.clone())))
    assert compare_outputs((ref, ref), leaves, OPTS, cand_structure="(*,*)").error_type is ErrorType.OK
