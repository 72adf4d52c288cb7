#!/usr/bin/env bash
# The GPU figures of BENCHMARKS.md, in bounded parts (each fits one device call of < 10 minutes):
#   part 1: environment, GPU tests, label run of every sample row on all visible GPUs (hang rows with a short timeout)
#   part 2: bulk throughput on 1 vs all GPUs over the same rows (warm cache), reproducibility + do_bench agreement
#   part 3: after a runner change: GPU tests, re-labelled rows, validation again
# Usage: scripts/gpu_session.sh 1|2|3 (reads the id lists that `python scripts/gpu_ids.py` writes into var/gpu/;
# carry var/gpu to the device machine; writes under $OUT)
set -u
export PYTHONUNBUFFERED=1
OUTD=${OUT:-/tmp/tlx-out}; mkdir -p "$OUTD"
STORE=/tmp/tlx-store
export TLX_RUNS_DIR=/tmp/tlx-runs
[ -f "$STORE/meta.json" ] || python3 -m queries ingest data/sample --store "$STORE" 2>&1 | tail -1
BULK=(python3 -m runner bulk --store "$STORE")
case "${1:-}" in
1)
  nvidia-smi --query-gpu=index,name,driver_version,clocks.sm,clocks.mem --format=csv | tee "$OUTD/gpu.txt"
  python3 -c "import torch, triton, sys; print('python', sys.version.split()[0], 'torch', torch.__version__, 'cuda', torch.version.cuda, 'triton', triton.__version__, 'gpus', torch.cuda.device_count())" | tee -a "$OUTD/gpu.txt"
  [ -n "${SKIP_GPU_TESTS:-}" ] || timeout 120 python3 -m pytest -q -m gpu tests/test_runner_gpu.py -p no:cacheprovider 2>&1 | tail -15 | tee "$OUTD/gpu_tests.txt"
  timeout -s INT 90 "${BULK[@]}" --ids var/gpu/ids_hang.txt --timeout 8 2>"$OUTD/bulk_hang.err" | tee "$OUTD/bulk_hang.txt"
  timeout -s INT 330 "${BULK[@]}" --ids var/gpu/ids_main.txt --timeout 60 2>"$OUTD/bulk_main.err" | tee "$OUTD/bulk_main.txt"
  cat "$TLX_RUNS_DIR"/results/*.jsonl > "$OUTD/labels.jsonl"
  ;;
2)
  # finish the label run where part 1 stopped (resume skips rows already done)
  timeout -s INT 130 "${BULK[@]}" --ids var/gpu/ids_main.txt --timeout 60 2>/dev/null | tee "$OUTD/bulk_main2.txt"
  CUDA_VISIBLE_DEVICES=0 timeout -s INT 140 "${BULK[@]}" --ids var/gpu/ids_tp24.txt --force --timeout 60 2>/dev/null | tee "$OUTD/tp1.txt"
  timeout -s INT 90 "${BULK[@]}" --ids var/gpu/ids_tp24.txt --force --timeout 60 2>/dev/null | tee "$OUTD/tp2.txt"
  timeout 160 python3 scripts/gpu_validate.py --sample data/sample --out "$OUTD/val" --repeats 3 --budget-s 95 --timeout 60 2>&1 | tail -30
  cat "$TLX_RUNS_DIR"/results/*.jsonl > "$OUTD/runs_part2.jsonl"
  ;;
3)
  # after the timing and TF32 changes: GPU tests, the rows that TF32 references had failed, then validation
  timeout 120 python3 -m pytest -q -m gpu tests/test_runner_gpu.py -p no:cacheprovider 2>&1 | tail -15 | tee "$OUTD/gpu_tests.txt"
  timeout -s INT 60 "${BULK[@]}" --ids var/gpu/ids_tf32.txt --force --timeout 60 2>/dev/null | tee "$OUTD/tf32.txt"
  timeout 200 python3 scripts/gpu_validate.py --sample data/sample --out "$OUTD/val" --repeats 3 --budget-s 130 --timeout 60 2>&1 | tail -12
  cat "$TLX_RUNS_DIR"/results/*.jsonl > "$OUTD/runs_part3.jsonl"
  ;;
*) echo "usage: $0 1|2|3" >&2; exit 2 ;;
esac
