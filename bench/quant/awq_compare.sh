#!/usr/bin/env bash
# Folio Q4_K_M + imatrix + --awq against llama.cpp Q4_K_M + imatrix, one judge
# (llama-perplexity --kl-divergence against the F32 source's base log-probs),
# the protocol of compare_llamacpp.sh: calibration on Debian's licence texts
# (CAL_CHUNKS chunks of 512), evaluation on GPL-3 (EVAL_CHUNKS chunks of 512).
#
# usage: bench/quant/awq_compare.sh LLAMA_BIN_DIR OUT_DIR SOURCE.gguf EVAL_CHUNKS CAL_CHUNKS [ROWS:GRID[:GROUPS[:clip]] ...]
#   e.g. bench/quant/awq_compare.sh /work/llamacpp/build/bin /work/quantdata/bench-smollm2-awq \
#          /work/quantdata/SmolLM2-135M-Instruct-hf.F32.gguf 8 16 512:20
# Makes OUT_DIR/base.kld unless it is there; makes llama.imatrix.gguf and
# llama.Q4_K_M.imatrix.gguf unless they are there (llama-imatrix, llama-quantize);
# then one folio.Q4_K_M.imatrix.awq-ROWSxGRID[-GROUPS].gguf per ROWS:GRID[:GROUPS] (default 512:20;
# GROUPS: --awq-groups, e.g. qkv or down,v_out; all when empty or left out; clip: --awq-clip)
# and judges every file with the same base. FOLIO: the folio binary (build-awq/app/folio).
# A variant whose file exists is judged again, not remade (REQUANTIZE=1 remakes it).
set -euo pipefail
bin=$1; out=$2; src=$3; eval_chunks=$4; cal_chunks=$5; shift 5
variants=("$@"); [ ${#variants[@]} -eq 0 ] && variants=(512:20)
folio=${FOLIO:-build-awq/app/folio}
eval_text=/usr/share/common-licenses/GPL-3
mkdir -p "$out"
cal=$out/calibration.txt
for f in Apache-2.0 MPL-2.0 MPL-1.1 GFDL-1.3 Artistic CC0-1.0; do cat /usr/share/common-licenses/$f; printf '\n\n'; done > "$cal"
t() { local s=$(date +%s.%N); "$@" > "$out/last.log" 2>&1; echo "$(date +%s.%N) - $s" | bc; }

echo "machine: $(uname -srm), $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs); $(date -u)"
echo "source: $src; calibration: $cal ($cal_chunks x 512); evaluation: $eval_text ($eval_chunks x 512)"
[ -f "$out/base.kld" ] || $bin/llama-perplexity -fa off -m "$src" -f "$eval_text" -c 512 -b 512 --chunks "$eval_chunks" -t 2 \
    --kl-divergence-base "$out/base.kld" > "$out/base.log" 2>&1
[ -f "$out/llama.imatrix.gguf" ] || echo "imatrix llama.cpp: $(t $bin/llama-imatrix -m "$src" -f "$cal" -o "$out/llama.imatrix.gguf" -c 512 --chunks "$cal_chunks" -t 2 --no-ppl) s"
[ -f "$out/llama.Q4_K_M.imatrix.gguf" ] || echo "quantize llama.cpp Q4_K_M+imatrix: $(t $bin/llama-quantize --imatrix "$out/llama.imatrix.gguf" "$src" "$out/llama.Q4_K_M.imatrix.gguf" Q4_K_M 2) s"
names=(llama.Q4_K_M.imatrix)
for v in "${variants[@]}"; do
  IFS=: read -r rows grid groups clip <<< "$v"
  name=folio.Q4_K_M.imatrix.awq-${rows}x${grid}${groups:+-${groups//,/+}}${clip:+-clip}
  if [ -f "$out/$name.gguf" ] && [ -z "${REQUANTIZE:-}" ]; then
    echo "$name: kept from an earlier run (REQUANTIZE=1 remakes it): $(grep '  awq  ' "$out/$name.quantize.log" || true)"
    names+=("$name"); continue
  fi
  echo "quantize folio Q4_K_M --calibrate --awq rows $rows grid $grid groups ${groups:-all}${clip:+ + clip}: $(t /usr/bin/time -f 'peak RSS %M KiB' \
      $folio quantize -m "$src" -o "$out/$name.gguf" --calibrate "$cal" --calibrate-chunks "$cal_chunks" --awq --awq-rows "$rows" \
      --awq-grid "$grid" ${groups:+--awq-groups "$groups"} ${clip:+--awq-clip} --validate-chunks 0 -t 2) s, $(grep 'peak RSS' "$out/last.log"); $(grep '  awq  ' "$out/last.log")"
  cp "$out/last.log" "$out/$name.quantize.log"
  names+=("$name")
done
printf "%-36s %9s %10s %9s %9s %9s %9s %9s\n" variant size_MiB PPL PPL_ratio meanKLD p99KLD maxKLD same_top%
for v in "${names[@]}"; do
  f=$out/$v.kld.log
  $bin/llama-perplexity -fa off -m "$out/$v.gguf" -c 512 -b 512 -t 2 --kl-divergence-base "$out/base.kld" --kl-divergence > "$f" 2>&1
  printf "%-36s %9.1f %10s %9s %9s %9s %9s %9s\n" "$v" "$(echo "$(stat -L -c %s "$out/$v.gguf") / 1048576" | bc -l)" \
    "$(grep 'Mean PPL(Q)  ' "$f" | awk '{print $4}')" "$(grep 'Mean PPL(Q)/PPL(base)' "$f" | awk '{print $4}')" \
    "$(grep 'Mean    KLD' "$f" | awk '{print $3}')" "$(grep '99.0%   KLD' "$f" | awk '{print $3}')" \
    "$(grep 'Maximum KLD' "$f" | awk '{print $3}')" "$(grep 'Same top p:' "$f" | awk '{print $4}')"
done
