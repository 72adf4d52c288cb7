#!/usr/bin/env sh
# The hosted container's start command (Dockerfile CMD); the test suite runs it too.
# Read-only explorer on ${PORT:-7860}. With TLX_BUILD_SOURCE set (e.g. hf://datasets/makora-ai/triton-gpu-latency)
# and no store at TLX_STORE yet, the store is built first (the full dataset takes a while; see README).
# scripts/serve_app.py opens the store before Streamlit listens, so the first visitor does not wait for it.
set -eu
export TLX_READ_ONLY=1
if [ -n "${TLX_BUILD_SOURCE:-}" ] && [ -n "${TLX_STORE:-}" ] && [ ! -f "${TLX_STORE}/meta.json" ]; then
  python -m queries ingest "${TLX_BUILD_SOURCE}" --store "${TLX_STORE}"
fi
exec python scripts/serve_app.py \
  --server.port "${PORT:-7860}" --server.address 0.0.0.0 --server.headless true \
  --browser.gatherUsageStats false
