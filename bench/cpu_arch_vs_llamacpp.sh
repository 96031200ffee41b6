#!/usr/bin/env bash
# Issue 23's CPU rows: the random-weight family files of tools/make_arch_gguf.py
# (F32, 2-26 layers), Folio's `folio bench` beside llama.cpp's llama-bench,
# 2 threads, pp128 / tg64, each pair alternated (llama.cpp, Folio, Folio,
# llama.cpp) on a quiet machine.
#   bash bench/cpu_arch_vs_llamacpp.sh FOLIO LLAMA_BENCH OUT_FILE [families...]
# LLAMA_BENCH: llama-bench of the llama-cpp-python==0.3.36 sdist's llama.cpp,
# built for the CPU (bench/quant/build_llamacpp.sh's build, target llama-bench).
set -u
F=${1:?folio}; LB=${2:?llama-bench}; OUT=${3:?out file}; shift 3
families=${*:-llama31 qwen3 qwen3moe mixtral gemma2 phi3}
dir=$(mktemp -d /tmp/arch-bench.XXXXXX)
trap 'rm -rf "$dir"' EXIT
{
    echo "# $(date -u +%FT%TZ) $(git rev-parse --short HEAD 2>/dev/null) $(nproc) cores: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2)"
    for f in $families; do
        .venv/bin/python tools/make_arch_gguf.py "$f" "$dir/$f.gguf" > /dev/null || { echo "$f: make_arch_gguf.py failed"; continue; }
        echo "== $f ($(du -h "$dir/$f.gguf" | cut -f1))"
        for who in llama folio folio llama; do
            if [ $who = llama ]; then
                "$LB" -m "$dir/$f.gguf" -t 2 -p 128 -n 64 -r 3 -o md 2>/dev/null | grep -E "pp128|tg64"
            else
                "$F" bench -m "$dir/$f.gguf" -t 2 -p 128 -n 64 -r 3 2>/dev/null | grep -E "pp128|tg64"
            fi
        done
    done
} | tee "$OUT"
