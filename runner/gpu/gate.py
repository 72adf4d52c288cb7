"""The GPU gate: several jobs share one GPU through their CPU-bound stages; the timing stage has it alone.

Parent side, `GpuGate` (one per GPU, `gate_for(visible_devices)`): a readers-writer lock that prefers writers.
A job's harness holds it *shared* around each step that may use the GPU (building models, making inputs, forward
calls, comparing outputs) and *exclusive* for its timing stage (and for the first ModelNew call of a program
that autotunes: `runner.child.autotune`), so two timing stages never overlap on one GPU and no other job's harness work
runs beside one. Waiting for the gate does not count against a job's timeout. The gate holds across the
host's runner processes too (a service beside a bulk run): `runner.gpu.host_lock`.
`GpuGate.report()` gives how long the GPU was held (shared or exclusive: "busy") and timed (exclusive).

Child side, `ChildGate`: the child asks its parent over the result channel (`{"event": "gate", "mode":
"shared"|"exclusive"|"release"}`) and waits for a `go` line on its spec pipe, which stays open for that. The
parent (`runner.sandbox.run`) acquires the job's `GpuGate` for it, and releases whatever the job still holds when it
ends. A program can reach the child's gate too (the audit hook does not stop it): at worst it holds the GPU until
its own timeout kills it. Without a gate (`NO_GATE`: CPU jobs, one-off `runner eval`) the context managers do
nothing."""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Callable, Iterator
from typing import Any, BinaryIO

from runner.gpu.host_lock import HostLock, host_lock_for
from runner.protocol import EVENT, EXCLUSIVE, GATE, GO, RELEASE, SHARED

WAITING_FOR_GPU = "waiting for the GPU"  # a stage's name for a wait for the gate (results' phases_s)
WAIT_POLL_S = 0.1
PAUSE_GRACE_S = 0.05  # CPU work inside a held gate shorter than this keeps it (`ChildGate.paused`)


class GpuGate:
    """Writer-preferring readers-writer lock for one GPU, with occupancy figures; with a `host` lock
    (`runner.gpu.host_lock`), held across the host's runner processes too."""

    def __init__(self, name: str = "", host: HostLock | None = None) -> None:
        self.name = name
        self.host = host
        self._cond = threading.Condition()
        self._readers = 0
        self._writer = False
        self._writers_waiting = 0
        self._host_pending = False  # the first reader is taking the host lock: the others wait for it
        self._created = time.monotonic()
        self._busy_since: float | None = None
        self._busy_s = 0.0
        self._exclusive_since: float | None = None
        self._exclusive_s = 0.0
        self.exclusive_count = 0

    def _wait(self, blocked: Callable[[], bool], abort: threading.Event | None) -> bool:
        while blocked():
            if abort is not None and abort.is_set():
                return False
            self._cond.wait(WAIT_POLL_S)
        return True

    def acquire(self, mode: str, abort: threading.Event | None = None) -> bool:
        """Block until held in `mode`; False (not held) if `abort` is set first."""
        if self.host is None:
            return self._acquire(mode, abort)
        self.host.claim(True)
        try:
            return self._acquire(mode, abort)
        finally:
            self.host.claim(False)

    def claim(self, on: bool) -> None:
        """A job starts (`on`) or ends its claim on the GPU, from its first request for the gate to its end: in a
        priority process (the service), the host's other processes start no new step meanwhile, so that a re-run
        waits for their steps in flight once rather than before each of its own steps."""
        if self.host is not None:
            self.host.claim(on)

    def _foreign_first(self) -> bool:
        """This process holds the host lock shared, but another process's waiting job goes first
        (`HostLock.defer_reader`)."""
        return self._readers > 0 and self.host is not None and self.host.defer_reader()

    def _acquire(self, mode: str, abort: threading.Event | None) -> bool:
        with self._cond:
            if mode == EXCLUSIVE:
                self._writers_waiting += 1
                try:
                    if not self._wait(lambda: self._writer or self._readers, abort):
                        return False
                finally:
                    self._writers_waiting -= 1
                self._writer = True
                to_host = self.host is not None
            elif mode == SHARED:
                if not self._wait(lambda: self._writer or self._writers_waiting or self._host_pending
                                  or self._foreign_first(), abort):
                    return False
                self._readers += 1
                to_host = self._host_pending = self._readers == 1 and self.host is not None
            else:
                raise ValueError(f"gate mode must be {SHARED!r} or {EXCLUSIVE!r}, not {mode!r}")
        if to_host and not self._take_host(mode, abort):
            return False
        with self._cond:
            now = time.monotonic()
            if mode == EXCLUSIVE:
                self.exclusive_count += 1
                self._exclusive_since = now
            if self._busy_since is None:
                self._busy_since = now
        return True

    def _take_host(self, mode: str, abort: threading.Event | None) -> bool:
        """This process's transition into `mode` on the host lock (outside the condition: it may wait long)."""
        got = self.host.acquire_exclusive(abort) if mode == EXCLUSIVE else self.host.acquire_shared(abort)
        with self._cond:
            self._host_pending = False
            if not got:
                if mode == EXCLUSIVE:
                    self._writer = False
                else:
                    self._readers -= 1
            self._cond.notify_all()
        return got

    def release(self, mode: str) -> None:
        with self._cond:
            now = time.monotonic()
            if mode == EXCLUSIVE:
                self._writer = False
                self._exclusive_s += now - (self._exclusive_since or now)
                self._exclusive_since = None
            else:
                self._readers -= 1
            if not self._writer and not self._readers:
                if self.host is not None:
                    self.host.release()
                if self._busy_since is not None:
                    self._busy_s += now - self._busy_since
                    self._busy_since = None
            self._cond.notify_all()

    @contextlib.contextmanager
    def held(self, mode: str) -> Iterator[None]:
        self.acquire(mode)
        try:
            yield
        finally:
            self.release(mode)

    def report(self) -> dict[str, Any]:
        """Seconds since the gate was made, seconds held (busy), seconds timing, and their fractions."""
        with self._cond:
            now = time.monotonic()
            wall = max(now - self._created, 1e-9)
            busy = self._busy_s + (now - self._busy_since if self._busy_since is not None else 0.0)
            timed = self._exclusive_s + (now - self._exclusive_since if self._exclusive_since is not None else 0.0)
            return {"wall_s": round(wall, 3), "busy_s": round(busy, 3), "timing_s": round(timed, 3),
                    "busy_fraction": round(busy / wall, 4), "timing_fraction": round(timed / wall, 4),
                    "timing_stages": self.exclusive_count}


_gates: dict[str, GpuGate] = {}
_occupancy: dict[str, GpuGate] = {}
_gates_lock = threading.Lock()


def gate_for(gpu: str) -> GpuGate:
    """The process's one gate for a GPU (keyed by its CUDA_VISIBLE_DEVICES value), held across the host's runner
    processes through that GPU's host lock."""
    with _gates_lock:
        if gpu not in _gates:
            _gates[gpu] = GpuGate(gpu, host_lock_for(gpu))
        return _gates[gpu]


def occupancy_for(gpu: str) -> GpuGate:
    """The process's lock on a GPU's jobs as a whole (not their steps): every job holds it shared while it runs;
    a job that must have the GPU to itself (`runner.gpu.oom_rerun`: out of memory beside other jobs) holds it
    exclusive, so that it starts once the others have ended and before any new one."""
    with _gates_lock:
        return _occupancy.setdefault(gpu, GpuGate(f"{gpu} jobs"))


def gates_report() -> dict[str, dict[str, Any]]:
    with _gates_lock:
        gates = dict(_gates)
    return {name: gate.report() for name, gate in sorted(gates.items())}


class ChildGate:
    """The child's end of its job's gate (see the module docstring). Re-entrant: a step inside a held gate does
    not ask again."""

    def __init__(self, send: Callable[[dict[str, Any]], None] | None, control: BinaryIO | None,
                 drain: Callable[[], None] = lambda: None) -> None:
        self._send, self._control = send, control
        self._drain = drain  # waits for the job's queued GPU work (torch.cuda.synchronize) before a release
        self._held: str | None = None
        self._pausing = False

    def _release(self) -> None:
        """Give the gate back once the GPU has finished what this job queued under it (kernels run
        asynchronously: without the wait they would run beside the next holder's timing)."""
        try:
            self._drain()
        finally:
            self._send_release()

    def _send_release(self) -> None:
        self._send({EVENT: GATE, "mode": RELEASE})

    @contextlib.contextmanager
    def _hold(self, mode: str) -> Iterator[None]:
        if self._send is None or self._control is None or self._held is not None:
            yield
            return
        self._ask(mode)
        self._held = mode
        try:
            yield
        finally:
            self._held = None
            self._release()

    def _ask(self, mode: str) -> None:
        self._send({EVENT: GATE, "mode": mode})
        if self._control.readline().strip() != GO:
            raise RuntimeError("the runner closed this job's GPU gate")

    @contextlib.contextmanager
    def paused(self, grace_s: float = PAUSE_GRACE_S) -> Iterator[None]:
        """Give a held gate back for CPU-only work (Triton compiling a kernel) that lasts over `grace_s`, and take
        it again after. Work that ends sooner (a compile found in Triton's cache) keeps the gate: giving it back
        and asking again would wait behind every waiting timing stage (a warm re-run beside a bulk pass spent 3 s
        so). The job's queued GPU work is waited for on entry; the gate is given back from a timer thread; a pause
        inside a pause does nothing."""
        held = self._held
        if held is None or self._pausing:
            yield
            return
        self._pausing = True
        self._drain()  # here, on the job's thread and device: nothing is queued after it until the pause ends
        late = _LateRelease(self._send_release)
        timer = threading.Timer(grace_s, late.fire)
        timer.daemon = True
        timer.start()
        try:
            yield
        finally:
            timer.cancel()
            released = late.close()
            self._pausing = False
            if released:
                self._held = None
                self._ask(held)
                self._held = held

    @property
    def held_mode(self) -> str | None:
        return self._held

    def give_back(self) -> str | None:
        """For a relay: give a held gate back (as `paused` does on entry); returns the mode it was held in."""
        held = self._held
        if held is not None:
            self._release()
            self._held = None
        return held

    def take_again(self, mode: str) -> None:
        """For a relay: take the gate again in `mode` after `give_back` (as `paused` does on leaving)."""
        if self._send is not None and self._control is not None and self._held is None:
            self._ask(mode)
            self._held = mode

    @contextlib.contextmanager
    def held_by_another(self, mode: str | None) -> Iterator[None]:
        """A relay's other end: behave as holding the gate in `mode` (taken by the judge) while the block runs, so
        that `paused` gives it back through the relay."""
        self._held = mode
        try:
            yield
        finally:
            self._held = None

    def hold(self, mode: str) -> contextlib.AbstractContextManager[None]:
        """Hold the gate in `mode` (SHARED or EXCLUSIVE) for a step; inside a held gate, nothing is asked."""
        return self._hold(mode)

    def shared(self) -> contextlib.AbstractContextManager[None]:
        return self._hold(SHARED)

    def exclusive(self) -> contextlib.AbstractContextManager[None]:
        return self._hold(EXCLUSIVE)


class _LateRelease:
    """A release that a timer may fire once, unless the pause has closed first; `close` says whether it fired."""

    def __init__(self, release: Callable[[], None]) -> None:
        self._release, self._lock = release, threading.Lock()
        self._fired = self._closed = False

    def fire(self) -> None:
        with self._lock:
            if not self._closed:
                self._fired = True
                self._release()

    def close(self) -> bool:
        with self._lock:
            self._closed = True
            return self._fired


NO_GATE = ChildGate(None, None)
_current = NO_GATE


def install(gate: ChildGate) -> None:
    """Make `gate` this child's gate (`current()`)."""
    global _current
    _current = gate


def current() -> ChildGate:
    return _current


def install_triton_hooks() -> None:
    """Wrap Triton's compiler entry points so that compiling a kernel (CPU work, seconds for a big or autotuned
    one) runs outside the gate and never holds back another job's timing stage. Call in the child after importing
    triton, before the program is loaded; names a Triton version lacks are left alone. (Autotuning:
    `runner.child.autotune`.)"""
    import importlib

    for module_name in ("triton.compiler", "triton.compiler.compiler", "triton.runtime.jit"):
        try:
            module = importlib.import_module(module_name)
        except ImportError:
            continue
        real = getattr(module, "compile", None)
        if callable(real) and not getattr(real, "_tlx_wrapped", False):
            module.compile = _paused_while(real)


def _paused_while(real: Callable[..., Any]) -> Callable[..., Any]:
    def call(*args: Any, **kwargs: Any) -> Any:
        with current().paused():
            return real(*args, **kwargs)

    call._tlx_wrapped = True  # type: ignore[attr-defined]
    return call
