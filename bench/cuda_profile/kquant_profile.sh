#!/usr/bin/env bash
# K-quant decode on the GPU machine: tg128 / pp512 of the 8B dummy shape in Q4_K, Q6_K (and Q4_0 beside),
# then ncu of one decode step per K-quant (per-kernel time, DRAM bytes and throughput, registers, warps active).
#   bash bench/cuda_profile/kquant_profile.sh      (from the repository root, build-noqt built; OUT set by the device tool)
set -u
F=build-noqt/app/folio; M="-m llama-3-8b --load-format dummy --device cuda"
for t in q4_k q6_k q4_0; do
  echo "== $t tg128"; $F bench $M --dummy-type $t -p 0 -n 128 -r 3 2>/dev/null | tail -1
done
for t in q4_k q6_k; do
  echo "== $t pp512"; $F bench $M --dummy-type $t -p 512 -n 0 -r 2 2>/dev/null | tail -1
done
for t in q4_k q6_k; do
  ncu --csv --print-units base --clock-control none --cache-control none \
    --metrics gpu__time_duration.sum,dram__bytes_read.sum,dram__throughput.avg.pct_of_peak_sustained_elapsed,sm__warps_active.avg.pct_of_peak_sustained_active,launch__registers_per_thread,launch__grid_size \
    --log-file $OUT/ncu-$t.csv $F run $M --dummy-type $t -p Hi -n 4 --temp 0 --no-cuda-graphs >/dev/null 2>$OUT/ncu-$t.err
  python3 bench/cuda_profile/ncu_summary.py $OUT/ncu-$t.csv --steps 2 2>&1 | head -30
done
