"""The judge–candidate link (`runner.child.link`) on the CPU: outputs as host bytes round-trip; what the judge
refuses before reading a byte or opening a handle (an IPC handle it did not ask for, byte counts that do not
match the shape, more bytes than the reference makes plausible)."""

from __future__ import annotations

import socket

import pytest
import torch

from runner.child.link import Foreign, LinkError, decode_outputs, encode_outputs, receive, send


def _through_the_link(header, payloads, **kw):
    a, b = socket.socketpair()
    with a, b:
        wr, rd = a.makefile("wb"), b.makefile("rb")
        send(wr, header, payloads)
        got = receive(rd)
        return decode_outputs(rd, got, "cpu", kw.pop("max_bytes", 1 << 30), **kw)


def test_outputs_round_trip_as_host_bytes():
    leaves = [torch.arange(6, dtype=torch.float32).reshape(2, 3), 3.5, None, torch.ones(0), object()]
    described, payloads, kept = encode_outputs(leaves, ipc=True)  # CPU tensors never go as handles
    assert kept == [] and all("ipc" not in d for d in described)
    out = _through_the_link({"outputs": described}, payloads)
    assert torch.equal(out[0], leaves[0]) and out[1] == 3.5 and out[2] is None and out[3].numel() == 0
    assert isinstance(out[4], Foreign)


def test_an_ipc_handle_the_judge_did_not_ask_for_is_refused():
    item = {"kind": "tensor", "dtype": "float32", "shape": [4], "ipc": {"handle": "00" * 64, "offset": 0, "nbytes": 16}}
    with pytest.raises(LinkError, match="did not ask"):
        _through_the_link({"outputs": [item]}, [b""])


def test_an_ipc_byte_count_that_does_not_match_the_shape_is_refused():
    item = {"kind": "tensor", "dtype": "float32", "shape": [4], "ipc": {"handle": "00" * 64, "offset": 0, "nbytes": 8}}
    with pytest.raises(LinkError, match="announced 8 bytes, not 16"):
        _through_the_link({"outputs": [item]}, [b""], ipc=True)


def test_ipc_bytes_count_against_the_plausible_total():
    item = {"kind": "tensor", "dtype": "float32", "shape": [1024], "ipc": {"handle": "00" * 64, "offset": 0,
                                                                          "nbytes": 4096}}
    with pytest.raises(LinkError, match="over the 1000"):
        _through_the_link({"outputs": [item]}, [b""], ipc=True, max_bytes=1000)
