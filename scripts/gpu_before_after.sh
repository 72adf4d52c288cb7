#!/usr/bin/env bash
# The same rows with the runner before and after a change, on one GPU machine, one after the other (issue 43).
# Prepare here: `git archive <before-commit> | tar -x -C var/before`, a selection in var/gpu/ (scripts/bench_runner.py
# export), bubblewrap in var/tools/bubblewrap (scripts/fetch_bwrap.sh); then on the device, with var carried:
#   scripts/gpu_before_after.sh SELECTION ROWS WHICH BUDGET_S   (WHICH: before | after; results in $OUT/WHICH-NAME)
set -u
SEL=$1 ROWS=$2 WHICH=$3 BUDGET=$4
NAME=$(basename "$SEL" .jsonl)
OUTD=${OUT:-/tmp/tlx-out}/$WHICH-$NAME
mkdir -p "$OUTD"
export PYTHONUNBUFFERED=1 TLX_RUNNER_BWRAP=$PWD/var/tools/bubblewrap/usr/bin/bwrap
TREE=$PWD; [ "$WHICH" = before ] && TREE=$PWD/var/before
SEL=$(realpath "$SEL")
echo "== $(date -u +%T) $WHICH $NAME rows=$ROWS budget=${BUDGET}s tree=$TREE"
(cd "$TREE" && PYTHONPATH=. timeout -s INT $((BUDGET + 60)) python3 scripts/bench_runner.py run --programs "$SEL" \
  --shuffle 1 --rows "$ROWS" --budget-s "$BUDGET" --timeout 60 --out "$OUTD" 2>&1 | tail -3)
rm -rf "$OUTD/triton-cache"
python3 - "$OUTD/summary.json" <<'PY'
import json, sys
s = json.load(open(sys.argv[1]))
h = s.get("host_cpu", {})
print(f"runs {s['runs']} in {s['elapsed_s']} s: {s['runs_per_min']}/min; host CPU-s/run {h.get('cpu_s_per_run')}, "
      f"host ceiling {h.get('ceiling_runs_per_min')}/min; gate ceiling {s.get('gate_ceiling_runs_per_min')}/min; "
      f"smi busy {s.get('gpu_busy_fraction_smi')}; beyond loops {s.get('beyond_timing_loops_s')}")
PY
