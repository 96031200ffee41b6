#!/usr/bin/env bash
# Set up everything, build, and run the main job on the default model.
#   bash scripts/run.sh
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"

bash scripts/setup.sh
cmake --preset default >/dev/null
cmake --build --preset default -j "$(nproc)"

# The default model answers a prompt through its chat template, on the CPU.
./build/app/folio run -m models/SmolLM2-135M-Instruct.Q4_1.gguf --chat \
  -p "${FOLIO_PROMPT:-In two sentences, what is a KV cache in a language model?}" -n 128
