#!/usr/bin/env bash
# The GPU figures of BENCHMARKS.md, in two bounded parts (each fits one device call of < 10 minutes, on a fresh
# machine: each part ingests the sample and starts with a cold Triton cache).
#   part 1: environment, GPU tests, the correct rows twice on all GPUs (cold cache, then warm: the N-GPU
#           throughput), the failing rows once
#   part 2: do_bench cross-check of the correct rows (warms the cache), 80 correct rows on GPU 0 only, then on
#           all GPUs (the 1 vs N GPU throughput), the other correct rows, the hangs with a short timeout
#   part 3: after the launch-bound flag: GPU tests, the rows >= 50 us three times each plus do_bench, 24 small rows
# Every pass is `python -m runner bulk` (or gpu_validate for do_bench) and appends to $OUT/runs_partN.jsonl; the
# report (`gpu_validate.py --report`) pools the passes of both parts. Usage: scripts/gpu_session.sh 1|2|3, after
# `python scripts/gpu_ids.py` here (it writes the id lists into var/gpu/, carried to the device).
set -u
export PYTHONUNBUFFERED=1
OUTD=${OUT:-/tmp/tlx-out}; mkdir -p "$OUTD"
LOG="$OUTD/log_part${1:-x}.txt"
STORE=${STORE:-/tmp/tlx-store}  # carry a prebuilt store (export STORE=...): ingest needs duckdb, which GPU images may lack
export TLX_RUNS_DIR=/tmp/tlx-runs
[ -f "$STORE/meta.json" ] || python3 -m queries ingest data/sample --store "$STORE" 2>&1 | tail -1
BULK=(python3 -m runner bulk --store "$STORE")
step() { echo "== $(date -u +%T) $*" | tee -a "$LOG"; }
case "${1:-}" in
1)
  nvidia-smi --query-gpu=index,name,driver_version,clocks.sm,clocks.mem --format=csv | tee -a "$LOG"
  python3 -c "import torch, triton, sys; print('python', sys.version.split()[0], 'torch', torch.__version__, 'cuda', torch.version.cuda, 'triton', triton.__version__, 'gpus', torch.cuda.device_count())" | tee -a "$LOG"
  step "GPU tests"
  timeout 100 python3 -m pytest -q -m gpu tests/test_runner_gpu.py tests/test_reliability_sandbox.py -p no:cacheprovider 2>&1 | tail -8 | tee -a "$LOG"
  step "A: correct rows, all GPUs, cold cache"
  timeout -s INT 220 "${BULK[@]}" --ids var/gpu/ids_pass.txt --timeout 60 2>&1 | tail -3 | tee -a "$LOG"
  step "B: correct rows, all GPUs, warm cache"
  timeout -s INT 150 "${BULK[@]}" --ids var/gpu/ids_pass.txt --timeout 60 --force 2>&1 | tail -3 | tee -a "$LOG"
  step "failing rows"
  timeout -s INT 70 "${BULK[@]}" --ids var/gpu/ids_fail.txt --timeout 30 2>&1 | tail -3 | tee -a "$LOG"
  ;;
2)
  step "do_bench pass, all GPUs (warms the cache)"
  timeout 180 python3 scripts/gpu_validate.py --sample data/sample --ids var/gpu/ids_pass.txt --repeats 0 \
    --out /tmp/tlx-val --triton-cache "$TLX_RUNS_DIR/triton-cache" --budget-s 170 --timeout 60 2>&1 | tail -3 | tee -a "$LOG"
  cp /tmp/tlx-val/results.jsonl "$OUTD/do_bench_part2.jsonl"
  step "C: throughput rows, GPU 0 only, warm cache"
  CUDA_VISIBLE_DEVICES=0 timeout -s INT 170 "${BULK[@]}" --ids var/gpu/ids_tp.txt --timeout 60 --force 2>&1 | tail -3 | tee -a "$LOG"
  step "D: throughput rows, all GPUs, warm cache"
  timeout -s INT 100 "${BULK[@]}" --ids var/gpu/ids_tp.txt --timeout 60 --force 2>&1 | tail -3 | tee -a "$LOG"
  step "E: the other correct rows, all GPUs"
  timeout -s INT 50 "${BULK[@]}" --ids var/gpu/ids_rest.txt --timeout 60 --force 2>&1 | tail -3 | tee -a "$LOG"
  step "hangs"
  timeout -s INT 55 "${BULK[@]}" --ids var/gpu/ids_hang.txt --timeout 8 2>&1 | tail -3 | tee -a "$LOG"
  ;;
3)
  step "GPU tests"
  timeout 100 python3 -m pytest -q -m gpu tests/test_runner_gpu.py tests/test_reliability_sandbox.py -p no:cacheprovider 2>&1 | tail -8 | tee -a "$LOG"
  step "rows >= 50 us, 3 runs each, all GPUs (cold, then warm)"
  timeout -s INT 150 "${BULK[@]}" --ids var/gpu/ids_big.txt --repeats 3 --timeout 60 2>&1 | tail -3 | tee -a "$LOG"
  step "do_bench of the rows >= 50 us"
  timeout 100 python3 scripts/gpu_validate.py --sample data/sample --ids var/gpu/ids_big.txt --repeats 0 \
    --out /tmp/tlx-val --triton-cache "$TLX_RUNS_DIR/triton-cache" --budget-s 90 --timeout 60 2>&1 | tail -3 | tee -a "$LOG"
  cp /tmp/tlx-val/results.jsonl "$OUTD/do_bench_part3.jsonl"
  step "24 rows < 50 us, once"
  timeout -s INT 90 "${BULK[@]}" --ids var/gpu/ids_small.txt --timeout 60 2>&1 | tail -3 | tee -a "$LOG"
  ;;
*) echo "usage: $0 1|2|3" >&2; exit 2 ;;
esac
step "end"
cat "$TLX_RUNS_DIR"/results/*.jsonl > "$OUTD/runs_part$1.jsonl"
