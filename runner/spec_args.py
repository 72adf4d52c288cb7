"""The run-settings options shared by `runner eval`, `submit` and `bulk`: --timeout, --trials, --profile, --atol,
--rtol, --inputs-on-cpu (`runner.spec.RunSpec`)."""

from __future__ import annotations

import argparse
from typing import Any

from runner import profiles
from runner.spec import RunSpec


def add_spec_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--timeout", type=float, default=None, help="per-run timeout in seconds")
    parser.add_argument("--trials", type=int, default=None, help="correctness trials per run")
    parser.add_argument("--profile", choices=profiles.NAMES, default=None,
                        help=f"evaluation profile (default {profiles.DEFAULT_PROFILE}: torch's backend flags, "
                             "atol = rtol = 1e-2; kernelbench-strict: fp32 1e-4, TF32 off)")
    parser.add_argument("--atol", type=float, default=None, help="custom absolute tolerance (profile 'custom')")
    parser.add_argument("--rtol", type=float, default=None, help="custom relative tolerance (profile 'custom')")
    parser.add_argument("--inputs-on-cpu", action="store_true",
                        help="create inputs and models on the CPU and move them (default: on the job's device)")


def spec_fields(args: argparse.Namespace) -> dict[str, Any]:
    """The settings given on the command line (None where not given; atol or rtol alone makes a custom profile,
    `runner.profiles.check`)."""
    return {"timeout_s": args.timeout, "trials": args.trials, "profile": args.profile, "atol": args.atol,
            "rtol": args.rtol, "inputs_device": "cpu" if args.inputs_on_cpu else None}


def spec_from_args(args: argparse.Namespace, device: str) -> RunSpec:
    """Raises ValueError for settings that do not go together (e.g. --profile kernelbench-strict --atol 1)."""
    return RunSpec.build(device, **spec_fields(args))
