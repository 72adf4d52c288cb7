"""Model's timing reused across a bulk run's jobs: keyed by the exact reference text, settings and GPU
(`runner.gpu.reference_timings`); the GPU half is in tests/test_runner_gpu.py."""

from __future__ import annotations

from runner.gpu.reference_timings import REUSED_FLAG, ReferenceTimings, reference_key
from runner.result import RunResult, Timing
from tests.programs import runner_program

PROGRAM = runner_program("correct_add")


def _timed(result_id: str, flags: list[str], ref_ms: float | None = 2.0) -> RunResult:
    timing = Timing(median_ms=1.0, mean_ms=1.0, std_ms=0.0, min_ms=1.0, max_ms=1.0, n=100)
    ref = Timing(median_ms=ref_ms, mean_ms=ref_ms, std_ms=0.0, min_ms=ref_ms, max_ms=ref_ms, n=100) if ref_ms else None
    return RunResult.passed("correct", timing=timing, ref_timing=ref, speedup=2.0, flags=flags).completed(
        id=result_id, row_id=f"row-{result_id}", program_sha256="0" * 64, duration_s=1.0)


def test_the_key_is_the_reference_text_the_settings_and_the_gpu():
    cut = PROGRAM.index("class ModelNew")
    other_candidate = PROGRAM[:cut] + PROGRAM[cut:].replace("BLOCK", "BLOCK_SIZE")
    assert other_candidate != PROGRAM
    key = reference_key(PROGRAM, "opts", "0")
    assert key is not None and reference_key(other_candidate, "opts", "0") == key
    changed_reference = PROGRAM.replace("torch.randn(64), torch.randn(64)", "torch.randn(65), torch.randn(65)", 1)
    assert reference_key(changed_reference, "opts", "0") not in (None, key)
    assert reference_key(PROGRAM, "other opts", "0") != key and reference_key(PROGRAM, "opts", "1") != key
    assert reference_key("def broken(:\n", "opts", "0") is None  # no reference: nothing to reuse
    assert reference_key("(" * 100_000, "opts", "0") is None  # the parser's own limits are not the runner's failure


def test_only_a_measured_reference_timing_is_kept_and_the_first_stays():
    timings = ReferenceTimings()
    assert timings.lookup("k") is None and timings.lookup(None) is None
    timings.remember("k", _timed("a", [REUSED_FLAG]))
    timings.remember("k", _timed("b", [], ref_ms=None))
    assert timings.lookup("k") is None and len(timings) == 0  # a reused timing, or none, is not kept
    timings.remember("k", _timed("c", ["ref_launch_bound", "launch_bound"]))
    timings.remember("k", _timed("d", [], ref_ms=9.0))
    kept = timings.lookup("k")
    assert kept["timing"]["median_ms"] == 2.0 and kept["flags"] == ["launch_bound"]
    assert kept["from"]["result_id"] == "c" and kept["from"]["row_id"] == "row-c"
