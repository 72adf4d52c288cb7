"""CPU and wall seconds of each step a job's process warms up (`runner.child.warmup`), in a fresh process each
run: what two processes per job cost the host before the job starts (issue 22: the judge's and the candidate's
warm-up were two thirds of the 21.9 host CPU-s per run on an H200).

    python scripts/bench_warmup.py [--runs 3]      # on a GPU machine; prints one JSON line per run, then medians
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys

STEPS = r"""
import json, os, resource, sys, time
def cpu():
    s, c = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return s.ru_utime + s.ru_stime + c.ru_utime + c.ru_stime
out, t, c = {}, time.perf_counter(), cpu()
def mark(name):
    global t, c
    now, now_c = time.perf_counter(), cpu()
    out[name] = [round(now_c - c, 3), round(now - t, 3)]
    t, c = now, now_c
import torch; mark("import torch")
torch.cuda.init(); x = torch.ones(64, 64, device="cuda"); torch.cuda.synchronize(); mark("CUDA context")
(x @ x).sum().item(); mark("cuBLAS matmul")
torch.nn.functional.conv2d(x.view(1, 1, 64, 64), torch.ones(1, 1, 3, 3, device="cuda")).sum().item(); mark("cuDNN conv")
import triton; mark("import triton")
sys.path.insert(0, os.getcwd())
from runner.child.warmup import _add_one
_add_one()[(1,)](x, x.numel(), BLOCK=128); torch.cuda.synchronize(); mark("Triton first kernel")
print(json.dumps(out))
"""


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args()
    import os
    import tempfile

    runs = []
    for _ in range(args.runs):
        with tempfile.TemporaryDirectory() as cache:  # a cold Triton cache, as a job's own
            env = {**os.environ, "TRITON_CACHE_DIR": cache, "TRITON_HOME": cache}
            line = subprocess.run([sys.executable, "-c", STEPS], capture_output=True, text=True, env=env,
                                  check=True).stdout.strip().splitlines()[-1]
        runs.append(json.loads(line))
        print(line, flush=True)
    medians = {k: [statistics.median(r[k][i] for r in runs) for i in (0, 1)] for k in runs[0]}
    print(json.dumps({"median_cpu_s_wall_s": medians,
                      "total_cpu_s": round(sum(v[0] for v in medians.values()), 2)}, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
