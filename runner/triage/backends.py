"""Where a triage run's programs go: `LocalTriage` (warm workers on this host, `runner.triage.pool`) or
`RayTriage` (chunks of programs as `ray.remote` tasks, each with a pool of its own on the node that runs it).

Both take an iterator of `(row id, program)` and call `on_result(row_id, program, result)` as answers arrive.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from concurrent.futures import FIRST_COMPLETED, ThreadPoolExecutor, wait
from typing import Any

from runner.sandbox.isolation import REPO_ROOT
from runner.triage.pool import INFRASTRUCTURE, TriagePool, TriageSettings

Item = tuple[str, str]
OnResult = Callable[[str, str, dict], None]
RAY_CHUNK = 32


class LocalTriage:
    name = "local"

    def __init__(self, workers: int, settings: TriageSettings):
        self.capacity = workers
        self.pool = TriagePool(workers, settings)

    def run(self, items: Iterator[Item], on_result: OnResult) -> None:
        with ThreadPoolExecutor(self.capacity, thread_name_prefix="tlx-triage") as threads:
            running: dict[Any, Item] = {}
            for item in items:
                running[threads.submit(self.pool.triage, item[1])] = item
                if len(running) >= 2 * self.capacity:
                    self._collect(running, on_result, FIRST_COMPLETED)
            self._collect(running, on_result, None)

    @staticmethod
    def _collect(running: dict, on_result: OnResult, when) -> None:
        done, _ = wait(list(running), return_when=when) if when else (list(running), None)
        for future in done:
            row_id, program = running.pop(future)
            on_result(row_id, program, future.result())

    def close(self) -> None:
        self.pool.close()


def _ray_chunk(programs: list[str], settings: TriageSettings, workers: int) -> list[dict]:
    with TriagePool(workers, settings) as pool, ThreadPoolExecutor(workers) as threads:
        return list(threads.map(pool.triage, programs))


class RayTriage:
    """Chunks of `RAY_CHUNK` programs as Ray tasks of `workers` CPUs each; `runner` and `common` are shipped to
    the nodes through `runtime_env.py_modules` (they need torch and triton installed)."""

    name = "ray"

    def __init__(self, address: str | None, num_cpus: int | None, workers: int, settings: TriageSettings):
        try:
            import ray
        except ImportError:
            raise RuntimeError("--backend ray needs Ray: pip install 'ray>=2.30' (or use --backend local)") from None
        self.ray, self.settings, self.workers = ray, settings, workers
        runtime_env = {"py_modules": [str(REPO_ROOT / "common"), str(REPO_ROOT / "runner")]}
        if address:
            ray.init(address=address, runtime_env=runtime_env, logging_level="WARNING", log_to_driver=False)
        else:
            ray.init(num_cpus=num_cpus, include_dashboard=False, runtime_env=runtime_env, logging_level="WARNING",
                     log_to_driver=False)
        self.capacity = max(1, int(ray.cluster_resources().get("CPU", 1)) // workers)
        self._remote = ray.remote(max_retries=0, num_cpus=workers)(_ray_chunk)

    def run(self, items: Iterator[Item], on_result: OnResult) -> None:
        ray, in_flight, exhausted = self.ray, {}, False
        while True:
            while not exhausted and len(in_flight) < 2 * self.capacity:
                chunk = [item for _, item in zip(range(RAY_CHUNK), items, strict=False)]
                exhausted = len(chunk) < RAY_CHUNK
                if chunk:
                    in_flight[self._remote.remote([p for _, p in chunk], self.settings, self.workers)] = chunk
            if not in_flight:
                return
            ready, _ = ray.wait(list(in_flight), num_returns=1, timeout=1.0)
            for ref in ready:
                chunk = in_flight.pop(ref)
                started = time.monotonic()
                try:
                    results = ray.get(ref)
                except Exception as e:  # noqa: BLE001 - the node or task died: an infrastructure failure
                    results = [{"triage_status": "not_triaged", "error_type": None, "stage": None,
                                "reason": f"ray task failed: {type(e).__name__}: {e}"[:2000],
                                "flags": [INFRASTRUCTURE], "duration_s": time.monotonic() - started}] * len(chunk)
                for (row_id, program), result in zip(chunk, results, strict=True):
                    on_result(row_id, program, result)

    def close(self) -> None:
        self.ray.shutdown()
