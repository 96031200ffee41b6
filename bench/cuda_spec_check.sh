#!/usr/bin/env bash
# On the GPU machine, after the token-choice pipeline and speculative decoding
# (issue 20): the GPU suites on NEW_BUILD; the plain (non-speculative) step's
# speed on NEW_BUILD against OLD_BUILD (the commit before), alternated in one
# run; then speculation on the 8B shape.
#   bash bench/cuda_spec_check.sh NEW_BUILD OLD_BUILD OUT_DIR
set -u
NEW=${1:?new build}; OLD=${2:?old build}; OUT=${3:?out dir}
mkdir -p "$OUT"
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader | tee "$OUT/gpu.txt"
(cd "$NEW" && ctest -L gpu --output-on-failure 2>&1 | tail -25) | tee "$OUT/gpu-tests.txt"
W="--workload synthetic --requests 64 --rate inf --prompt-len 128:128 --output-len 128:128 --modes paged"
bench() {  # name, args...: OLD then NEW, twice
    local name=$1; shift
    for round in 1 2; do
        for which in old new; do
            local b=$OLD; [ $which = new ] && b=$NEW
            echo "== $name $which (round $round): folio bench $*" >>"$OUT/speed.txt"
            "$b/app/folio" bench "$@" >>"$OUT/speed.txt" 2>>"$OUT/speed-stderr.txt"
        done
    done
}
M8="-m llama-3-8b --load-format dummy --device cuda"
M1="-m llama-3.2-1b --load-format dummy --device cuda"
bench tg128-f16 $M8 --dummy-type f16 -p 0 -n 128 -r 3
bench tg128-q4_0 $M8 --dummy-type q4_0 -p 0 -n 128 -r 3
bench greedy-64 $M1 $W --temp 0
bench top-p-64 $M1 $W --temp 0.8 --top-k 0 --top-p 0.95 --min-p 0
bench top-k-64 $M1 $W --temp 0.8 --top-k 40 --top-p 1 --min-p 0
bench penalties-64 $M1 $W --temp 0.8 --top-k 0 --top-p 0.95 --min-p 0 --frequency-penalty 0.5 --presence-penalty 0.3
cat "$OUT/speed.txt"
for spec in "int4-self" "layer-skip --draft-layers 8" "ngram"; do
    echo "== spec $spec: folio bench $M8 --dummy-type f16 -n 128 -r 2 --spec $spec" | tee -a "$OUT/spec.txt"
    timeout 120 "$NEW/app/folio" bench $M8 --dummy-type f16 -n 128 -r 2 --spec $spec 2>&1 | tail -12 | tee -a "$OUT/spec.txt"
done
