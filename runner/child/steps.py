"""The steps both sides of a job take alike, the judge on the reference and the candidate process on the
program: seeding, making inputs and models on the inputs' device, and turning what a step raises into a
verdict (`Stop`). Same seeds, same device and the same `get_inputs` give both processes the same values, so
inputs never travel between them (`runner.child.link` checks a digest of them on every call)."""

from __future__ import annotations

import contextlib
import hashlib
import importlib.util
import random
import sys
from collections.abc import Callable
from typing import Any

from common.outcomes import ErrorType
from runner.child.classify import classify
from runner.gpu.gate import NO_GATE, SHARED, ChildGate
from runner.options import EvalOptions
from runner.result import RunResult


class Stop(Exception):
    """Ends the evaluation early with a verdict."""

    def __init__(self, verdict: RunResult) -> None:
        super().__init__(verdict.message)
        self.verdict = verdict


def fail(error_type: ErrorType, message: str, **extra: Any) -> Stop:
    return Stop(RunResult.failed(error_type, message, **extra))


def set_seed(seed: int) -> None:
    import torch

    random.seed(seed)
    torch.manual_seed(seed)  # seeds every CUDA device too
    np = sys.modules.get("numpy")
    if np is not None:
        np.random.seed(seed % (1 << 32))


def import_file(path: str, module_name: str) -> Any:
    """Import the file at `path` as `module_name` (Triton's `@jit` needs its source on disk)."""
    spec = importlib.util.spec_from_file_location(module_name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[module_name] = module
    spec.loader.exec_module(module)
    return module


def sync(device: str) -> None:
    if device == "cuda":
        import torch

        torch.cuda.synchronize()


def cloned(values: list[Any]) -> list[Any]:
    """Copies of the tensors among `values` (a model may write into its inputs); other values as they are."""
    import torch

    return [v.clone() if isinstance(v, torch.Tensor) else v for v in values]


DIGEST_CHUNK_WORDS = 251 * 8192  # 8-byte words per step (~16 MiB): a multiple of 251, so every chunk starts at weight 1


def inputs_digest(values: list[Any]) -> str:
    """A digest of a call's inputs, to check that the judge and the candidate process made the same ones: per
    tensor its dtype, shape and two exact integer sums of its bytes read as 8-byte words (plain, and weighted by
    position so that a permutation shows; both wrap modulo 2**64, which no order of summing changes) plus its last
    bytes that fill no word, computed where the tensor lives a chunk at a time; other values by repr. (Summing the
    bytes one by one, as int64, took ~8x the memory traffic: 0.1 s a row under the GPU gate on the H200.)"""
    import torch

    h = hashlib.sha256()
    for v in values:
        if not isinstance(v, torch.Tensor):
            h.update(repr(v).encode("utf-8", "replace"))
            continue
        data = _bytes_of(v)
        body = data.numel() // 8 * 8
        words = _as_words(data[:body])
        plain = weighted = 0
        weight = (torch.arange(min(words.numel(), DIGEST_CHUNK_WORDS), device=words.device) % 251) + 1
        for start in range(0, words.numel(), DIGEST_CHUNK_WORDS):  # word p weighs (p % 251) + 1
            chunk = words[start:start + DIGEST_CHUNK_WORDS]
            plain += int(chunk.sum())
            weighted += int((chunk * weight[:chunk.numel()]).sum())
        tail = data[body:].tolist()
        h.update(f"{v.dtype}{tuple(v.shape)}{plain}:{weighted}:{tail}".encode())
    return h.hexdigest()[:16]


def _bytes_of(v: Any) -> Any:
    import torch

    return v.detach().contiguous().reshape(-1).view(torch.uint8) if v.numel() else torch.empty(0, dtype=torch.uint8)


def _as_words(data: Any) -> Any:
    """`data` (uint8) as int64 words; a copy when its storage offset is not 8-byte aligned."""
    import torch

    try:
        return data.view(torch.int64)
    except RuntimeError:
        return data.clone().view(torch.int64)


class Steps:
    """One process's side of a job: its device, the gate its GPU steps hold, and the program path that
    tracebacks are cut to."""

    def __init__(self, path: str, options: EvalOptions, device: str, emit: Callable[[str], None],
                 gate: ChildGate = NO_GATE) -> None:
        self.path, self.options, self.device, self.emit = path, options, device, emit
        self.gate = gate if device == "cuda" else NO_GATE

    def guarded(self, stage: str, context: str, fn: Callable[..., Any], *args: Any, hold: str | None = SHARED) -> Any:
        """Run one step of the program; anything it raises becomes the verdict. `hold`: the gate mode the step
        runs under (SHARED: it may use the GPU; EXCLUSIVE: it needs the GPU alone; None: it holds already)."""
        self.emit(f"{stage}: {context}")
        try:
            with self.gate.hold(hold) if hold else contextlib.nullcontext():
                return fn(*args)
        except Stop:
            raise
        except BaseException as exc:  # noqa: BLE001 - SystemExit and friends from the program are verdicts too
            if isinstance(exc, KeyboardInterrupt):
                raise
            f = classify(exc, stage, self.path, context)
            raise fail(f.error_type, f.message, exception=f.exception, traceback=f.traceback) from None

    @property
    def inputs_device(self) -> str:
        return self.device if self.options.inputs_device == "device" else "cpu"

    def to_device(self, values: Any) -> list[Any]:
        import torch

        values = list(values) if isinstance(values, (list, tuple)) else [values]
        return [v.to(self.device) if isinstance(v, torch.Tensor) else v for v in values]

    def made(self, factory: Callable[[], Any]) -> Callable[[], list[Any]]:
        """`factory` (get_inputs or get_init_inputs) made on the inputs' device, its tensors then moved to the
        job's device (a program that names a device keeps it until then)."""
        return self._on_inputs_device(factory, self.to_device)

    def constructed(self, cls: Any, init: list[Any]) -> Callable[[], Any]:
        """`cls(*init)` with its parameters made on the inputs' device, then moved to the job's device."""
        return self._on_inputs_device(lambda: cls(*init), lambda model: model.to(self.device))

    def _on_inputs_device(self, make: Callable[[], Any], move: Callable[[Any], Any]) -> Callable[[], Any]:
        import torch

        def step() -> Any:
            with torch.device(self.inputs_device):
                made = make()
            return move(made)

        return step

    def init_inputs(self, module: Any) -> list[Any]:
        set_seed(self.options.seed)
        return self.guarded("init", "get_init_inputs()", self.made(module.get_init_inputs))

    def model(self, module: Any, name: str, init: list[Any]) -> Any:
        set_seed(self.options.seed)
        return self.guarded("init", f"building {name}", self.constructed(getattr(module, name), init))

    def inputs(self, module: Any, seed: int, stage: str = "correctness") -> list[Any]:
        set_seed(seed)
        return self.guarded(stage, "get_inputs()", self.made(module.get_inputs))

    def forward(self, model: Any, inputs: list[Any]) -> Any:
        out = model(*inputs)
        sync(self.device)
        return out
