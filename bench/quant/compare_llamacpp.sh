#!/usr/bin/env bash
# Folio's quantizer side by side with llama.cpp's, in one run, judged by one
# judge (llama-perplexity --kl-divergence on the full-precision source):
#   Q4_K_M without calibration, and Q4_K_M with each tool's own importance
#   matrix collected on the same calibration text (Debian's licence texts,
#   folio's default); evaluated on a different text (GPL-3).
# Also the wall time of each quantization (2 threads).
#
# usage: bench/quant/compare_llamacpp.sh LLAMA_BIN_DIR WORK_DIR SOURCE.gguf NAME EVAL_CHUNKS CAL_CHUNKS
#   e.g. bench/quant/compare_llamacpp.sh /work/llamacpp/build/bin /work/quantdata \
#          /work/quantdata/SmolLM2-135M-Instruct-hf.F32.gguf smollm2 16 16
# LLAMA_BIN_DIR: llama-quantize, llama-imatrix, llama-perplexity built from the
# llama.cpp tree inside the llama-cpp-python==0.3.36 sdist (CPU).
set -euo pipefail
bin=$1; work=$2; src=$3; name=$4; eval_chunks=$5; cal_chunks=$6
folio=${FOLIO:-build-q/app/folio}
eval_text=/usr/share/common-licenses/GPL-3
cal=$work/calibration.txt
for f in Apache-2.0 MPL-2.0 MPL-1.1 GFDL-1.3 Artistic CC0-1.0; do cat /usr/share/common-licenses/$f; printf '\n\n'; done > "$cal"
out=$work/bench-$name; mkdir -p "$out"
t() { local s=$(date +%s.%N); "$@" > "$out/last.log" 2>&1; echo "$(date +%s.%N) - $s" | bc; }

echo "== $name: $src"
echo "calibration: $cal ($cal_chunks chunks of 512); evaluation: $eval_text ($eval_chunks chunks of 512)"
echo "imatrix llama.cpp: $(t $bin/llama-imatrix -m "$src" -f "$cal" -o "$out/llama.imatrix.gguf" -c 512 --chunks "$cal_chunks" -t 2 --no-ppl) s"
echo "imatrix folio    : $(t $folio imatrix -m "$src" -f "$cal" -o "$out/folio.imatrix.gguf" -c 512 --chunks "$cal_chunks" -t 2) s"
echo "quantize llama.cpp Q4_K_M          : $(t $bin/llama-quantize "$src" "$out/llama.Q4_K_M.gguf" Q4_K_M 2) s"
echo "quantize folio     Q4_K_M          : $(t $folio quantize -m "$src" -o "$out/folio.Q4_K_M.gguf" --validate-chunks 0 -t 2) s"
echo "quantize llama.cpp Q4_K_M+imatrix  : $(t $bin/llama-quantize --imatrix "$out/llama.imatrix.gguf" "$src" "$out/llama.Q4_K_M.imatrix.gguf" Q4_K_M 2) s"
echo "quantize folio     Q4_K_M+imatrix  : $(t $folio quantize -m "$src" -o "$out/folio.Q4_K_M.imatrix.gguf" --imatrix "$out/folio.imatrix.gguf" --validate-chunks 0 -t 2) s"
echo "quantize folio Q4_K_M + llama.cpp's imatrix: $(t $folio quantize -m "$src" -o "$out/folio.Q4_K_M.llama-imatrix.gguf" --imatrix "$out/llama.imatrix.gguf" --validate-chunks 0 -t 2) s"
echo "quantize llama.cpp Q4_K_M + folio's imatrix: $(t $bin/llama-quantize --imatrix "$out/folio.imatrix.gguf" "$src" "$out/llama.Q4_K_M.folio-imatrix.gguf" Q4_K_M 2) s"
$bin/llama-perplexity -fa off -m "$src" -f "$eval_text" -c 512 -b 512 --chunks "$eval_chunks" -t 2 --kl-divergence-base "$out/base.kld" > "$out/base.log" 2>&1
echo "PPL(base) $(grep -o 'Final estimate: PPL = [0-9.]*' "$out/base.log" | tail -1)"
printf "%-32s %10s %10s %9s %9s %9s %9s %8s\n" variant size_MiB PPL PPL_ratio meanKLD p99KLD maxKLD same_top
for v in llama.Q4_K_M folio.Q4_K_M llama.Q4_K_M.imatrix folio.Q4_K_M.imatrix folio.Q4_K_M.llama-imatrix llama.Q4_K_M.folio-imatrix; do
  $bin/llama-perplexity -fa off -m "$out/$v.gguf" -c 512 -b 512 -t 2 --kl-divergence-base "$out/base.kld" --kl-divergence > "$out/$v.log" 2>&1
  f=$out/$v.log
  printf "%-32s %10.1f %10s %9s %9s %9s %9s %8s\n" "$v" "$(echo "$(stat -c %s "$out/$v.gguf") / 1048576" | bc -l)" \
    "$(grep 'Mean PPL(Q)  ' "$f" | awk '{print $4}')" "$(grep 'Mean PPL(Q)/PPL(base)' "$f" | awk '{print $4}')" \
    "$(grep 'Mean    KLD' "$f" | awk '{print $3}')" "$(grep '99.0%   KLD' "$f" | awk '{print $3}')" \
    "$(grep 'Maximum KLD' "$f" | awk '{print $3}')" "$(grep 'Same top p:' "$f" | awk '{print $4}')"
done
# Tensor data, file against file (metadata differ: general.quantized_by, folio.quantize.*).
${PYTHON:-.venv/bin/python} - "$out" <<'PY'
import sys, numpy as np, gguf
out = sys.argv[1]
for a, b in [("llama.Q4_K_M", "folio.Q4_K_M"), ("llama.Q4_K_M.imatrix", "folio.Q4_K_M.llama-imatrix"),
             ("llama.Q4_K_M.imatrix", "folio.Q4_K_M.imatrix")]:
    ra, rb = gguf.GGUFReader(f"{out}/{a}.gguf"), gguf.GGUFReader(f"{out}/{b}.gguf")
    tb = {t.name: t for t in rb.tensors}
    same = sum(1 for t in ra.tensors if t.name in tb and t.tensor_type == tb[t.name].tensor_type
               and np.array_equal(np.asarray(t.data), np.asarray(tb[t.name].data)))
    print(f"tensors byte-identical, {a} vs {b}: {same}/{len(ra.tensors)}")
PY
