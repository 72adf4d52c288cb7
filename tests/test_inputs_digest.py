"""`runner.child.steps.inputs_digest`: the judge and the candidate process prove they made the same inputs with
it, so it must change with any value, order, dtype or shape, and not with where a tensor's bytes sit in memory."""

from __future__ import annotations

import torch

from runner.child import steps
from runner.child.steps import inputs_digest


def test_equal_inputs_agree_and_any_change_shows():
    x = torch.randn(1000, 37)
    digest = inputs_digest([x, 3, "a"])
    assert digest == inputs_digest([x.clone(), 3, "a"])
    changed = x.clone()
    changed[5, 3] += 1e-6
    swapped = x.clone()
    swapped[[0, 1]] = swapped[[1, 0]]
    for other in ([changed, 3, "a"], [swapped, 3, "a"], [x.view(torch.int32), 3, "a"], [x.reshape(37, 1000), 3, "a"],
                  [x, 4, "a"]):
        assert inputs_digest(other) != digest


def test_the_bytes_past_the_last_word_and_unaligned_tensors():
    odd = torch.arange(13, dtype=torch.uint8)
    last = odd.clone()
    last[12] += 1
    assert inputs_digest([odd]) != inputs_digest([last])
    unaligned = torch.randn(101)[1:]  # a 4-byte storage offset: no 8-byte view of it
    assert inputs_digest([unaligned]) == inputs_digest([unaligned.clone()])
    assert inputs_digest([torch.empty(0)]) != inputs_digest([torch.empty(0, dtype=torch.int8)])


def test_weights_run_on_across_chunks(monkeypatch):
    monkeypatch.setattr(steps, "DIGEST_CHUNK_WORDS", 251 * 2)  # 2,500 words: five chunks, the last one short
    big = torch.randn(5000)
    swapped = big.clone()
    swapped[[100, 2600]] = swapped[[2600, 100]]  # words 50 and 1,300: in different chunks
    assert inputs_digest([big]) != inputs_digest([swapped])
    assert inputs_digest([big]) == inputs_digest([big.clone()])
