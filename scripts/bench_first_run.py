"""Server-side cost of a fresh explorer process's first page: the first script run of app.py (the overview) in a
new Python process, timed with Streamlit's AppTest, with or without `scripts/serve_app.py`'s preload (imports
and the store opened before the first session). The browser's share (bundle download, drawing) is in
`scripts/bench_pages.py`.

    python scripts/bench_first_run.py [--store DIR] [--repeats 3]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent

_CHILD = """
import sys, time
sys.path.insert(0, {repo!r}); sys.path.insert(0, {scripts!r})
preload_s = 0.0
if {preload}:
    import serve_app
    preload_s = serve_app.preload()
from streamlit.testing.v1 import AppTest
at = AppTest.from_file({app!r}, default_timeout=120)
started = time.perf_counter(); at.run(); first = time.perf_counter() - started
assert not at.exception, [e.value for e in at.exception]
started = time.perf_counter(); at.run(); second = time.perf_counter() - started
print(preload_s, first, second)
"""


def one(preload: bool, env: dict) -> tuple[float, float, float]:
    code = _CHILD.format(repo=str(REPO), scripts=str(REPO / "scripts"), app=str(REPO / "app.py"), preload=preload)
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True,
                         timeout=600).stdout.split()
    return float(out[0]), float(out[1]), float(out[2])


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--store")
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args(argv)
    env = dict(os.environ, TLX_READ_ONLY="1", TLX_RUNS_DIR=tempfile.mkdtemp(prefix="tlx-bench-runs-"))
    if args.store:
        env["TLX_STORE"] = args.store
    results: dict[str, list] = {"plain": [], "preload": []}
    for _ in range(args.repeats):
        for mode in results:
            results[mode].append(one(mode == "preload", env))
    summary = {}
    for mode, runs in results.items():
        summary[mode] = {"preload_s": round(statistics.median(r[0] for r in runs), 2),
                         "first_run_s": round(statistics.median(r[1] for r in runs), 2),
                         "second_run_s": round(statistics.median(r[2] for r in runs), 2),
                         "first_runs": [round(r[1], 2) for r in runs]}
        print(f"{mode:8s} first page run {summary[mode]['first_run_s']:.2f} s (median of {len(runs)}: "
              f"{summary[mode]['first_runs']}), next run {summary[mode]['second_run_s']:.2f} s, "
              f"preload before listening {summary[mode]['preload_s']:.2f} s")
    print(json.dumps(summary))
    return 0


if __name__ == "__main__":
    sys.exit(main())
