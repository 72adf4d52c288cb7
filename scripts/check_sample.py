"""Dev tool: run every sample program under the Triton CPU interpreter and check it behaves as labelled.

Each program runs in its own subprocess with ``TRITON_INTERPRET=1``: import from a temp file, build ``Model``
and ``ModelNew`` from ``get_init_inputs()`` (same seed, reference state loaded into the candidate), run both on
``get_inputs()`` and compare. Expected outcomes per kind: passing kinds match within 1e-4; ``wrong_output``
differs even at 1e-2; ``compile_error`` fails inside a Triton kernel; ``runtime_error`` fails in Python outside
Triton; ``syntax_error`` fails to parse; ``hang`` is still running at the hang timeout. Programs that hard-code
``device="cuda"`` are checked with ``device="cpu"``. Multi-config ``@triton.autotune`` needs a benchmarker the
CPU interpreter lacks, so the child replaces it with a single call per config.

This is not the project's runner (that is ``runner/``); it only validates the generated sample.

Usage: python scripts/check_sample.py [--jobs 2] [--problem 1_1] [--hang-timeout 8]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
import traceback
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

EXPECTED = {"fast": "pass", "slow": "pass", "dup_whitespace": "pass", "dup_comments": "pass",
            "no_triton": "pass", "wrong_output": "wrong", "compile_error": "compile_error",
            "runtime_error": "runtime_error", "syntax_error": "syntax_error", "hang": "timeout"}


def _child(program_path: str, result_path: str) -> None:
    """Evaluate one program in this (fresh) process and write a JSON verdict to ``result_path``."""
    import importlib.util

    import torch
    from triton.runtime import autotuner

    def bench_once(kernel_call, quantiles=None):
        kernel_call()
        return [0.0, 0.0, 0.0]

    autotuner.Autotuner.do_bench = property(lambda self: bench_once)
    verdict: dict = {}
    try:
        source = Path(program_path).read_text()
        try:
            compile(source, program_path, "exec")
        except SyntaxError as exc:
            verdict = {"outcome": "syntax_error", "detail": str(exc)}
            return
        spec = importlib.util.spec_from_file_location("sample_program", program_path)
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        torch.manual_seed(0)
        init = module.get_init_inputs()
        torch.manual_seed(1)
        ref = module.Model(*init)
        torch.manual_seed(1)
        new = module.ModelNew(*init)
        new.load_state_dict(ref.state_dict(), strict=False)
        torch.manual_seed(2)
        inputs = module.get_inputs()
        with torch.no_grad():
            expected = ref(*inputs)
            try:
                got = new(*[t.clone() if isinstance(t, torch.Tensor) else t for t in inputs])
            except Exception as exc:  # classify where the failure happened
                frames = traceback.extract_tb(exc.__traceback__)
                in_triton = any("triton/runtime/interpreter.py" in f.filename or "triton/language" in f.filename
                                for f in frames) or type(exc).__name__ == "CompilationError"
                verdict = {"outcome": "compile_error" if in_triton else "runtime_error",
                           "detail": f"{type(exc).__name__}: {str(exc)[:200]}"}
                return
        if got.shape != expected.shape:
            verdict = {"outcome": "wrong", "detail": f"shape {tuple(got.shape)} != {tuple(expected.shape)}"}
        elif torch.allclose(got, expected, atol=1e-4, rtol=1e-4):
            verdict = {"outcome": "pass", "detail": ""}
        else:
            loose = torch.allclose(got, expected, atol=1e-2, rtol=1e-2)
            diff = (got - expected).abs().max().item()
            verdict = {"outcome": "wrong" if not loose else "wrong_only_tight", "detail": f"max diff {diff:.3g}"}
    except Exception as exc:
        verdict = {"outcome": "import_error", "detail": f"{type(exc).__name__}: {str(exc)[:200]}"}
    finally:
        Path(result_path).write_text(json.dumps(verdict))


def check_one(row, workdir: Path, hang_timeout: float, timeout: float) -> dict:
    """Run ``row``'s program in a subprocess; return its id, kind, outcome, expectation and duration."""
    program = row.candidate.program.replace('device="cuda"', 'device="cpu"')
    stem = workdir / row.id.replace("/", "_")
    program_path, result_path = stem.with_suffix(".py"), stem.with_suffix(".json")
    program_path.write_text(program)
    env = dict(os.environ, TRITON_INTERPRET="1", PYTHONDONTWRITEBYTECODE="1")
    limit = hang_timeout if row.candidate.kind == "hang" else timeout
    start = time.monotonic()
    try:
        subprocess.run([sys.executable, __file__, "--child", str(program_path), str(result_path)], env=env,
                       timeout=limit, capture_output=True, check=False)
        verdict = json.loads(result_path.read_text()) if result_path.exists() else {
            "outcome": "crashed", "detail": "no verdict written"}
    except subprocess.TimeoutExpired:
        verdict = {"outcome": "timeout", "detail": f"> {limit:g} s"}
    expected = EXPECTED[row.candidate.kind]
    return {"id": row.id, "problem": row.candidate.problem.problem_id, "kind": row.candidate.kind,
            "expected": expected, **verdict, "ok": verdict["outcome"] == expected,
            "seconds": round(time.monotonic() - start, 2)}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--problem", help="check only this problem id, e.g. 1_13")
    parser.add_argument("--hang-timeout", type=float, default=8.0)
    parser.add_argument("--timeout", type=float, default=120.0)
    parser.add_argument("--child", nargs=2, metavar=("PROGRAM", "RESULT"), help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child:
        _child(*args.child)
        return 0
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from make_sample import build_rows

    rows = [r for r in build_rows() if args.problem in (None, r.candidate.problem.problem_id)]
    start = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="check_sample_") as tmp, ThreadPoolExecutor(args.jobs) as pool:
        results = list(pool.map(lambda r: check_one(r, Path(tmp), args.hang_timeout, args.timeout), rows))
    for res in results:
        if not res["ok"]:
            print(f"MISMATCH {res['id']} problem {res['problem']} kind {res['kind']}: expected "
                  f"{res['expected']}, got {res['outcome']} ({res['detail']})")
    kinds = Counter(r["kind"] for r in results)
    good = Counter(r["kind"] for r in results if r["ok"])
    for kind in EXPECTED:
        print(f"{kind:15s} {good[kind]:3d}/{kinds[kind]:3d} as labelled")
    slowest = max(results, key=lambda r: r["seconds"], default=None)
    print(f"{len(results)} programs, {sum(r['ok'] for r in results)} as labelled, "
          f"{time.monotonic() - start:.0f} s wall with {args.jobs} jobs"
          + (f"; slowest {slowest['id']} ({slowest['kind']}) {slowest['seconds']} s" if slowest else ""))
    return 0 if all(r["ok"] for r in results) else 1


if __name__ == "__main__":
    raise SystemExit(main())
