"""The link between the judge and its candidate process: one JSON line per message, followed by the raw bytes of
the tensors it carries, over a socket pair that only those two processes hold (design §4: the judge never
shares a process with the candidate).

The judge sends commands (`runner.child.candidate` says which) and reads one answer to each: `{"ok": true, ...}`
or `{"ok": false, "failure": {error_type, message, exception, traceback}}`. An answer that carries outputs
describes each flattened output (`{"kind": "tensor", "dtype", "shape"}`, `{"kind": "scalar", "value"}`,
`{"kind": "none"}` or `{"kind": "other", "type"}`: anything else, a `torch.Tensor` subclass included, which is
not read, since reading one can run work the timed call left out) with the byte count of each tensor in `nbytes`; the bytes
follow the line, or, for a CUDA output where the job's probe showed CUDA IPC working, the tensor's description
carries a handle (`runner.child.cuda_ipc`) and its bytes on the link are none. Nothing the candidate sends is unpickled or evaluated: the judge parses JSON lines of bounded
length, accepts only the dtypes below and byte counts that match the shapes, and reads the bytes into tensors it
makes itself."""

from __future__ import annotations

import json
import math
from typing import Any, BinaryIO

MAX_LINE = 1 << 20
DTYPES = ("float32", "float64", "float16", "bfloat16", "int8", "int16", "int32", "int64", "uint8", "bool",
          "complex64", "complex128", "float8_e4m3fn", "float8_e5m2")


class LinkError(Exception):
    """The other side broke the protocol, or went away."""


def send(stream: BinaryIO, header: dict[str, Any], payloads: list[Any] = ()) -> None:
    """One message: `header` as a JSON line (plus `nbytes`), then each payload (bytes-like) in order."""
    views = [memoryview(p).cast("B") for p in payloads]
    line = json.dumps({**header, "nbytes": [v.nbytes for v in views]}, default=str) + "\n"
    stream.write(line.encode("utf-8"))
    for view in views:
        stream.write(view)
    stream.flush()


def receive(stream: BinaryIO) -> dict[str, Any]:
    """The next message's header (its payloads are read with `read_payload`)."""
    line = stream.readline(MAX_LINE + 1)
    if not line:
        raise LinkError("the other side closed the link")
    if len(line) > MAX_LINE or not line.endswith(b"\n"):
        raise LinkError(f"message line over {MAX_LINE} bytes")
    try:
        header = json.loads(line)
    except ValueError as exc:
        raise LinkError(f"unreadable message: {exc}") from None
    if not isinstance(header, dict):
        raise LinkError(f"message is a {type(header).__name__}, not an object")
    return header


def read_payload(stream: BinaryIO, n: int) -> bytearray:
    buf = bytearray(n)
    view, got = memoryview(buf), 0
    while got < n:
        k = stream.readinto(view[got:])
        if not k:
            raise LinkError(f"link closed after {got} of {n} payload bytes")
        got += k
    return buf


def encode_outputs(leaves: list[Any], ipc: bool = False) -> tuple[list[dict[str, Any]], list[Any], list[Any]]:
    """Candidate side: descriptions and payloads of flattened outputs, and the tensors to keep alive until the
    next command. A CUDA tensor goes as a CUDA IPC handle when `ipc` (`runner.child.cuda_ipc`; its payload is
    empty), else (or where the driver refuses its memory) copied to host memory."""
    import torch

    described, payloads, kept = [], [], []
    plain = (torch.Tensor, torch.nn.Parameter)
    for leaf in leaves:
        if isinstance(leaf, torch.Tensor) and type(leaf) not in plain:  # never read: reading may run its work
            described.append({"kind": "other", "type": f"torch.Tensor subclass {type(leaf).__qualname__}"[:200]})
        elif isinstance(leaf, torch.Tensor):
            t = leaf.detach().contiguous()
            item = {"kind": "tensor", "dtype": str(t.dtype).removeprefix("torch."), "shape": list(t.shape)}
            if ipc and t.is_cuda and t.numel():
                from runner.child import cuda_ipc

                try:
                    item["ipc"] = cuda_ipc.export(t)
                except cuda_ipc.IpcError:
                    pass
            if "ipc" in item:
                kept.append(t)
                payloads.append(b"")
            else:
                t = t.cpu()
                payloads.append(t.reshape(-1).view(torch.uint8).numpy() if t.numel() else b"")
            described.append(item)
        elif isinstance(leaf, (bool, int, float)):
            described.append({"kind": "scalar", "value": leaf})
        elif leaf is None:
            described.append({"kind": "none"})
        else:
            described.append({"kind": "other", "type": type(leaf).__name__})
    return described, payloads, kept


class Foreign:
    """An output the candidate returned that the link does not carry (compared as unequal to anything)."""

    def __init__(self, type_name: str) -> None:
        self.type_name = type_name

    def __repr__(self) -> str:
        return f"<{self.type_name}>"


def _checked_tensor_meta(item: dict[str, Any], payload: int) -> tuple[str, list[int], int]:
    """(dtype, shape, bytes) of an announced tensor: its bytes follow on the link (`payload`), or, for a CUDA IPC
    handle, the payload is empty and the handle's byte count must match the shape."""
    import torch

    dtype, shape = item.get("dtype"), item.get("shape")
    if dtype not in DTYPES:
        raise LinkError(f"output dtype {dtype!r} is not one the judge accepts")
    if not isinstance(shape, list) or not all(isinstance(s, int) and not isinstance(s, bool) and s >= 0 for s in shape):
        raise LinkError(f"bad output shape {shape!r}")
    expected = math.prod(shape) * getattr(torch, dtype).itemsize
    ipc = item.get("ipc")
    nbytes = ipc.get("nbytes") if isinstance(ipc, dict) and payload == 0 else payload
    if nbytes != expected:
        raise LinkError(f"output of shape {shape} {dtype} announced {nbytes} bytes, not {expected}")
    return dtype, shape, expected


def decode_outputs(stream: BinaryIO, header: dict[str, Any], device: str, max_bytes: int,
                   ipc: bool = False) -> list[Any]:
    """Judge side: the outputs an answer carries, as tensors on `device` (or scalars, None, `Foreign`); a total
    over `max_bytes` is refused before any byte is read or any handle opened, and so is an IPC handle the judge
    did not ask for (`ipc`)."""
    import torch

    described, nbytes = header.get("outputs"), header.get("nbytes")
    if not isinstance(described, list) or not isinstance(nbytes, list):
        raise LinkError("an outputs answer needs 'outputs' and 'nbytes' lists")
    tensors = [d for d in described if isinstance(d, dict) and d.get("kind") == "tensor"]
    if len(tensors) != len(nbytes) or not all(isinstance(n, int) and n >= 0 for n in nbytes):
        raise LinkError("byte counts do not match the tensors announced")
    if not ipc and any("ipc" in d for d in tensors):
        raise LinkError("an output came as a CUDA IPC handle, which the judge did not ask for")
    metas = [_checked_tensor_meta(d, n) for d, n in zip(tensors, nbytes, strict=True)]
    if sum(m[2] for m in metas) > max_bytes:
        raise LinkError(f"outputs of {sum(m[2] for m in metas)} bytes, over the {max_bytes} the reference makes "
                        "plausible")
    leaves: list[Any] = []
    sizes = iter(zip(tensors, metas, nbytes, strict=True))
    importer = None
    try:
        for item in described:
            kind = item.get("kind") if isinstance(item, dict) else None
            if kind == "tensor":
                _, (dtype, shape, size), n = next(sizes)
                if n == 0 and isinstance(item.get("ipc"), dict) and size:
                    from runner.child import cuda_ipc

                    importer = importer or cuda_ipc.Importer()
                    try:
                        flat = importer.copy(item["ipc"], size)
                    except cuda_ipc.IpcError as exc:
                        raise LinkError(str(exc)) from None
                else:
                    raw = read_payload(stream, n)
                    flat = torch.frombuffer(raw, dtype=torch.uint8) if n else torch.empty(0, dtype=torch.uint8)
                leaves.append(flat.view(getattr(torch, dtype)).reshape(shape).to(device))
            elif kind == "scalar" and isinstance(item.get("value"), (bool, int, float)):
                leaves.append(item["value"])
            elif kind == "none":
                leaves.append(None)
            else:
                leaves.append(Foreign(str(item.get("type") if isinstance(item, dict) else type(item).__name__)))
    finally:
        if importer is not None:
            importer.close()
    return leaves
