"""scripts/bench_runner.py's ceilings: the runs/min the GPU gates allow were their holds packed back to back."""

from __future__ import annotations

from scripts.bench_runner import gate_ceiling


def test_the_gate_ceiling_is_the_rows_over_the_time_the_gates_were_held():
    # stop 32's pass: 182 rows, the gate held 287 s of 388 -> 38.0 runs/min were the holds back to back
    assert gate_ceiling(182, {"0": {"busy_s": 287.1}}) == 38.0
    # two GPUs, each held 100 s, 200 rows spread over them: 60 runs/min each
    assert gate_ceiling(200, {"0": {"busy_s": 100.0}, "1": {"busy_s": 100.0}}) == 120.0
    assert gate_ceiling(0, {"0": {"busy_s": 1.0}}) is None and gate_ceiling(5, {}) is None
