#!/usr/bin/env bash
# Preemption on the GPU: swap to host memory vs recomputation. 128 requests
# (prompt 512, output 256, all at once) on the 8B shape with F16 dummy weights
# and a KV cache of 4 GiB (2048 blocks, ~42 sequences at full length), so
# running sequences run out of blocks and are preempted. The same workload
# with swap space (--swap-space 4) and without (--swap-space 0: preempted
# sequences are recomputed from their prefix-cached blocks on). Run on the GPU
# machine:  bash bench/cuda_preemption.sh FOLIO_BINARY OUT_DIR
set -u
F=${1:?folio binary}; OUT=${2:?out dir}
mkdir -p "$OUT"
for swap in 4 0; do
    cmd="$F bench -m llama-3-8b --load-format dummy --device cuda --dummy-type f16 --workload synthetic --requests 128 \
--rate inf --prompt-len 512:512 --output-len 256:256 --modes paged --max-seqs 128 -b 8192 --kv-budget 4096 \
--swap-space $swap --seed 1 --json"
    echo "== swap space $swap GiB: $cmd" | tee -a "$OUT/preemption.txt"
    $cmd 2>"$OUT/preemption-$swap.err" | tee -a "$OUT/preemption.txt"
    grep -i "swap\|preempt" "$OUT/preemption-$swap.err" | tail -3 | tee -a "$OUT/preemption.txt"
done
