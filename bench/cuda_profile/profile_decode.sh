#!/usr/bin/env bash
# Where a batch-1 decode step of the 8B shape spends its time, kernel by
# kernel (Nsight Compute, clocks and caches left alone), for F16 and Q4_0
# dummy weights, next to the step time measured with CUDA graphs. Run on the
# GPU machine:  bash bench/cuda_profile/profile_decode.sh FOLIO_BINARY OUT_DIR
set -u
F=${1:?folio binary}; OUT=${2:?out dir}
M="-m llama-3-8b --load-format dummy --device cuda"
mkdir -p "$OUT"
for t in q4_0 f16; do
    echo "== $t: $F bench $M --dummy-type $t -p 0 -n 128 -r 3 --json" | tee -a "$OUT/profile.txt"
    $F bench $M --dummy-type $t -p 0 -n 128 -r 3 --json 2>/dev/null | tee "$OUT/tg-$t.json" | tee -a "$OUT/profile.txt"
    tps=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["tg"]["mean_tps"])' "$OUT/tg-$t.json" 2>/dev/null || echo 0)
    ms=$(python3 -c "print(1000/$tps if $tps else 0)")
    echo "== $t: ncu over folio run -p Hi -n 6 --temp 0 --no-cuda-graphs (tg $tps tok/s => $ms ms/token with graphs)" | tee -a "$OUT/profile.txt"
    ncu --csv --print-units base --clock-control none --cache-control none \
        --metrics gpu__time_duration.sum,dram__bytes_read.sum,dram__bytes_write.sum \
        --log-file "$OUT/ncu-$t.csv" $F run $M --dummy-type $t -p Hi -n 6 --temp 0 --no-cuda-graphs >/dev/null 2>"$OUT/ncu-$t.err"
    python3 bench/cuda_profile/ncu_summary.py "$OUT/ncu-$t.csv" --steps 3 --token-ms "$ms" 2>&1 | tee -a "$OUT/profile.txt"
done
