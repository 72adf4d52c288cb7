"""Cheat programs (tests/cheat_programs/, written for this project after the public catalogues: KernelBench's
adversarial tests and static checker, kernelbot's cheat tests, robust-kbench) and honest controls, through the
real sandbox on the CPU (Triton interpreter): each cheat is caught by the check named in its file, and the
controls carry none of those flags. GPU-only checks (kernel GPU time, `faster_on_repeated_inputs`) are in
tests/test_cheats_gpu.py."""

from __future__ import annotations

import os
from concurrent.futures import ThreadPoolExecutor

import pytest

from runner.options import GIB, EvalOptions
from runner.sandbox.run import close_spares, evaluate_in_sandbox
from tests.programs import HERE, runner_program, whole_program

CHEATS = HERE / "cheat_programs"
HACK_FLAGS = {"no_triton_launch", "output_reused", "faster_on_repeated_inputs", "inputs_differ"}

# name: (status, error_type, flag that must be present or None)
EXPECTED = {
    "torch_fallback": ("ok", None, "no_triton_launch"),
    "try_except_fallback": ("ok", None, "no_triton_launch"),
    "calls_reference": ("ok", None, "no_triton_launch"),
    "global_inputs": ("ok", None, "no_triton_launch"),
    "pointer_cache": ("failed", "output_mismatch", "output_reused"),
    "patch_compare": ("failed", "output_mismatch", None),
    "caller_frames": ("failed", "output_mismatch", None),
    "value_cache": ("ok", None, "no_triton_launch"),  # the launch check replays trial 1's inputs: a cache hit
    "honest_with_views": ("ok", None, None),
    # issue 42: outputs compared as they are, the judge runs only the reference part
    "tensor_subclass_output": ("failed", "shape_mismatch", None),
    "argmax_off_by_one": ("failed", "output_mismatch", None),
    "complex_wrong_imag": ("failed", "output_mismatch", None),
    "late_inputs_decorated": ("failed", "reference_rejected", None),
    "patch_between": ("failed", "output_mismatch", None),
    "model_new_first": ("failed", "reference_rejected", None),
    "honest_transposed_reference": ("ok", None, None),
    "reads_judge_memory": ("ok", None, None),  # every /proc file of the judge and the runner refused
}


@pytest.fixture(scope="module")
def verdicts(tmp_path_factory):
    work = tmp_path_factory.mktemp("jobs")
    programs = {name: whole_program(CHEATS / f"{name}.py") for name in EXPECTED}
    programs["correct_add"] = runner_program("correct_add")
    opts = EvalOptions(device="cpu", timeout_s=60.0, trials=2, memory_limit_bytes=int(1.5 * GIB), work_root=str(work))

    def run(item):
        name, program = item
        return name, evaluate_in_sandbox(program, opts, result_id=name)

    try:
        with ThreadPoolExecutor(max_workers=2) as pool:
            return dict(pool.map(run, programs.items()))
    finally:
        close_spares()


def test_every_cheat_program_is_expected():
    assert sorted(p.stem for p in CHEATS.glob("*.py")) == sorted(EXPECTED)


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_cheat_is_caught(verdicts, name):
    status, error_type, flag = EXPECTED[name]
    r = verdicts[name]
    assert (r.status, r.error_type) == (status, error_type), (r.message, r.flags)
    if flag is not None:
        assert flag in r.flags, r.flags


@pytest.mark.parametrize("name", ["correct_add", "honest_with_views", "honest_transposed_reference"])
def test_honest_controls_carry_no_hack_flag(verdicts, name):
    r = verdicts[name]
    assert r.status == "ok" and not HACK_FLAGS & set(r.flags), (r.message, r.flags)
    assert r.launches["checked"] and r.launches["triton_launches"] >= 1


def test_the_failures_are_named(verdicts):
    assert "torch.Tensor subclass _Deferred" in verdicts["tensor_subclass_output"].message
    assert "does not define get_inputs before the candidate's part" in verdicts["late_inputs_decorated"].message
    assert "ModelNew before Model" in verdicts["model_new_first"].message or "before Model" in \
        verdicts["model_new_first"].message


def test_a_candidate_as_the_judges_user_says_so_and_holds_no_capabilities(verdicts):
    judge = verdicts["reads_judge_memory"].method["judge"]
    kept = judge["candidate_kept_from_judge"]
    assert kept["judge_non_dumpable"] is True
    same_user = "candidate_same_user" in verdicts["reads_judge_memory"].flags
    assert same_user == (judge["candidate_uid"] == os.geteuid())
    if same_user and os.geteuid() == 0:  # Python out of an unprivileged user's reach (here: under /root)
        assert kept["candidate_capabilities"] == "root without capabilities"


def test_the_launch_record_says_what_it_could_not_check_on_the_interpreter(verdicts):
    record = verdicts["correct_add"].launches
    assert record["method"] == "triton_launch_hook" and record["triton_share"] is None
    assert "not checked" in record["reason"]
    assert verdicts["torch_fallback"].launches["triton_launches"] == 0


def test_the_judge_runs_apart_from_the_candidate(verdicts):
    judge = verdicts["correct_add"].method["judge"]
    assert judge["separate_process"] is True and judge["candidate_user"]
