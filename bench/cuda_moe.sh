#!/usr/bin/env bash
# Issue 23's H200 rows: Qwen3-30B-A3B (mixture of experts, Q4_K) and Qwen3-8B
# (F16 and llama-quantize's Q4_K_M mix), Folio beside llama.cpp on the same
# files, at batch 1 (llama-bench pp512 / tg128 against folio bench) and 64
# concurrent sequences (llama-batched-bench -npp 128 -ntg 128 -npl 64 against
# folio bench --workload: 64 requests of 128 + 128 tokens, all at once).
# The files are made on the GPU machine in the call (nothing large travels):
# random weights without a vocabulary (tools/make_random_gguf.py --no-vocab,
# gguf-py from the llama.cpp tree; the MoE file written as Q4_K blocks
# directly). Two steps, each one device call (the warm machine keeps WORK;
# MODELS limits both to some of the files):
#   bash bench/cuda_moe.sh prepare LLAMA_TARBALL WORK      # llama.cpp (CUDA, sm_90) and the files
#   bash bench/cuda_moe.sh bench   FOLIO_BUILD WORK OUT    # the rows, llama.cpp and Folio alternated
# LLAMA_TARBALL: the llama.cpp tree of the llama-cpp-python==0.3.36 sdist
# (vendor/llama.cpp without docs, models, media, tests and the backends other
# than CPU and CUDA, tar cJf: 8 MB).
set -u
step=${1:?prepare or bench}
if [ "$step" = prepare ]; then
    TAR=${2:?llama.cpp tarball}; WORK=${3:?work dir}
    mkdir -p "$WORK"
    [ -d "$WORK/llama.cpp" ] || tar xJf "$TAR" -C "$WORK"
    # The random files are written on two cores while llama.cpp builds on the others.
    want() { case " ${MODELS:-q30a3b.Q4_K q8b.Q4_K_M q8b.F16} " in *" $1 "*) return 0 ;; esac; return 1; }
    make() {  # file, options...
        local f=$1; shift
        [ -f "$WORK/$f" ] && return 0
        PYTHONPATH="$WORK/llama.cpp/gguf-py" python3 tools/make_random_gguf.py "$WORK/$f.part" --no-vocab "$@" \
            > "$WORK/$f.log" 2>&1 && mv "$WORK/$f.part" "$WORK/$f"
    }
    gen1=; gen2=
    if want q30a3b.Q4_K; then make q30a3b.Q4_K.gguf --shape qwen3-30b-a3b --type Q4_K & gen1=$!; fi
    if want q8b.F16 || want q8b.Q4_K_M; then make q8b.F16.gguf --shape qwen3-8b & gen2=$!; fi
    if [ ! -x "$WORK/llama.cpp/build/bin/llama-batched-bench" ]; then
        cmake -S "$WORK/llama.cpp" -B "$WORK/llama.cpp/build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DGGML_CUDA=ON \
            -DCMAKE_CUDA_ARCHITECTURES=90 -DGGML_NATIVE=OFF -DLLAMA_CURL=OFF -DLLAMA_BUILD_SERVER=OFF \
            -DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_EXAMPLES=OFF > "$WORK/llama-cmake.log" 2>&1 || { tail -20 "$WORK/llama-cmake.log"; exit 1; }
        cmake --build "$WORK/llama.cpp/build" -j 14 --target llama-bench llama-batched-bench llama-quantize \
            > "$WORK/llama-build.log" 2>&1 || { tail -30 "$WORK/llama-build.log"; exit 1; }
    fi
    echo "llama.cpp built at $(date -u +%T)"
    wait $gen1 $gen2 2>/dev/null
    for f in "$WORK"/*.gguf.log; do echo "$f: $(tail -n 1 "$f")"; done
    if want q8b.Q4_K_M && [ -f "$WORK/q8b.F16.gguf" ] && [ ! -f "$WORK/q8b.Q4_K_M.gguf" ]; then
        "$WORK/llama.cpp/build/bin/llama-quantize" "$WORK/q8b.F16.gguf" "$WORK/q8b.Q4_K_M.gguf.part" Q4_K_M 16 \
            > "$WORK/quantize.log" 2>&1 && mv "$WORK/q8b.Q4_K_M.gguf.part" "$WORK/q8b.Q4_K_M.gguf"
        tail -3 "$WORK/quantize.log"
    fi
    ls -la "$WORK"/*.gguf
    exit 0
fi

B=${2:?folio build}; WORK=${3:?work dir}; OUT=${4:?out dir}
F="$B/app/folio"; L="$WORK/llama.cpp/build/bin"
mkdir -p "$OUT"
nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm,clocks.max.mem --format=csv | tee "$OUT/gpu.txt"
run() {  # name, command...
    local name=$1; shift
    echo "== $name: $*" | tee -a "$OUT/moe.txt"
    "$@" 2>"$OUT/$name.err" | tee -a "$OUT/moe.txt"
    tail -3 "$OUT/$name.err" >> "$OUT/moe.txt"
}
for m in ${MODELS:-q30a3b.Q4_K q8b.Q4_K_M q8b.F16}; do
    Q="$WORK/$m.gguf"
    [ -f "$Q" ] || { echo "no $Q" | tee -a "$OUT/moe.txt"; continue; }
    ls -la "$Q" | tee -a "$OUT/moe.txt"
    # Batch 1, alternated (the card is shared and its clocks drift).
    run "llama-$m-1" "$L/llama-bench" -m "$Q" -ngl 99 -fa 1 -p 512 -n 128 -r 3
    run "folio-$m-1" "$F" bench -m "$Q" --device cuda -p 512 -n 128 -r 3
    # 64 sequences of 128 prompt + 128 generated tokens at once.
    run "llama-$m-64" "$L/llama-batched-bench" -m "$Q" -ngl 99 -fa on -c 17408 -b 2048 -ub 512 \
        -npp 128 -ntg 128 -npl 64
    run "folio-$m-64" "$F" bench -m "$Q" --device cuda --workload synthetic --requests 64 --rate inf \
        --prompt-len 128:128 --output-len 128:128 --modes paged -c 1024 --max-seqs 64 -b 2048 \
        --kv-budget 4096
    [ -n "${SHORT:-}" ] && continue
    run "folio-$m-1b" "$F" bench -m "$Q" --device cuda -p 512 -n 128 -r 3
    run "llama-$m-1b" "$L/llama-bench" -m "$Q" -ngl 99 -fa 1 -p 512 -n 128 -r 3
done
