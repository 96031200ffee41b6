#!/bin/bash
# One device call: the GPU matmul test, then the bandwidth table with and
# without programmatic dependent launch. Expects the noqt build in $1.
build=${1:-build-noqt-mm}
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:$LD_LIBRARY_PATH
out=${OUT:-/tmp}
nvidia-smi --query-gpu=name,clocks.sm,clocks.mem,power.draw,temperature.gpu --format=csv > "$out/gpu.txt" 2>&1
timeout 100 "$build/tests/gpu/test_gpu_matmul" > "$out/test.txt" 2>&1; echo "test rc=$?" >> "$out/test.txt"
timeout 60 "$build/bench/folio_bench_cuda_matmul" > "$out/bench_pdl_on.txt" 2>&1
FOLIO_CUDA_PDL=0 timeout 40 "$build/bench/folio_bench_cuda_matmul" Q4_0 F16 > "$out/bench_pdl_off.txt" 2>&1
cat "$out/gpu.txt"; grep -v "^PASS\|^SKIP" "$out/test.txt" | tail -60; cat "$out/bench_pdl_on.txt" "$out/bench_pdl_off.txt"
