#!/usr/bin/env bash
# fp8 against f16 KV on the GPU (8B shape, dummy weights), one build, side by
# side in one call: batch-1 decode (tg64) at depth 0 and 32768 with F16 and
# Q4_0 weights (the KV's share of the bytes a token reads grows with the depth
# and shrinks with the weights' size), the blocks a fixed 8 GiB KV budget
# holds, and the 128-request workload.
#   bash bench/cuda_kv_fp8.sh BUILD OUT_FILE
set -u
B=${1:?}; OUT=${2:?}
folio="$B/app/folio"
echo "# $(date -u +%F) $(nvidia-smi --query-gpu=name --format=csv,noheader | head -1)" | tee -a "$OUT"
for weights in q4_0 f16; do
  for depth in 32768 0; do
    r=$("$folio" bench -m llama-3.1-8b --load-format dummy --device cuda --dummy-type $weights -p 0 -n 64 -d $depth \
        -r 2 -c $((depth + 128)) --kv-type f16,q8_0,fp8 2>&1 | grep -E "tg64|error")
    printf '%s weights, depth %s:\n%s\n' "$weights" "$depth" "$r" | tee -a "$OUT"
  done
done
for kv in f16 q8_0 fp8; do
  "$folio" run -m llama-3-8b --load-format dummy --device cuda --dummy-type q4_0 --kv-type $kv --kv-budget 8192 \
      -p "hi" -n 1 2>&1 | grep -E "KV cache [0-9]+ blocks" | sed "s/^/$kv: /" | tee -a "$OUT"
done
# 128 requests at once in 4 GiB of KV (bench/results/cuda-preemption-2026-11-30.txt's workload, recompute):
# fp8 holds 1.94x the blocks, so fewer sequences wait or are preempted.
for kv in f16 q8_0 fp8; do
  r=$("$folio" bench -m llama-3-8b --load-format dummy --device cuda --dummy-type f16 --workload synthetic \
      --requests 128 --rate inf --prompt-len 512:512 --output-len 256:256 --modes paged --max-seqs 128 \
      -b 8192 --kv-budget 4096 --swap-space 0 --seed 1 --kv-type $kv 2>&1 | grep -vE "^folio: (load|dummy)" | tail -6)
  printf 'workload, %s KV:\n%s\n' "$kv" "$r" | tee -a "$OUT"
done
