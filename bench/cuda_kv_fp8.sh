#!/usr/bin/env bash
# fp8 against f16 KV on the GPU (8B shape, dummy weights), one build, side by
# side in one call: batch-1 decode (tg64) at depth 0, 4096 and 32768 with F16
# and Q4_0 weights (the KV's share of the bytes a token reads grows with the
# depth and shrinks with the weights' size), and the blocks a fixed 8 GiB KV
# budget holds.
#   bash bench/cuda_kv_fp8.sh BUILD OUT_FILE
set -u
B=${1:?}; OUT=${2:?}
folio="$B/app/folio"
echo "# $(date -u +%F) $(nvidia-smi --query-gpu=name --format=csv,noheader | head -1)" | tee -a "$OUT"
for weights in q4_0 f16; do
  for depth in 0 4096 32768; do
    r=$("$folio" bench -m llama-3.1-8b --load-format dummy --device cuda --dummy-type $weights -p 0 -n 64 -d $depth \
        -r 2 -c $((depth + 128)) --kv-type f16,fp8 2>&1 | grep -E "tg64|error")
    printf '%s weights, depth %s:\n%s\n' "$weights" "$depth" "$r" | tee -a "$OUT"
  done
done
for kv in f16 fp8; do
  "$folio" run -m llama-3-8b --load-format dummy --device cuda --dummy-type q4_0 --kv-type $kv --kv-budget 8192 \
      -p "hi" -n 1 2>&1 | grep -E "KV cache [0-9]+ blocks" | sed "s/^/$kv: /" | tee -a "$OUT"
done
