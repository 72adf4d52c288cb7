"""What the bounded load tests (`scripts/load_test.py` and its service and console targets) share: running the
clients beside a sampler of the process under load, and percentiles for the report."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Sequence


def run_clients(clients: Sequence[threading.Thread], sample: Callable[..., None], *sample_args: object) -> float:
    """Start every client, sample (`sample(*sample_args, stop)`, polling until `stop` is set) while they run, wait
    for all of them; returns the seconds they took."""
    stop = threading.Event()
    threading.Thread(target=sample, args=(*sample_args, stop), daemon=True).start()
    started = time.monotonic()
    for client in clients:
        client.start()
    for client in clients:
        client.join()
    elapsed = time.monotonic() - started
    stop.set()
    return elapsed


def percentile(values: list[float], q: float, scale: float = 1.0, digits: int = 2) -> float | None:
    """The q-quantile (nearest rank) of `values` times `scale`, rounded; None for no values."""
    if not values:
        return None
    ordered = sorted(values)
    return round(ordered[min(len(ordered) - 1, int(q * len(ordered)))] * scale, digits)
