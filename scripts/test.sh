#!/usr/bin/env bash
# Set up everything, build, and run the whole test suite: what CI runs.
#   bash scripts/test.sh
# FOLIO_FUZZ_SECONDS (default 60) bounds the libFuzzer run.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"

bash scripts/setup.sh
export FOLIO_REQUIRE_MODELS=1   # a missing test model fails instead of skipping
jobs=$(nproc)

# 1. The fuzz build (clang, ASan + UBSan): bounded fuzzing of the GGUF reader
#    and the chat-template interpreter.
cmake --preset fuzz >/dev/null
cmake --build --preset fuzz -j "$jobs" --target gguf_fuzzer chat_template_fuzzer
ctest --preset fuzz -L fuzz

# 2. The serving engine's unit tests (BlockPool, scheduler, Engine thread,
#    metrics) under AddressSanitizer + UndefinedBehaviorSanitizer.
engine_units="test_kv_cache test_scheduler test_engine_unit test_engine_spec histogram_test prometheus_text_test workload_test workload_jsonl_test"
cmake --preset sanitize >/dev/null
cmake --build --preset sanitize -j "$jobs" --target $engine_units
ctest --preset sanitize -R "^(${engine_units// /|})\$"

# llama.cpp's llama-server from the llama-cpp-python sdist the goldens come
# from: the studio attaches to it in test_gui_remote. Built once into
# FOLIO_LLAMACPP_DIR (default ~/.cache/folio-llamacpp; ~12 min on 2 cores),
# then only checked.
llamacpp=${FOLIO_LLAMACPP_DIR:-$HOME/.cache/folio-llamacpp}
LLAMA_BUILD_SERVER=ON bash bench/quant/build_llamacpp.sh "$llamacpp" llama-server >/dev/null
export FOLIO_LLAMA_SERVER="$llamacpp/build/bin/llama-server"

# 3. The main build, warnings as errors, and every suite: unit model gui gpu fuzz.
cmake --preset ci >/dev/null
cmake --build --preset ci -j "$jobs"
ctest --preset ci -LE package   # the package test runs from .ci/run, on the first build
