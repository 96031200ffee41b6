#!/usr/bin/env bash
# Speculative decoding on the CPU, batch 1, greedy: each line is one
# `folio bench --spec` run (speculation off and on alternated, a warm-up of
# each, then -r timed pairs), with its cost model (draft / verify / step times
# per K from the step events). Usage: bench/spec_cpu.sh BUILD_DIR > bench/results/spec-cpu-DATE.txt
# SET=smollm2 (default), gemma, or all; ONLY=WORD keeps the runs whose arguments contain WORD.
set -u
F="${1:-build}/app/folio"
Q=models/SmolLM2-135M-Instruct.Q4_1.gguf
HF=models/SmolLM2-135M-Instruct-hf
GQ=models/gemma-3-270m-q4_k_m.gguf
# Gemma's F32 copy (tools/dequantize_gguf.py; bench/check_same_weights.py GQ GF checks it)
GF=${GEMMA_F32:-/work/quantdata/gemma-3-270m-q4_k_m.F32.gguf}
SET=${SET:-smollm2}
EDIT="Repeat the following paragraph exactly, changing only the word Tuesday to Friday: The committee met on Tuesday to discuss the budget for next year. Members agreed that the library needs new computers, longer opening hours on weekends, and a larger collection of children's books. The treasurer warned that the roof repairs would take most of the reserve fund, so the new computers may have to wait until spring."
CHAT="Write a short story about a cat who learns to play the piano."
N=${N:-128}
ONLY=${ONLY:-}  # a word the runs to make must contain (e.g. int4-self)
R=${R:-3}
echo "# $(date -u +%FT%TZ) $(uname -m), $(nproc) cores, load: $(cut -d' ' -f1-3 /proc/loadavg); -t 2 -n $N -r $R, greedy; commit $(git rev-parse --short HEAD)$(git diff --quiet || echo +changes)"
run() {
  [[ -n "$ONLY" && "$*" != *"$ONLY"* ]] && return
  echo "## $*"
  "$F" bench -t 2 -n "$N" -r "$R" "$@" 2>/dev/null | grep -v '^|---'
}
if [[ $SET == smollm2 || $SET == all ]]; then
  run -m "$Q" --spec ngram --spec-prompt "$EDIT"
  run -m "$Q" --spec ngram --draft-fixed --spec-prompt "$EDIT"
  run -m "$Q" --spec ngram --spec-prompt "$CHAT"
  run -m "$Q" --spec ngram --draft-fixed --spec-prompt "$CHAT"
  run -m "$HF" --spec draft -md "$Q" --draft-fixed --spec-prompt "$EDIT"
  run -m "$HF" --spec draft -md "$Q" --spec-prompt "$CHAT"
  run -m "$HF" --spec draft -md "$Q" --draft-fixed --spec-prompt "$CHAT"
  run -m "$HF" --spec layer-skip --draft-layers 8 --spec-prompt "$EDIT"
  run -m "$HF" --spec int4-self --draft-fixed --spec-prompt "$EDIT"
  run -m "$HF" --spec int4-self --spec-prompt "$CHAT"
fi
if [[ $SET == gemma || $SET == all ]]; then
  run -m "$GF" --spec int4-self --draft-fixed --spec-prompt "$EDIT"
  run -m "$GF" --spec int4-self --spec-prompt "$EDIT"
  run -m "$GF" --spec int4-self --draft-fixed --spec-prompt "$CHAT"
  run -m "$GF" --spec int4-self --spec-prompt "$CHAT"
  run -m "$GQ" --spec ngram --spec-prompt "$EDIT"
  run -m "$GQ" --spec ngram --draft-fixed --spec-prompt "$EDIT"
  run -m "$GQ" --spec ngram --spec-prompt "$CHAT"
  run -m "$GQ" --spec ngram --draft-fixed --spec-prompt "$CHAT"
fi
