#!/usr/bin/env bash
# On the GPU machine: folio imatrix on the Llama-3-8B shape (random F16
# weights generated on the GPU: --load-format dummy), 100 chunks of 512
# tokens as issue 21 asks, without and with --awq (the sampled rows for
# AWQ's search); the 1B shape beside it. The text: numbered lines, long
# enough for 100 chunks (the dummy model's tokenizer is SentencePiece with
# byte fallback, about one token a byte).
#   bash bench/cuda_imatrix.sh BUILD OUT_DIR
set -eu
B=${1:?build dir}; OUT=${2:?out dir}
mkdir -p "$OUT"
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader
text=$OUT/calibration.txt
for i in $(seq 1 1500); do echo "Line $i of the text that times folio imatrix on the GPU, one chunk after another."; done > "$text"
run() {  # shape, extra flags...
    local shape=$1; shift
    echo "== folio imatrix --load-format dummy -m $shape --device cuda -f calibration.txt -c 512 --chunks 100 $*"
    local start=$(date +%s.%N)
    "$B/app/folio" imatrix --load-format dummy -m "$shape" --device cuda \
        -f "$text" -o "$OUT/$shape.imatrix.gguf" -c 512 --chunks 100 "$@" 2>&1 | grep -v "chunk [0-9]*/100$"
    echo "process wall time (loading and generating the weights included): $(python3 -c "print(round($(date +%s.%N) - $start, 1))") s"
}
run llama-3.2-1b
run llama-3-8b
run llama-3-8b
run llama-3-8b --awq
