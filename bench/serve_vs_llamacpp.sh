#!/usr/bin/env bash
# folio serve beside llama-server on the same model, threads and KV size
# (issue 26's measurement), loopback only: bench/serve_load.py against both
# servers at 1, 8 and 32 clients, the servers' runs alternated (llama, folio,
# folio, llama) so that the shared machine's drift falls on both.
#   bash bench/serve_vs_llamacpp.sh FOLIO LLAMA_SERVER MODEL OUT_PREFIX
# LLAMA_SERVER: LLAMA_BUILD_SERVER=ON bash bench/quant/build_llamacpp.sh DIR llama-server
set -u
F=${1:?folio binary}; L=${2:?llama-server binary}; M=${3:?model}; OUT=${4:?output prefix}
T=${THREADS:-2}; SLOTS=32; CTX=256   # 32 sequences of 256 tokens: 8192 KV tokens for both
PY=${PY:-.venv/bin/python}
LOAD="--clients 1,8,32 --requests ${REQUESTS:-32} --max-tokens ${MAX_TOKENS:-64}"
wait_up() { for _ in $(seq 1 120); do curl -sf "http://127.0.0.1:$1/health" >/dev/null && return 0; sleep 0.5; done; return 1; }
run_llama() {
    "$L" -m "$M" -t "$T" -tb "$T" -np $SLOTS -c $((SLOTS * CTX)) --host 127.0.0.1 --port 8091 >/tmp/llama-server.log 2>&1 &
    local pid=$!; wait_up 8091 || { echo "llama-server did not start"; tail -5 /tmp/llama-server.log; }
    "$PY" bench/serve_load.py --server llama=http://127.0.0.1:8091 $LOAD --json "$OUT-$1.json" | tee -a "$OUT.txt"
    kill $pid; wait $pid 2>/dev/null
}
run_folio() {
    "$F" serve -m "$M" -t "$T" --parallel $SLOTS -c $CTX --port 8092 >/tmp/folio-serve.log 2>&1 &
    local pid=$!; wait_up 8092 || { echo "folio serve did not start"; tail -5 /tmp/folio-serve.log; }
    "$PY" bench/serve_load.py --server folio=http://127.0.0.1:8092 $LOAD --json "$OUT-$1.json" | tee -a "$OUT.txt"
    kill $pid; wait $pid 2>/dev/null
}
echo "# $(date -u +%FT%TZ), $(nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg); model $M; $T threads; $SLOTS x $CTX KV tokens; $LOAD" | tee "$OUT.txt"
echo "# llama-server: $L -m MODEL -t $T -tb $T -np $SLOTS -c $((SLOTS * CTX)); folio: $F serve -m MODEL -t $T --parallel $SLOTS -c $CTX" | tee -a "$OUT.txt"
run_llama 1; run_folio 2; run_folio 3; run_llama 4
