#!/usr/bin/env bash
# Issue 43's GPU figures (the fork server), in three device calls of < 10 minutes each, made back to back.
# Prepare here (python = the project's venv): bubblewrap in var/tools/bubblewrap (scripts/fetch_bwrap.sh), the code
# before in var/before (`git archive <before-commit> | tar -x -C var/before`), and two selections of
# ../shared/data/realworld in var/gpu/ (scripts/bench_runner.py export): sel300.jsonl (300 rows, seed 1) and
# failheavy.jsonl (rows the CPU triage failed, and a few it passed: `python -m runner triage`), rw_all.jsonl (all
# rows: the bulk pass beside the re-runs). Then on the device, with var carried:
#   scripts/gpu_forkserver.sh A          # after: both selections, and warm/cold re-runs with nothing beside them
#   ROWS=N scripts/gpu_forkserver.sh B   # before: the first N rows of sel300 (as many as A ran), the failure-heavy ones
#   scripts/gpu_forkserver.sh C          # after: re-runs beside a bulk pass
#   scripts/gpu_forkserver.sh D          # after: run-to-run (correct rows again); one job at a time (verdicts)
#   ROWS=N JOBS=J scripts/gpu_forkserver.sh J   # after: the first N rows of sel300 and the failure-heavy ones, J jobs
# Each part leaves $OUT/partX.tgz (every results.jsonl, summary.json, latency.json) and $OUT/partX.log; parts C, D
# read part A's results from var/gpu/res/ (unpack partA.tgz there before sending it) unless A ran on the same
# machine (then from /tmp/tlx43).
set -u
export PYTHONUNBUFFERED=1 TLX_RUNNER_BWRAP=$PWD/var/tools/bubblewrap/usr/bin/bwrap
OUTD=${OUT:-/tmp/tlx-out}; mkdir -p "$OUTD"
ST=/tmp/tlx43; mkdir -p "$ST"
LOG="$OUTD/part$1.log"
B=(python3 scripts/bench_runner.py)
step() { echo "== $(date -u +%T) $*" | tee -a "$LOG"; }
pass() { OUT=$ST scripts/gpu_before_after.sh "$@" 2>&1 | tee -a "$LOG"; }  # -> $ST/WHICH-NAME
latency() {  # $1 name, $2 seconds, then latency's arguments
  local name=$1 secs=$2; shift 2
  step "latency $name"
  timeout -s INT "$secs" "${B[@]}" latency --programs var/gpu/sel300.jsonl "$@" --out "$ST/$name" 2>&1 | tee "$ST/$name.out" | tail -14 | tee -a "$LOG"
}
A_RES=/tmp/tlx43/after-sel300/results.jsonl; [ -f "$A_RES" ] || A_RES=var/gpu/res/after-sel300/results.jsonl
pack() { (cd "$ST" && find . -name results.jsonl -o -name summary.json -o -name latency.json -o -name "*.out" | grep -v triton-cache \
  | tar -czf "$OUTD/part$1.tgz" -T -); }
case "$1" in
A)
  nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader | tee -a "$LOG"
  python3 -c "import torch, triton, os; print('torch', torch.__version__, 'triton', triton.__version__, 'cpus', os.cpu_count())" | tee -a "$LOG"
  step "after: 300 rows"; pass var/gpu/sel300.jsonl 300 after 230
  step "after: failure-heavy"; pass var/gpu/failheavy.jsonl 100 after 80
  latency alone 150 --results "$ST/after-sel300/results.jsonl" --rows 10
  ;;
B)
  step "before: ${ROWS:-300} rows"; pass var/gpu/sel300.jsonl "${ROWS:-300}" before 330
  step "before: failure-heavy"; pass var/gpu/failheavy.jsonl 100 before 110
  ;;
C)
  latency beside 250 --results "$A_RES" --rows 10 --beside var/gpu/rw_all.jsonl --beside-warm 8
  ;;
D)
  step "run-to-run: the correct rows >= 50 us again"
  "${B[@]}" pick --programs var/gpu/sel300.jsonl --results "$A_RES" --correct --rows 30 --out "$ST/ok.jsonl" | tee -a "$LOG"
  timeout -s INT 110 "${B[@]}" run --programs "$ST/ok.jsonl" --budget-s 80 --out "$ST/again" 2>&1 | tail -3 | tee -a "$LOG"
  "${B[@]}" compare "$A_RES" "$ST/again/results.jsonl" | tee -a "$LOG"
  step "one job at a time: 20 rows of the 300"
  "${B[@]}" pick --programs var/gpu/sel300.jsonl --results "$A_RES" --rows 20 --out "$ST/one.jsonl" | tee -a "$LOG"
  timeout -s INT 100 "${B[@]}" run --programs "$ST/one.jsonl" --jobs-per-gpu 1 --budget-s 70 --out "$ST/one" 2>&1 | tail -3 | tee -a "$LOG"
  "${B[@]}" compare "$A_RES" "$ST/one/results.jsonl" | tee -a "$LOG"
  ;;
J)
  for sel in "sel300 ${ROWS:-300} 230" "failheavy 100 75"; do
    set -- $sel
    step "after, ${JOBS:-10} jobs per GPU: $1"
    timeout -s INT $(($3 + 50)) "${B[@]}" run --programs "var/gpu/$1.jsonl" --shuffle 1 --rows "$2" --budget-s "$3" \
      --timeout 60 --jobs-per-gpu "${JOBS:-10}" --out "$ST/jobs${JOBS:-10}-$1" 2>&1 | tail -3 | tee -a "$LOG"
    rm -rf "$ST/jobs${JOBS:-10}-$1/triton-cache"
  done
  set -- J
  ;;
*) echo "usage: $0 A|B|C|D|J" >&2; exit 2 ;;
esac
pack "$1"
step "end"
