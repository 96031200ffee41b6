#!/usr/bin/env bash
# llama.cpp's tools for side-by-side runs, built from the llama.cpp tree inside
# the llama-cpp-python==0.3.36 sdist (the reference the tests already use):
# CPU only, AVX2 + AVX-512, no AMX (the native build's AMX kernels died with
# SIGILL on these VMs).
#   bash bench/quant/build_llamacpp.sh DIR [TARGETS...]   (default: llama-quantize llama-imatrix llama-perplexity)
#   LLAMA_BUILD_SERVER=ON bash bench/quant/build_llamacpp.sh DIR llama-server   (for bench/serve_load.py)
#   -> DIR/build/bin/
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)  # before the cd below: $0 may be a relative path
dir=${1:?work dir}; shift
targets=("$@"); [ ${#targets[@]} -gt 0 ] || targets=(llama-quantize llama-imatrix llama-perplexity)
mkdir -p "$dir"
cd "$dir"
[ -f llama_cpp_python-0.3.36.tar.gz ] ||
  "${PIP:-$here/../../.venv/bin/pip}" download --no-binary :all: --no-deps llama-cpp-python==0.3.36 -d .
[ -d llama_cpp_python-0.3.36 ] || tar xzf llama_cpp_python-0.3.36.tar.gz
cmake -S llama_cpp_python-0.3.36/vendor/llama.cpp -B build -G Ninja -DCMAKE_BUILD_TYPE=Release \
  -DGGML_NATIVE=OFF -DGGML_AVX2=ON -DGGML_AVX512=ON -DGGML_FMA=ON -DGGML_F16C=ON \
  -DGGML_AMX_TILE=OFF -DGGML_AMX_INT8=OFF -DLLAMA_CURL=OFF -DLLAMA_BUILD_SERVER="${LLAMA_BUILD_SERVER:-OFF}" >/dev/null
cmake --build build -j "$(nproc)" --target "${targets[@]}"
