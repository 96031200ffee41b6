#!/usr/bin/env bash
# The CUDA benchmark of issue 6 on one GPU, 8B shape with dummy weights:
# batch-1 decode F16 and Q4_0 (tg128), prefill (pp512), decode at 4096 tokens
# of context, 128 concurrent sequences (prompt 128, generate 128), start-up,
# and Hugging Face transformers on the same shapes. Run on the GPU machine:
#   bash bench/cuda_bench.sh BUILD_DIR OUT_DIR [hf]
set -u
B=${1:?build dir}; OUT=${2:?out dir}; HF=${3:-}
F="$B/app/folio"
M="-m llama-3-8b --load-format dummy --device cuda"
mkdir -p "$OUT"
nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm,clocks.max.mem --format=csv | tee "$OUT/gpu.txt"
run() {  # name, command...
    local name=$1; shift
    echo "== $name: $*" | tee -a "$OUT/folio.txt"
    "$@" 2>"/tmp/$name.err" | tee -a "$OUT/folio.txt"
    tail -2 "/tmp/$name.err" >> "$OUT/folio.txt"
}
# Start-up: the whole `folio run` of one token, and its own time to first token (stderr).
startup() {  # name, model args...
    local name=$1; shift
    local s=$EPOCHREALTIME
    $F run "$@" -p Hello -n 1 --temp 0 >/dev/null 2>"/tmp/$name.err"
    local e=$EPOCHREALTIME
    echo "== $name: folio run $* -p Hello -n 1: $(awk "BEGIN{printf \"%.2f\", $e - $s}") s from start to exit" | tee -a "$OUT/folio.txt"
    tail -1 "/tmp/$name.err" | tee -a "$OUT/folio.txt"
}
startup startup-8b $M --dummy-type f16
[ -n "${SMOL:-}" ] && startup startup-smollm2 -m "$SMOL" --device cuda
run tg-f16 $F bench $M --dummy-type f16 -p 0 -n 128 -r 3
run tg-f16-nographs $F bench $M --dummy-type f16 -p 0 -n 128 -r 2 --no-cuda-graphs
run tg-q4_0 $F bench $M --dummy-type q4_0 -p 0 -n 128 -r 3
run tg-q4_0-nographs $F bench $M --dummy-type q4_0 -p 0 -n 128 -r 2 --no-cuda-graphs
run pp-f16 $F bench $M --dummy-type f16 -p 512 -n 0 -r 3
run tg-f16-d4096 $F bench $M --dummy-type f16 -p 0 -n 128 -d 4096 -r 2 -c 4300
run batch128-f16 $F bench $M --dummy-type f16 --workload synthetic --requests 128 --rate inf --prompt-len 128:128 \
    --output-len 128:128 --modes paged --max-seqs 128 -b 16384 --kv-budget 8192 --json
if [ -n "$HF" ]; then
    echo "== transformers" | tee -a "$OUT/hf.txt"
    python3 bench/hf_reference.py --shape llama-3-8b --tests tg128,pp512,tg128@4096,batch128 --reps 1 2>/tmp/hf.err | tee -a "$OUT/hf.txt"
    tail -3 /tmp/hf.err
fi
