#!/usr/bin/env bash
# The runner's GPU figures of BENCHMARKS.md on real programs, in device calls of < 10 minutes each (each may land on
# a fresh machine: cold Triton cache, no pyarrow, so rows travel as JSON lines). Prepare here:
#   python scripts/bench_runner.py export --corpus ../shared/data/realworld --rows 300 --seed 1 --out var/gpu/sel300.jsonl
#   python scripts/bench_runner.py export --corpus data/sample --rows 1000 --out var/gpu/sample.jsonl
#   var/gpu/ok.jsonl (the correct rows of an earlier pass) and var/gpu/alone.jsonl (20 rows, correct and failing)
# then on the device, with var carried: scripts/gpu_session.sh 1|2|3 (results and summaries land in $OUT).
#   1: environment, the 300 rows with 4 jobs per GPU (runs/min, GPU busy, verdicts)
#   2: GPU tests, the embedded sample's rows from SAMPLE_SKIP (default 70: rows 0-69 are in data/h200/) one job at
#      a time under the default profile (its labels: make_sample.py --labels)
#   3: the correct rows again with 4 jobs per GPU (run-to-run timing), 20 rows one at a time (verdicts as with
#      overlap?), a warm service's re-run latency
set -u
export PYTHONUNBUFFERED=1
OUTD=${OUT:-/tmp/tlx-out}; mkdir -p "$OUTD"
LOG="$OUTD/log_part${1:-x}.txt"
BENCH=(python3 scripts/bench_runner.py)
step() { echo "== $(date -u +%T) $*" | tee -a "$LOG"; }
keep() { cp "$1/results.jsonl" "$OUTD/$2.jsonl"; cp "$1/summary.json" "$OUTD/$2.summary.json" 2>/dev/null; }
case "${1:-}" in
1)
  nvidia-smi --query-gpu=index,name,driver_version,clocks.sm,clocks.mem --format=csv | tee -a "$LOG"
  python3 -c "import torch, triton, sys, os; print('python', sys.version.split()[0], 'torch', torch.__version__, 'triton', triton.__version__, 'cpus', os.cpu_count())" | tee -a "$LOG"
  step "300 rows, 4 jobs per GPU"
  timeout -s INT 575 "${BENCH[@]}" run --programs var/gpu/sel300.jsonl --jobs-per-gpu 4 --budget-s 540 --out /tmp/b1 2>&1 | tail -3 | tee -a "$LOG"
  keep /tmp/b1 overlap
  ;;
2)
  step "GPU tests"
  timeout 90 python3 -m pytest -q -m gpu tests/test_runner_gpu.py tests/test_reliability_sandbox.py -p no:cacheprovider 2>&1 | tail -8 | tee -a "$LOG"
  step "sample from row ${SAMPLE_SKIP:-70}, default profile, one job at a time"
  timeout -s INT 480 "${BENCH[@]}" run --programs var/gpu/sample.jsonl --skip "${SAMPLE_SKIP:-70}" --jobs-per-gpu 1 --timeout 60 --budget-s 450 --out /tmp/b2 2>&1 | tail -3 | tee -a "$LOG"
  keep /tmp/b2 sample
  ;;
3)
  step "correct rows again, 4 jobs per GPU"
  timeout -s INT 200 "${BENCH[@]}" run --programs var/gpu/ok.jsonl --jobs-per-gpu 4 --budget-s 170 --out /tmp/b3 2>&1 | tail -3 | tee -a "$LOG"
  keep /tmp/b3 overlap_again
  step "20 rows one at a time"
  timeout -s INT 170 "${BENCH[@]}" run --programs var/gpu/alone.jsonl --jobs-per-gpu 1 --budget-s 140 --out /tmp/b4 2>&1 | tail -3 | tee -a "$LOG"
  keep /tmp/b4 alone
  step "warm service re-run latency"
  timeout 70 "${BENCH[@]}" latency --programs var/gpu/ok.jsonl --results /tmp/b3/results.jsonl --rows 3 --out /tmp/b5 2>&1 | tail -12 | tee -a "$LOG"
  ;;
*) echo "usage: $0 1|2|3" >&2; exit 2 ;;
esac
step "end"
