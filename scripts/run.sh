#!/usr/bin/env bash
# Set up everything, build, and run the main job on the default model.
#   bash scripts/run.sh
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"

bash scripts/setup.sh
cmake --preset default >/dev/null
cmake --build --preset default -j "$(nproc)"

model=models/SmolLM2-135M-Instruct.Q4_1.gguf
./build/app/folio inspect -m "$model" --no-tensors
./build/app/folio tokenize -m "$model" -p "Hello, Folio! What is a paged KV cache?"
