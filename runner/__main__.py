"""`python -m runner eval|serve|submit|bulk|triage` (design §3b)."""

from __future__ import annotations

import argparse
import importlib
import json
import os
import sys
from pathlib import Path

from common.program_hash import program_sha256
from common.settings import load_settings
from common.terminal import inert
from runner.options import DEVICES, EvalOptions
from runner.result import RunResult
from runner.spec_args import add_spec_arguments, spec_fields

# subcommand -> module exposing add_arguments(parser) and main(args) -> int, imported only when used
LAZY = {"serve": "runner.service.app", "submit": "runner.service.client", "bulk": "runner.bulk.command",
        "triage": "runner.triage.command"}
HELP = {"serve": "run the local runner service", "submit": "send a job to the runner service",
        "bulk": "re-run many rows of a store", "triage": "why programs fail, without a GPU (CPU triage)"}


def summary(result: RunResult) -> str:
    lines = [f"{result.id}: {result.status}" + (f" ({result.error_type})" if result.error_type else "")]
    if result.message:
        lines.append(f"  {result.message}")
    lines.append(f"  correct trials {result.correct_trials}/{result.trials}"
                 + (f", max abs diff {result.max_abs_diff:.3g}" if result.max_abs_diff is not None else "")
                 + (f", max rel diff {result.max_rel_diff:.3g}" if result.max_rel_diff is not None else "")
                 + (f"; passes atol = rtol = {result.tolerance_passed:g}" if result.tolerance_passed else ""))
    method = result.method
    if method.get("profile"):
        lines.append(f"  profile {method['profile']} (atol {method.get('atol'):g}, rtol {method.get('rtol'):g}, "
                     f"TF32 {'allowed' if method.get('tf32') else 'off'}, inputs on {method.get('inputs_device')})")
    if result.timing and result.ref_timing:
        lines.append(f"  ModelNew {result.timing.median_ms:.4g} ms, Model {result.ref_timing.median_ms:.4g} ms, "
                     f"speedup {result.speedup:.3g}x")
    if result.flags:
        lines.append(f"  flags: {', '.join(result.flags)}")
    if result.traceback and result.status != "ok":
        lines.append("  " + result.traceback.strip().replace("\n", "\n  ")[-1500:])
    lines.append(f"  device {result.device}, {result.duration_s:.1f} s")
    return inert("\n".join(lines))  # a program's message and traceback: shown, never obeyed by the terminal


def add_eval_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("program", type=Path, help="a Python file holding Model, ModelNew, get_inputs, get_init_inputs")
    parser.add_argument("--device", choices=DEVICES, default="auto")
    add_spec_arguments(parser)
    parser.add_argument("--json", action="store_true", help="print the run result as JSON")


def eval_main(args: argparse.Namespace) -> int:
    try:
        program = args.program.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        print(f"error: cannot read {args.program}: {exc}", file=sys.stderr)
        return 2
    given = {k: v for k, v in spec_fields(args).items() if v is not None}
    placement = {**load_settings().job_placement(), "prewarm": False}  # one job: no spare for a next
    try:
        options = EvalOptions(device=args.device, **given, **placement)
    except ValueError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    from runner.sandbox.run import evaluate_in_sandbox

    result_id = "sha256:" + program_sha256(program)[:16]
    result = evaluate_in_sandbox(program, options, result_id=result_id)
    print(json.dumps(result.to_dict(), indent=2) if args.json else summary(result))
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m runner", description=__doc__)
    sub = parser.add_subparsers(dest="command", required=True)
    add_eval_arguments(sub.add_parser("eval", help="evaluate one program in the sandbox"))
    argv = sys.argv[1:] if argv is None else argv
    chosen = next((a for a in argv if not a.startswith("-")), None)
    for name, module in LAZY.items():
        p = sub.add_parser(name, help=HELP[name])
        if name == chosen:  # import only the module that will run
            importlib.import_module(module).add_arguments(p)
    args = parser.parse_args(argv)
    if args.command == "eval":
        return eval_main(args)
    return int(importlib.import_module(LAZY[args.command]).main(args))


def exit_now(code: int) -> None:
    """End the command without the interpreter's teardown of pyarrow, duckdb and friends (seconds on a loaded
    host, which a Ctrl-C'd bulk run would spend after its summary): everything it wrote is closed and fsync'd
    by then; streams are flushed and pre-warmed sandbox children killed here."""
    from runner.sandbox.spares import close_spares

    close_spares()
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):
            pass
    os._exit(code)


if __name__ == "__main__":
    exit_now(main())
