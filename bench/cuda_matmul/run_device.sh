#!/bin/bash
# One device call: the GPU matmul test, then the bandwidth tables (default,
# then without programmatic dependent launch for comparison). Expects the
# noqt build in $1 (see bench/results/cuda-matmul-*.txt for the command).
build=${1:-build-noqt-mm}
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:$LD_LIBRARY_PATH
out=${OUT:-/tmp}
nvidia-smi --query-gpu=name,clocks.sm,clocks.mem,power.draw,temperature.gpu --format=csv > "$out/gpu.txt" 2>&1
timeout 60 "$build/tests/gpu/test_gpu_matmul" > "$out/test.txt" 2>&1; echo "test rc=$?" >> "$out/test.txt"
bench="$build/bench/folio_bench_cuda_matmul"
timeout 40 "$bench" > "$out/bench.txt" 2>&1
timeout 30 "$bench" F32 BF16 Q4_1 Q5_0 Q5_1 Q5_K > "$out/bench_other_types.txt" 2>&1
FOLIO_CUDA_PDL=0 timeout 15 "$bench" F16 Q4_0 > "$out/bench_no_pdl.txt" 2>&1
cat "$out/gpu.txt"; grep -E "^(PASS|FAIL|  )|rc=" "$out/test.txt" | cut -c1-110
cat "$out/bench.txt" "$out/bench_other_types.txt" "$out/bench_no_pdl.txt"
