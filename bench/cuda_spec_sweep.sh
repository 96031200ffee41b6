#!/usr/bin/env bash
# On the GPU machine (issue 20): speculation at batch 1 on the 8B and 1B shapes
# (random weights: acceptance is whatever they give), then with adaptive K
# over batch sizes, each run without and with speculation alternated by
# `folio bench --workload ... --spec` (spec_speedup per batch size).
#   bash bench/cuda_spec_sweep.sh BUILD OUT_DIR   (SWEEP_ONLY=1: the sweep alone; BATCH1_ONLY=1: batch 1 alone)
set -u
B=${1:?build}; OUT=${2:?out dir}
mkdir -p "$OUT"
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee "$OUT/gpu.txt"
P="Repeat the following paragraph exactly: The quick brown fox jumps over the lazy dog near the river bank every morning, and the farmer watches it from his porch."
[ "${SWEEP_ONLY:-0}" = 1 ] || for shape in llama-3-8b llama-3.2-1b; do
    M="-m $shape --load-format dummy --device cuda --dummy-type f16"
    for spec in "int4-self" "layer-skip --draft-layers 8" "ngram"; do
        echo "== batch 1: folio bench $M -n 256 -r 2 --spec $spec --spec-prompt \"\$P\"" | tee -a "$OUT/batch1.txt"
        timeout 200 "$B/app/folio" bench $M -n 256 -r 2 --spec $spec --spec-prompt "$P" 2>>"$OUT/stderr.txt" | sed -n '/^| model/,$p' | tee -a "$OUT/batch1.txt"
    done
done
[ "${BATCH1_ONLY:-0}" = 1 ] && exit 0
sweep() {  # shape, spec..., over batch sizes
    local shape=$1; shift
    for b in 1 4 16 64 128; do
        local W="--workload synthetic --requests $b --rate inf --prompt-len 128 --output-len 128 --modes paged"
        echo "== $shape batch $b: folio bench -m $shape --load-format dummy --device cuda --dummy-type f16 $W -r 2 --spec $* --json" | tee -a "$OUT/sweep.txt"
        timeout 200 "$B/app/folio" bench -m $shape --load-format dummy --device cuda --dummy-type f16 $W -r 2 --spec "$@" --json 2>>"$OUT/stderr.txt" |
            python3 -c 'import json,sys; d=json.load(sys.stdin)
for m in d["modes"]: print("  %-10s tok/s %9.1f  spec_speedup %.3f  draft tokens %6d  acceptance %.3f  mean length %.2f" % (m["spec"], m["output_tps"], m["spec_speedup"], m["draft_tokens"], m["acceptance_rate"], m["mean_acceptance_length"]))' | tee -a "$OUT/sweep.txt"
    done
}
sweep llama-3-8b layer-skip --draft-layers 8
sweep llama-3-8b ngram
sweep llama-3.2-1b int4-self
