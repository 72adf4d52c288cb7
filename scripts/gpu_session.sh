#!/usr/bin/env bash
# The runner's GPU figures of BENCHMARKS.md on real programs, in device calls of < 10 minutes each (every call
# may land on a fresh machine: cold Triton cache, no pyarrow, so rows travel as JSON lines). Prepare here:
#   python scripts/bench_runner.py export --corpus ../shared/data/realworld --rows 300 --seed 1 --out var/gpu/sel300.jsonl
#   python scripts/bench_runner.py export --corpus data/sample --rows 1000 --out var/gpu/sample.jsonl
# then on the device: scripts/gpu_session.sh 1|2|3 (results and summaries land in $OUT).
#   1: environment, GPU tests, rows 0-149 with 4 jobs per GPU
#   2: rows 150-299 with 4 jobs per GPU; 40 of them again one at a time (verdicts identical? timing agreement)
#   3: the correct rows of 1 and 2 again (run-to-run timing), a warm service's re-run latency, the sample relabelled
set -u
export PYTHONUNBUFFERED=1
OUTD=${OUT:-/tmp/tlx-out}; mkdir -p "$OUTD"
LOG="$OUTD/log_part${1:-x}.txt"
SEL=var/gpu/sel300.jsonl
BENCH=(python3 scripts/bench_runner.py)
step() { echo "== $(date -u +%T) $*" | tee -a "$LOG"; }
keep() { cp "$1/results.jsonl" "$OUTD/$2.jsonl"; cp "$1/summary.json" "$OUTD/$2.summary.json" 2>/dev/null; tail -30 "$1/summary.json" >>"$LOG"; }
case "${1:-}" in
1)
  nvidia-smi --query-gpu=index,name,driver_version,clocks.sm,clocks.mem --format=csv | tee -a "$LOG"
  python3 -c "import torch, triton, sys, os; print('python', sys.version.split()[0], 'torch', torch.__version__, 'triton', triton.__version__, 'cpus', os.cpu_count())" | tee -a "$LOG"
  step "GPU tests"
  timeout 170 python3 -m pytest -q -m gpu tests/test_runner_gpu.py tests/test_reliability_sandbox.py -p no:cacheprovider 2>&1 | tail -15 | tee -a "$LOG"
  step "rows 0-149, 4 jobs per GPU"
  timeout -s INT 400 "${BENCH[@]}" run --programs $SEL --rows 150 --jobs-per-gpu 4 --budget-s 330 --out /tmp/b1 2>&1 | tail -3 | tee -a "$LOG"
  keep /tmp/b1 overlap_a
  ;;
2)
  step "rows 150-299, 4 jobs per GPU"
  timeout -s INT 400 "${BENCH[@]}" run --programs $SEL --skip 150 --rows 150 --jobs-per-gpu 4 --budget-s 330 --out /tmp/b2 2>&1 | tail -3 | tee -a "$LOG"
  keep /tmp/b2 overlap_b
  step "40 rows one at a time"
  timeout -s INT 170 "${BENCH[@]}" run --programs var/gpu/alone40.jsonl --jobs-per-gpu 1 --budget-s 140 --out /tmp/b3 2>&1 | tail -3 | tee -a "$LOG"
  keep /tmp/b3 alone
  ;;
3)
  step "correct rows again, 4 jobs per GPU"
  timeout -s INT 230 "${BENCH[@]}" run --programs var/gpu/ok.jsonl --jobs-per-gpu 4 --budget-s 200 --out /tmp/b4 2>&1 | tail -3 | tee -a "$LOG"
  keep /tmp/b4 overlap_again
  step "warm service re-run latency"
  timeout 120 "${BENCH[@]}" latency --programs var/gpu/ok.jsonl --results /tmp/b4/results.jsonl --rows 4 --out /tmp/b5 2>&1 | tail -12 | tee -a "$LOG"
  step "sample, kernelbench profile"
  timeout -s INT 170 "${BENCH[@]}" run --programs var/gpu/sample.jsonl --jobs-per-gpu 4 --timeout 20 --budget-s 140 --out /tmp/b6 2>&1 | tail -3 | tee -a "$LOG"
  keep /tmp/b6 sample
  ;;
*) echo "usage: $0 1|2|3" >&2; exit 2 ;;
esac
step "end"
