#!/usr/bin/env bash
# Set up everything, build, and start Folio Studio with the default model
# loaded. Without a display (ssh, CI) the default model answers a prompt
# through `folio run --chat` instead.
#   bash scripts/run.sh
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"

bash scripts/setup.sh
cmake --preset default >/dev/null
cmake --build --preset default -j "$(nproc)" --target folio folio-studio

model=models/SmolLM2-135M-Instruct.Q4_1.gguf
if [ -n "${DISPLAY:-}${WAYLAND_DISPLAY:-}" ]; then
  exec ./build/app/folio-studio "$model"
fi
echo "run.sh: no display; the default model answers a prompt on the CPU instead of opening the studio" >&2
./build/app/folio run -m "$model" --chat \
  -p "${FOLIO_PROMPT:-In two sentences, what is a KV cache in a language model?}" -n 128
