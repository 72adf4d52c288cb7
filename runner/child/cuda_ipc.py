"""ModelNew's CUDA outputs handed from the candidate's process to the judge's without host copies: legacy CUDA IPC
memory handles through the driver API (libcuda), the way `torch.multiprocessing` shares CUDA tensors but with
nothing pickled and no shared-memory reference counters (the two processes may run as different users).

The candidate exports a contiguous output (`export`): the handle of the allocation that holds it, the offset in
it and the byte count; it keeps the tensor alive until its next command. The judge imports (`Importer`): it
opens each allocation once per answer, checks that the announced bytes lie inside it, copies them into memory of
its own and closes the handle before it compares, so nothing the candidate does later reaches the copy. A job
first tries a probe tensor (`probe_tensor`, `probe_matches`): where the driver refuses the handles (another
user, another namespace, memory not from cudaMalloc), outputs travel as bytes over the link, as on the CPU, and
the method record says which way they went."""

from __future__ import annotations

import ctypes
import functools
from typing import Any

HANDLE_BYTES = 64
LAZY_ENABLE_PEER_ACCESS = 1
PROBE_ELEMENTS = 256


class IpcError(Exception):
    """The driver refused an IPC call, or an announced handle does not fit the memory it names."""


class _Handle(ctypes.Structure):
    _fields_ = [("reserved", ctypes.c_char * HANDLE_BYTES)]


@functools.lru_cache(maxsize=1)
def _driver() -> ctypes.CDLL:
    lib = ctypes.CDLL("libcuda.so.1")
    lib.cuMemGetAddressRange_v2.argtypes = [ctypes.POINTER(ctypes.c_uint64), ctypes.POINTER(ctypes.c_size_t),
                                            ctypes.c_uint64]
    lib.cuIpcGetMemHandle.argtypes = [ctypes.POINTER(_Handle), ctypes.c_uint64]
    lib.cuIpcOpenMemHandle_v2.argtypes = [ctypes.POINTER(ctypes.c_uint64), _Handle, ctypes.c_uint]
    lib.cuIpcCloseMemHandle.argtypes = [ctypes.c_uint64]
    return lib


def _check(code: int, what: str) -> None:
    if code != 0:
        raise IpcError(f"{what} failed with CUDA driver error {code}")


def _range(ptr: int) -> tuple[int, int]:
    base, size = ctypes.c_uint64(), ctypes.c_size_t()
    _check(_driver().cuMemGetAddressRange_v2(ctypes.byref(base), ctypes.byref(size), ptr), "cuMemGetAddressRange")
    return base.value, size.value


def export(tensor: Any) -> dict[str, Any]:
    """Candidate side: `{"handle", "offset", "nbytes"}` for a contiguous CUDA tensor whose work is finished."""
    try:
        base, _ = _range(tensor.data_ptr())
        handle = _Handle()
        _check(_driver().cuIpcGetMemHandle(ctypes.byref(handle), base), "cuIpcGetMemHandle")
    except OSError as exc:
        raise IpcError(f"no CUDA driver library: {exc}") from None
    return {"handle": ctypes.string_at(ctypes.addressof(handle), HANDLE_BYTES).hex(), "offset": tensor.data_ptr() - base,
            "nbytes": tensor.numel() * tensor.element_size()}


class _Window:
    """Borrowed device memory seen by torch as a uint8 tensor (`__cuda_array_interface__`), never freed by it."""

    def __init__(self, ptr: int, nbytes: int) -> None:
        self.__cuda_array_interface__ = {"shape": (nbytes,), "typestr": "|u1", "data": (ptr, False), "version": 3,
                                         "strides": None}


class Importer:
    """Judge side, one answer's worth: `copy(desc)` gives a uint8 tensor of the judge's own; `close()` unmaps."""

    def __init__(self) -> None:
        import torch

        self.opened: dict[str, tuple[int, int]] = {}  # handle hex → (base, size)
        torch.empty(1, device="cuda")  # the driver calls need this thread's CUDA context to exist

    def _open(self, handle_hex: str) -> tuple[int, int]:
        if handle_hex not in self.opened:
            raw = bytes.fromhex(handle_hex)
            if len(raw) != HANDLE_BYTES:
                raise IpcError(f"an IPC handle has {len(raw)} bytes, not {HANDLE_BYTES}")
            handle, ptr = _Handle(), ctypes.c_uint64()
            ctypes.memmove(ctypes.addressof(handle), raw, HANDLE_BYTES)
            _check(_driver().cuIpcOpenMemHandle_v2(ctypes.byref(ptr), handle, LAZY_ENABLE_PEER_ACCESS),
                   "cuIpcOpenMemHandle")
            self.opened[handle_hex] = (ptr.value, _range(ptr.value)[1])
        return self.opened[handle_hex]

    def copy(self, desc: Any, nbytes: int) -> Any:
        import torch

        if not isinstance(desc, dict) or not isinstance(desc.get("handle"), str):
            raise IpcError("an IPC output needs a handle")
        offset = desc.get("offset")
        if not isinstance(offset, int) or isinstance(offset, bool) or offset < 0:
            raise IpcError(f"bad IPC offset {offset!r}")
        try:
            base, size = self._open(desc["handle"])
        except ValueError:
            raise IpcError("an IPC handle is not hex") from None
        if offset + nbytes > size:
            raise IpcError(f"an IPC output of {nbytes} bytes at offset {offset} overruns its allocation of {size}")
        if nbytes == 0:
            return torch.empty(0, dtype=torch.uint8, device="cuda")
        window = torch.as_tensor(_Window(base + offset, nbytes), device="cuda")
        return window.clone()

    def close(self) -> None:
        import torch

        if self.opened:
            torch.cuda.current_stream().synchronize()  # the copies are done before the memory goes
        for base, _ in self.opened.values():
            _driver().cuIpcCloseMemHandle(base)
        self.opened.clear()


def probe_tensor() -> Any:
    """Candidate side, at load: a small tensor of known values for the judge to import."""
    import torch

    t = torch.arange(PROBE_ELEMENTS, dtype=torch.int32, device="cuda")
    torch.cuda.synchronize()
    return t


def probe_matches(desc: Any) -> str | None:
    """Judge side: None if the probe's handle opens and holds the known values, else why not."""
    import torch

    importer = Importer()
    try:
        got = importer.copy(desc, PROBE_ELEMENTS * 4).view(torch.int32)
        expected = torch.arange(PROBE_ELEMENTS, dtype=torch.int32, device="cuda")
        return None if torch.equal(got, expected) else "the probe's values differ"
    except (IpcError, OSError, RuntimeError, TypeError) as exc:
        return str(exc)[:300]
    finally:
        try:
            importer.close()
        except (OSError, RuntimeError):
            pass
