#!/usr/bin/env bash
# Set up everything, build, and start Folio Studio with the default model
# loaded. Without a display (ssh, CI) the default model answers a prompt
# through `folio run --chat` instead.
#   bash scripts/run.sh
#   FOLIO_WITH_CUDA=ON bash scripts/run.sh    the CUDA backend even without an NVIDIA driver
#   FOLIO_WITH_CUDA=OFF bash scripts/run.sh   never the CUDA backend
#   FOLIO_PROMPT="..." bash scripts/run.sh     what the default model is asked without a display
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
say() { echo "run.sh: $*" >&2; }
# Set-up and build talk on stderr; stdout is the answer alone (CI reads it).
exec 3>&1 1>&2

bash scripts/setup.sh

# The CUDA backend: built where it can run. Without an NVIDIA driver it could
# not run here and would only cost build time, so it is left out unless asked
# for; if it cannot be built, the CPU build goes on without it.
cuda=${FOLIO_WITH_CUDA:-AUTO}
cuda_failed=build/.cuda-build-failed    # remembers a failed CUDA build: not retried on every run
have_driver() { nvidia-smi -L >/dev/null 2>&1 || ldconfig -p 2>/dev/null | grep -q 'libcuda\.so\.1'; }
if [ "$cuda" = AUTO ]; then
  if ! command -v nvcc >/dev/null 2>&1 && [ ! -x /usr/local/cuda/bin/nvcc ]; then
    cuda=OFF
  elif ! have_driver; then
    say "no NVIDIA driver here: building for the CPU only (FOLIO_WITH_CUDA=ON builds the CUDA backend anyway)"
    cuda=OFF
  elif [ -f "$cuda_failed" ]; then
    say "the CUDA backend did not build last time ($cuda_failed): CPU only (FOLIO_WITH_CUDA=ON to retry)"
    cuda=OFF
  fi
fi

mkdir -p build
configure() { cmake --preset default -DFOLIO_WITH_CUDA="$1" >build/configure.log 2>&1; }
log=build/cuda-build.log
# The CUDA part first, its progress shown and its errors kept in $log.
build_cuda() {
  configure "$cuda" || return 1
  cmake --build --preset default -j "$(nproc)" --target folio_cuda 2>&1 | tee "$log" |
    { grep --line-buffered -E '^\[[0-9]+/[0-9]+\]' || true; }
  return "${PIPESTATUS[0]}"
}
if [ "$cuda" != OFF ]; then
  rm -f "$cuda_failed"
  if ! build_cuda; then
    cat build/configure.log >>"$log"
    [ "$cuda" = ON ] && { say "the CUDA backend did not build (FOLIO_WITH_CUDA=ON); see $log"; exit 1; }
    say "the CUDA backend could not be built (see $log): building for the CPU only"
    touch "$cuda_failed"
    cuda=OFF
  fi
fi
if [ "$cuda" = OFF ]; then
  configure OFF || { cat build/configure.log >&2; exit 1; }
fi
cmake --build --preset default -j "$(nproc)" --target folio folio-studio

model=models/SmolLM2-135M-Instruct.Q4_1.gguf
if [ -n "${DISPLAY:-}${WAYLAND_DISPLAY:-}" ]; then
  exec ./build/app/folio-studio "$model" >&3
fi
say "no display; the default model answers a prompt on the CPU instead of opening the studio"
exec ./build/app/folio run -m "$model" --chat \
  -p "${FOLIO_PROMPT:-In two sentences, what is a KV cache in a language model?}" -n 128 >&3
