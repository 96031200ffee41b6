#!/usr/bin/env bash
# The judging half of compare_llamacpp.sh on files it already made: llama-perplexity
# --kl-divergence-base on the source, then --kl-divergence for each variant (the same
# judge for Folio's files and llama.cpp's), and the tensor-data comparison.
# usage: bench/quant/judge_kld.sh LLAMA_BIN_DIR OUT_DIR SOURCE.gguf EVAL_CHUNKS VARIANT...
set -euo pipefail
bin=$1; out=$2; src=$3; eval_chunks=$4; shift 4
eval_text=/usr/share/common-licenses/GPL-3
$bin/llama-perplexity -fa off -m "$src" -f "$eval_text" -c 512 -b 512 --chunks "$eval_chunks" -t 2 --kl-divergence-base "$out/base.kld" > "$out/base.log" 2>&1
echo "base: $src, $eval_text, $eval_chunks chunks of 512: $(grep -o 'Final estimate: PPL = [0-9.]*' "$out/base.log" | tail -1)"
printf "%-30s %9s %10s %9s %9s %9s %9s %9s\n" variant size_MiB PPL PPL_ratio meanKLD p99KLD maxKLD same_top%
for v in "$@"; do
  f=$out/$v.kld.log
  $bin/llama-perplexity -fa off -m "$out/$v.gguf" -c 512 -b 512 -t 2 --kl-divergence-base "$out/base.kld" --kl-divergence > "$f" 2>&1
  printf "%-30s %9.1f %10s %9s %9s %9s %9s %9s\n" "$v" "$(echo "$(stat -c %s "$out/$v.gguf") / 1048576" | bc -l)" \
    "$(grep 'Mean PPL(Q)  ' "$f" | awk '{print $4}')" "$(grep 'Mean PPL(Q)/PPL(base)' "$f" | awk '{print $4}')" \
    "$(grep 'Mean    KLD' "$f" | awk '{print $3}')" "$(grep '99.0%   KLD' "$f" | awk '{print $3}')" \
    "$(grep 'Maximum KLD' "$f" | awk '{print $3}')" "$(grep 'Same top p:' "$f" | awk '{print $4}')"
done
