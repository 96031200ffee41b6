#!/usr/bin/env bash
# Quantization wall time and peak RSS, Folio vs llama-quantize, same F16 file,
# same threads, Q4_K_M, run alternately (llama, folio, folio, llama) so that
# a busy machine hurts both alike. The memory bound the issue sets for Folio:
# 2 x the largest tensor in F32 + 1 GiB.
#
# llama.cpp tools: bench/quant/build_llamacpp.sh /work/llamacpp
# usage: bench/quant/speed_memory.sh LLAMA_BIN_DIR SOURCE.F16.gguf WORK_DIR THREADS
#   e.g. bench/quant/speed_memory.sh /work/llamacpp/build/bin /work/quantdata/llama-3.2-1b-random.F16.gguf /work/quantdata 2
# SOURCE from tools/make_random_gguf.py.
set -euo pipefail
bin=$1; src=$2; work=$3; threads=$4
folio=${FOLIO:-build-q/app/folio}
largest=$(${PYTHON:-.venv/bin/python} -c "
import gguf, sys, numpy as np
r = gguf.GGUFReader(sys.argv[1]); print(max(int(np.prod(t.shape)) for t in r.tensors) * 4)" "$src")
echo "source: $src ($(stat -c %s "$src") bytes), largest tensor in F32: $largest bytes; bound 2x+1GiB: $((2 * largest + (1 << 30))) bytes"
echo "machine: $(nproc) cores, load average $(cut -d' ' -f1-3 /proc/loadavg)"
run() {
  local tool=$1 out=$work/speed.$1.Q4_K_M.gguf
  if [ "$tool" = llama ]; then cmd=("$bin/llama-quantize" "$src" "$out" Q4_K_M "$threads")
  else cmd=("$folio" quantize -m "$src" -o "$out" --validate-chunks 0 -t "$threads"); fi
  /usr/bin/time -f "%e %M" -o "$work/time.txt" "${cmd[@]}" > "$work/speed.$tool.log" 2>&1
  read -r wall rss_kib < "$work/time.txt"
  printf "%-6s wall %8.1f s   peak RSS %6.0f MiB   output %6.0f MiB\n" "$tool" "$wall" "$((rss_kib / 1024))" \
    "$(( $(stat -c %s "$out") / 1048576 ))"
  rm -f "$out" "$out.quality.json"
}
for tool in llama folio folio llama; do run $tool; done
