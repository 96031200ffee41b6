#!/usr/bin/env bash
# Batch-1 decode (8B shape, tg128) of NEW_BUILD against OLD_BUILD at the same
# context (-c), alternated: whether a change is the engine's or the context's.
#   bash bench/cuda_context_check.sh NEW_BUILD OLD_BUILD OUT_FILE
set -u
NEW=${1:?}; OLD=${2:?}; OUT=${3:?}
for type in f16 q4_0; do
  for c in 512 4096; do
    for round in 1 2; do
      for which in old new; do
        b=$OLD; [ $which = new ] && b=$NEW
        r=$("$b/app/folio" bench -m llama-3-8b --load-format dummy --device cuda --dummy-type $type -p 0 -n 128 -r 3 -c $c 2>/dev/null | grep tg128)
        echo "$type -c $c $which round $round: $r" | tee -a "$OUT"
      done
    done
  done
done
