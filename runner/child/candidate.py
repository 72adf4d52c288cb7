"""The candidate process: `python -P -m runner.child.candidate --fd N --parent-pid P`, started by the judge
(`runner.child.candidate_client`) as an unprivileged user where the judge is root.

It imports the whole program, builds `Model` (only for its state) and `ModelNew`, and answers the judge's
commands over the link (`runner.child.link`), one answer each:

| command | does | answers |
|---|---|---|
| `ready` (asked_at) | nothing: answered once the process has warmed up | its warm-up's steps (wall seconds) |
| `load` (program, options, device, triton_cache_dir) | set up the device, install the guard, import | autotunes |
| `build` (ipc) | `get_init_inputs()`, `Model` (for its state) and `ModelNew` | flags, a CUDA IPC probe when asked |
| `compile_pass` (seed) | one call on copies with every autotuner compiling its configs, timing nothing | tuners |
| `forward` (seed, ipc) | `ModelNew` on `get_inputs()` made after `seed` | digest, outputs (IPC handles when `ipc`) |
| `launches` (seed) | one untimed call with its launches recorded (`runner.child.launches`; the profiler when no Triton kernel ran) | launches |
| `time` (seed, timing) | the timing loop on `get_inputs()` made after `seed`, then one call with its launches recorded (no profiler) | timing, flags, launches |
| `recheck` (seed, ipc) | fresh values after `seed` written into the timed inputs' tensors, one call | digest, outputs |
| `loop_check` (ipc) | the outputs of the call inside the timing loop that ran on fresh inputs (`runner.child.loop_check`; `time`'s loop_seed) | checked, digest, outputs |
| `finish` | | flags (guard refusals, interpreter notes), its CPU seconds, its capabilities (`separation`) |

It holds no reference output, no verdict channel and no gate: the judge holds the gate around each command.
What it sends back is only data for the judge to check; a failure it reports is its own verdict."""

from __future__ import annotations

import argparse
import faulthandler
import os
import socket
import sys
import traceback
from typing import Any

from common.outcomes import ErrorType
from runner.child import pinning, process, separation
from runner.child.classify import classify
from runner.child.link import LinkError, encode_outputs, receive, send
from runner.child.steps import Steps, Stop, cloned, fail, import_file, inputs_digest, set_seed
from runner.options import EvalOptions, TimingOptions
from runner.protocol import STACKS_SIGNAL, WARM_UP_FAILED_FLAG

REQUIRED = ("Model", "ModelNew", "get_inputs", "get_init_inputs")
MODULE_NAME = "tlx_program"


class Candidate:
    def __init__(self, capabilities: str = "", warm_up_failure: str | None = None) -> None:
        self.capabilities = capabilities  # what `separation.drop_capabilities` did
        self.warm_up_failure = warm_up_failure  # `process.prewarm`'s: the harness's own kernel failed here
        self.steps: Steps | None = None
        self.module: Any = None
        self.new: Any = None
        self.timed_inputs: list[Any] | None = None
        self.loop: Any = None  # the timing loop's `LoopCheck`, and the digest of its fresh inputs
        self.loop_digest: str | None = None
        self.flags: list[str] = []
        self.cpu_warm_s: float | None = None
        self.kept: list[Any] = []  # outputs handed over as CUDA IPC handles, alive until the next command

    # -- commands ---------------------------------------------------------------------------------------------
    def load(self, msg: dict[str, Any]) -> dict[str, Any]:
        self.cpu_warm_s = process.cpu_seconds()
        options, device = EvalOptions.from_dict(msg["options"]), str(msg["device"])
        if msg.get("triton_cache_dir"):
            os.environ["TRITON_CACHE_DIR"] = str(msg["triton_cache_dir"])
        path = str(msg["program"])
        sys.argv = [path]
        process.set_limits(options, device)
        from runner.child import setup

        setup.device_runtime(options, device, gate_hooks=device == "cuda")
        from runner.child import guard

        guard.install([os.getcwd(), os.environ.get("TRITON_CACHE_DIR", ""), *options.write_roots],
                      protected=(os.getppid(),))
        self.steps = steps = Steps(path, options, device, lambda _text: None)
        with open(path, encoding="utf-8", errors="replace") as fh:
            source = fh.read()
        try:
            compile(source, path, "exec")
        except (SyntaxError, ValueError) as exc:
            f = classify(exc, "load", path)
            tb = "".join(traceback.format_exception_only(type(exc), exc))
            raise fail(ErrorType.SYNTAX_ERROR, f.message, exception=f.exception, traceback=tb) from None
        if device == "cuda":
            from runner.child import launches, timing

            timing.pin_clocks()
            launches.watch_graphs()  # before the program can capture a CUDA graph
        self.module = steps.guarded("load", "importing the program", import_file, path, MODULE_NAME)
        missing = [name for name in REQUIRED if not callable(getattr(self.module, name, None))]
        if missing:
            raise fail(ErrorType.MISSING_SYMBOL, f"program does not define {', '.join(missing)}")
        return {"autotunes": "autotune" in source}

    def ready(self, msg: dict[str, Any]) -> dict[str, Any]:
        from runner.child import warmup

        asked_at = msg.get("asked_at")
        return {"warm_up_s": warmup.durations(float(asked_at) if isinstance(asked_at, (int, float)) else None)}

    def build(self, msg: dict[str, Any]) -> dict[str, Any]:
        steps = self.steps
        init = steps.init_inputs(self.module)
        model = steps.model(self.module, "Model", init)
        self.new = steps.model(self.module, "ModelNew", init)
        steps.guarded("init", "loading Model's state into ModelNew", self.load_state, model, self.new)
        del model
        return {"flags": list(self.flags), **self.ipc_probe(msg)}

    def ipc_probe(self, msg: dict[str, Any]) -> dict[str, Any]:
        """A tensor of known values as a CUDA IPC handle, when the judge asks: it tries to open it."""
        if not msg.get("ipc") or self.steps.device != "cuda":
            return {}
        from runner.child import cuda_ipc

        try:
            probe = cuda_ipc.probe_tensor()
            answer = {"ipc_probe": cuda_ipc.export(probe)}
        except (cuda_ipc.IpcError, RuntimeError) as exc:
            return {"ipc_refused": str(exc)[:300]}
        self.kept = [probe]
        return answer

    def load_state(self, model: Any, new: Any) -> None:
        ref, cand = model.state_dict(), new.state_dict()
        same = {k: v for k, v in ref.items() if k in cand and tuple(cand[k].shape) == tuple(v.shape)}
        if same:
            new.load_state_dict({**cand, **same})
            self.flags.append(f"state_loaded:{len(same)}/{len(cand)}")

    def compile_pass(self, msg: dict[str, Any]) -> dict[str, Any]:
        import torch

        from runner.child import autotune

        inputs = self.steps.inputs(self.module, int(msg["seed"]))
        devices = [torch.cuda.current_device()] if self.steps.device == "cuda" else []
        with torch.no_grad(), torch.random.fork_rng(devices=devices), autotune.compile_pass() as tuners:
            self.steps.guarded("correctness", "ModelNew forward (compiling autotuned configs)",
                               self.steps.forward, self.new, cloned(inputs), hold=None)
        return {"tuners": len(tuners)}

    def forward(self, msg: dict[str, Any]) -> tuple[dict[str, Any], list[Any]]:
        inputs = self.steps.inputs(self.module, int(msg["seed"]))
        return self._outputs(inputs, "ModelNew forward", digest=bool(msg.get("digest")), ipc=bool(msg.get("ipc")))

    def _outputs(self, inputs: list[Any], context: str, digest: bool, ipc: bool) -> tuple[dict[str, Any], list[Any]]:
        """ModelNew's outputs on `inputs`, with a digest of the inputs when asked (before the call: a candidate
        may write into its inputs); CUDA outputs as IPC handles when `ipc`, their work finished first."""
        import torch

        digest = inputs_digest(inputs) if digest else None
        with torch.no_grad():
            out = self.steps.guarded("correctness", context, self.steps.forward, self.new, inputs, hold=None)
        return self._handed_over(out, digest, ipc)

    def _handed_over(self, out: Any, digest: str | None, ipc: bool) -> tuple[dict[str, Any], list[Any]]:
        import torch

        from runner.child.compare import flatten, structure

        if ipc:
            torch.cuda.synchronize()
        described, payloads, self.kept = self.steps.guarded("correctness", "handing the outputs over",
                                                            lambda: encode_outputs(flatten(out), ipc), hold=None)
        return {"digest": digest, "outputs": described, "structure": structure(out)}, payloads

    def launches(self, msg: dict[str, Any]) -> dict[str, Any]:
        import torch

        inputs = self.steps.inputs(self.module, int(msg["seed"]))
        with torch.no_grad():
            record = self.steps.guarded("launches", "ModelNew forward (recording launches)", self._account,
                                        inputs, 0.0, True, hold=None)
        return {"launches": record}

    def time(self, msg: dict[str, Any]) -> dict[str, Any]:
        import torch

        from runner.child import timing

        self.timed_inputs = inputs = self.steps.inputs(self.module, int(msg["seed"]), stage="timing")
        timed: Any = lambda: self.new(*inputs)  # noqa: E731
        if isinstance(msg.get("loop_seed"), int):
            from runner.child.loop_check import LoopCheck

            fresh = self.steps.inputs(self.module, msg["loop_seed"], stage="timing")
            self.loop_digest = inputs_digest(fresh)
            self.loop = timed = LoopCheck(lambda args: self.new(*args), inputs, fresh)
        opts = TimingOptions(**msg["timing"])
        cpu = msg.get("cpu") if isinstance(msg.get("cpu"), int) else None
        with torch.no_grad(), pinning.pinned(cpu) as pinned:
            t, flags = self.steps.guarded("timing", "timing ModelNew",
                                          lambda: timing.time_callable(timed, opts), hold=None)
            seed = int(msg["seed"])
            t.repeated_median_ms, t.fresh_median_ms = self.steps.guarded(
                "timing", "timing ModelNew on repeated and on fresh values",
                lambda: timing.time_repeated_and_fresh(lambda: self.new(*inputs), lambda: self.refill(seed),
                                                       lambda k: self.refill(seed + 1 + k), opts,
                                                       timing.fresh_pairs(t.median_ms)), hold=None)
            record = self.steps.guarded("timing", "ModelNew forward (recording launches)", self._account,
                                        inputs, 2 * (t.host_call_ms or t.median_ms) + 1.0, hold=None)
        if timing.faster_on_repeated_inputs(t.repeated_median_ms, t.fresh_median_ms):
            flags.append("faster_on_repeated_inputs")
        if self.loop is not None:  # the audited calls' Triton GPU time, beside the checked call's (`loop_check`)
            record["timed_triton_ms"] = self.loop.audited_median_ms()
        return {"timing": t.to_dict(), "flags": flags, "launches": record, "pinned": pinned}

    def _account(self, inputs: list[Any], prefill_ms: float, profile: bool = False) -> dict[str, Any]:
        from runner.child.launches import account

        return account(lambda: self.new(*inputs), self.module, self.steps.device, prefill_ms, profile)

    def refill(self, seed: int) -> None:
        """Write the values `get_inputs()` makes after `seed` into the timed input tensors."""
        import torch

        fresh = self.steps.inputs(self.module, seed, stage="timing")
        for kept, new in zip(self.timed_inputs, fresh, strict=True):
            if isinstance(kept, torch.Tensor) and isinstance(new, torch.Tensor):
                kept.copy_(new)

    def recheck(self, msg: dict[str, Any]) -> tuple[dict[str, Any], list[Any]]:
        import torch

        if self.timed_inputs is None:  # not timed (the CPU interpreter): one call on the first values instead
            self.timed_inputs = self.steps.inputs(self.module, int(msg["first_seed"]), stage="recheck")
            with torch.no_grad():
                self.steps.guarded("recheck", "ModelNew forward (before the recheck)", self.steps.forward, self.new,
                                   self.timed_inputs, hold=None)
        with torch.no_grad():
            self.refill(int(msg["seed"]))
        return self._outputs(self.timed_inputs, "ModelNew forward (recheck on fresh values)", digest=True,
                             ipc=bool(msg.get("ipc")))

    def loop_check(self, msg: dict[str, Any]) -> tuple[dict[str, Any], list[Any]]:
        """The outputs of the timing loop's call on fresh inputs, `{"checked": false}` where none ran (another
        timing method)."""
        if self.loop is None or not self.loop.checked:
            return {"checked": False}, []
        header, payloads = self._handed_over(self.loop.output, self.loop_digest, bool(msg.get("ipc")))
        return {"checked": True, **header}, payloads

    def finish(self, msg: dict[str, Any]) -> dict[str, Any]:
        from runner.child import guard, setup

        warm = self.cpu_warm_s if self.cpu_warm_s is not None else process.cpu_seconds()
        return {"capabilities": self.capabilities,
                "flags": setup.runtime_flags(self.steps.device if self.steps else "")
                + [f"refused: {what}" for what in dict.fromkeys(guard.refused())]
                + ([WARM_UP_FAILED_FLAG] if self.warm_up_failure else []),
                "cpu_s": {"candidate_warm": warm, "candidate_job": round(process.cpu_seconds() - warm, 3)}}


def serve(stream_in: Any, stream_out: Any, capabilities: str = "", warm_up_failure: str | None = None) -> None:
    from runner.gpu.gate import ChildGate, install

    gate = ChildGate(lambda obj: send(stream_out, obj), stream_in, drain=process.synchronize)
    install(gate)  # Triton's compiles give the judge's gate back through the judge (`CandidateProcess.answer`)
    candidate = Candidate(capabilities, warm_up_failure)
    while True:
        msg = receive(stream_in)
        cmd = msg.get("cmd")
        handler = getattr(candidate, str(cmd), None) if cmd in COMMANDS else None
        candidate.kept = []  # the judge has copied what it was handed
        if handler is None:
            send(stream_out, {"ok": False, "failure": {"error_type": "runtime_error", "message": f"unknown command {cmd!r}"}})
            continue
        try:
            with gate.held_by_another(msg.get("held")):
                answer = handler(msg)
        except Stop as stop:
            v = stop.verdict
            send(stream_out, {"ok": False, "failure": {"error_type": v.error_type, "message": v.message,
                                                       "exception": v.exception, "traceback": v.traceback}})
            continue
        except Exception as exc:  # the harness's own failure here
            send(stream_out, {"ok": False, "failure": {"error_type": "runtime_error", "message":
                                                       f"candidate harness error: {type(exc).__name__}: {exc}",
                                                       "exception": type(exc).__name__, "harness": True}})
            continue
        header, payloads = answer if isinstance(answer, tuple) else (answer, [])
        send(stream_out, {"ok": True, **header}, payloads)
        if cmd == "finish":
            return


COMMANDS = ("ready", "load", "build", "compile_pass", "forward", "launches", "time", "recheck", "loop_check", "finish")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="runner.child.candidate")
    parser.add_argument("--fd", type=int, required=True, help="this end of the judge's socket pair")
    parser.add_argument("--parent-pid", type=int, required=True)
    parser.add_argument("--gpu-lock-fds", type=process.parse_fds, default=[], help="the GPU's host lock (main, intent)")
    args = parser.parse_args(argv)
    if not process.die_with_parent(args.parent_pid):
        return 5
    capabilities = separation.drop_capabilities()  # before anything of the program runs
    faulthandler.enable()  # a crash leaves the Python stack on stderr, whose tail the sandbox keeps
    faulthandler.register(STACKS_SIGNAL, all_threads=True)
    warm_up_failure = process.prewarm(triton_kernel=True, lock_fds=args.gpu_lock_fds)
    if warm_up_failure:
        print(f"[candidate] the harness's warm-up failed: {warm_up_failure}", file=sys.stderr, flush=True)
    sock = socket.socket(fileno=args.fd)
    stream_in, stream_out = sock.makefile("rb"), sock.makefile("wb")
    set_seed(0)
    try:
        serve(stream_in, stream_out, capabilities, warm_up_failure)
    except (OSError, ValueError, LinkError):
        return 3
    return 0


if __name__ == "__main__":
    process.exit_now(main())
