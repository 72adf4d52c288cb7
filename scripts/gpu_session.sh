#!/usr/bin/env bash
# The runner's GPU figures of BENCHMARKS.md on real programs, in device calls of < 10 minutes each, made back
# to back so that the machine stays warm (state in /tmp/tlx-gpu; a fresh machine has a cold Triton cache and no
# pyarrow, so rows travel as JSON lines). Prepare here (python = the project's venv, PYTHONPATH=.):
#   B="python scripts/bench_runner.py"
#   $B export --corpus ../shared/data/realworld --rows 300 --seed 1 --out var/gpu/sel300.jsonl
#   $B export --corpus data/sample --rows 1000 --label present --exclude var/gpu/relabelled.jsonl --out var/gpu/sample_ok.jsonl
#   $B export --corpus data/sample --rows 1000 --label null --exclude var/gpu/relabelled.jsonl --out var/gpu/sample_null.jsonl
#   (var/gpu/relabelled.jsonl, if present: runs of sample rows already relabelled, left out)
# then on the device, with var carried: [JOBS=N] scripts/gpu_session.sh c|1|1b|2|3 (results, summaries in $OUT).
#   c: environment; the same 48 rows of the selection with 6, then 4 jobs per GPU (which JOBS to use)
#   1: environment; the 300 rows, shuffled, with JOBS jobs per GPU (runs/min, GPU busy, verdicts, where the time
#      went); one call holds ~270 of them at 30 runs/min: 1b, the next call, runs the rest
#   2: GPU tests; the embedded sample's rows not yet relabelled under the default profile: those with a label one
#      job at a time (their timings become labels), those labelled null (failures) with 4 jobs per GPU
#   3: GPU tests; 40 correct rows of part 1 again with JOBS jobs (run-to-run timing), 12 rows of part 1 one at a
#      time (verdicts as with overlap?), a warm service's re-run latency while a bulk pass shares the GPU
#   j: environment and the sandbox's view of the GPU and its isolation (carry .tools: scripts/fetch_bwrap.sh);
#      GPU tests (the cheat set and the isolation's included); the first ROWS (120)
#      rows of the shuffled selection with the default jobs per GPU (the separate judge, launches, recheck)
#   o: the same rows with the code before the separate judge (`git archive 963d784` unpacked in var/old)
set -u
export PYTHONUNBUFFERED=1
OUTD=${OUT:-/tmp/tlx-out}; mkdir -p "$OUTD"
ST=/tmp/tlx-gpu; mkdir -p "$ST"
LOG="$OUTD/log_part${1:-x}.txt"
BENCH=(python3 scripts/bench_runner.py)
step() { echo "== $(date -u +%T) $*" | tee -a "$LOG"; }
keep() { cp "$ST/$1/results.jsonl" "$OUTD/$2.jsonl"; cp "$ST/$1/summary.json" "$OUTD/$2.summary.json" 2>/dev/null; }
bench() { local secs=$1; shift; timeout -s INT "$secs" "${BENCH[@]}" "$@" 2>&1 | tail -4 | tee -a "$LOG"; }
sample() {  # $1: seconds for the labelled rows one at a time; $2: for the null rows with 4 jobs
  bench $(($1 + 40)) run --programs var/gpu/sample_ok.jsonl --exclude "$ST/s1/results.jsonl" --jobs-per-gpu 1 \
    --timeout 60 --budget-s "$1" --out "$ST/s${3:-1}"
  bench $(($2 + 70)) run --programs var/gpu/sample_null.jsonl --exclude "$ST/n1/results.jsonl" --jobs-per-gpu 4 \
    --timeout 60 --budget-s "$2" --out "$ST/n${3:-1}"
}
environment() {
  nvidia-smi --query-gpu=index,name,driver_version,clocks.sm,clocks.mem --format=csv | tee -a "$LOG"
  python3 -c "import torch, triton, sys, os; print('python', sys.version.split()[0], 'torch', torch.__version__, 'triton', triton.__version__, 'cpus', os.cpu_count())" | tee -a "$LOG"
}
gpu_tests() {
  step "GPU tests"
  timeout "${GPU_TESTS_S:-100}" python3 -m pytest -q -m gpu tests/test_runner_gpu.py tests/test_reliability_sandbox.py \
    ${GPU_TEST_FILES:-} -p no:cacheprovider 2>&1 | tail -25 | tee -a "$LOG"
}
JOBS=${JOBS:-6}  # jobs per GPU of parts 1, 1b and 3 (part c compares 6 and 4)
SHUFFLE=(--shuffle 1)  # the selection in a seeded random order: sorted by id, its heaviest (level 3) rows come last
case "${1:-}" in
c)  # calibration: the same 48 rows of the selection with 6, then 4 jobs per GPU
  environment
  for j in 6 4; do
    step "48 rows, $j jobs per GPU"
    bench 130 run --programs var/gpu/sel300.jsonl "${SHUFFLE[@]}" --rows 48 --jobs-per-gpu $j --budget-s 100 --out "$ST/c$j"
    keep c$j calib_jobs$j
  done
  ;;
1)
  environment
  step "300 rows, $JOBS jobs per GPU"
  bench 565 run --programs var/gpu/sel300.jsonl "${SHUFFLE[@]}" --jobs-per-gpu $JOBS --budget-s 515 --out "$ST/b1"
  keep b1 overlap
  ;;
1b)  # what part 1's budget left of the 300 rows, right after it (runs/min over 300 = rows / both elapsed_s)
  step "the rest of the 300 rows, $JOBS jobs per GPU"
  bench 565 run --programs var/gpu/sel300.jsonl "${SHUFFLE[@]}" --exclude "$ST/b1/results.jsonl" --jobs-per-gpu $JOBS \
    --budget-s 515 --out "$ST/b1b"
  keep b1b overlap_rest
  ;;
2)
  gpu_tests
  step "sample: labelled rows one at a time, null rows 4 jobs per GPU"
  sample 330 60
  keep s1 sample_ok; keep n1 sample_null
  ;;
3)
  P1=$ST/b1/results.jsonl; [ -f "$P1" ] || P1=var/gpu/overlap.jsonl
  "${BENCH[@]}" pick --programs var/gpu/sel300.jsonl --results "$P1" --correct --rows 40 --out "$ST/ok.jsonl"
  "${BENCH[@]}" pick --programs var/gpu/sel300.jsonl --results "$P1" --rows 12 --out "$ST/alone.jsonl"
  gpu_tests
  step "correct rows again, $JOBS jobs per GPU"
  bench 130 run --programs "$ST/ok.jsonl" --jobs-per-gpu $JOBS --budget-s 100 --out "$ST/b3"
  keep b3 overlap_again
  step "12 rows one at a time"
  bench 120 run --programs "$ST/alone.jsonl" --jobs-per-gpu 1 --budget-s 90 --out "$ST/b4"
  keep b4 alone
  step "warm service re-run latency, a bulk pass beside it"
  timeout "${LATENCY_S:-200}" "${BENCH[@]}" latency --programs "$ST/ok.jsonl" --results "$ST/b3/results.jsonl" --rows 3 \
    --beside var/gpu/sel300.jsonl --out "$ST/b5" 2>&1 | tail -24 | tee -a "$LOG"
  cp "$ST/b5/latency.json" "$OUTD/latency_beside.json" 2>/dev/null
  ;;
j)
  environment
  step "the sandbox's view of the GPU"
  { ls -l /dev/nvidia* | head -5; id nobody; python3 -c "import sys; print(sys.executable)"
    python3 -c "from runner.sandbox import isolation as i, cgroup as c; print(i.current().describe()); print('unshare:', i.detect('unshare').reason); print(c.find_hierarchy())"
  } 2>&1 | tee -a "$LOG"
  GPU_TESTS_S=${GPU_TESTS_S:-260} GPU_TEST_FILES="tests/test_cheats_gpu.py tests/test_isolation.py" gpu_tests
  step "${ROWS:-120} rows, default jobs per GPU"
  bench "${ROWS_S:-300}" run --programs var/gpu/sel300.jsonl "${SHUFFLE[@]}" --rows "${ROWS:-120}" \
    --budget-s "$((${ROWS_S:-300} - 40))" --out "$ST/j1"
  keep j1 judge
  ;;
o)
  step "${ROWS:-120} rows, default jobs per GPU, the code before the separate judge"
  (cd var/old && timeout -s INT "${ROWS_S:-300}" python3 scripts/bench_runner.py run --programs ../gpu/sel300.jsonl \
    "${SHUFFLE[@]}" --rows "${ROWS:-120}" --budget-s "$((${ROWS_S:-300} - 40))" --out "$ST/o1" 2>&1 | tail -4 | tee -a "$LOG")
  keep o1 before_judge
  ;;
*) echo "usage: [JOBS=N] $0 c|1|1b|2|3|j|o" >&2; exit 2 ;;
esac
step "end"
