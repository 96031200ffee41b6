#!/usr/bin/env bash
# Issue 25, item 4: a real Q4_K_M file on the GPU, Folio beside llama.cpp on
# the same file. The file is made on the GPU machine in the call (nothing
# large travels): an 8B-shape random F16 GGUF without a vocabulary
# (tools/make_random_gguf.py --no-vocab, gguf-py from the llama.cpp tree),
# quantized by llama-quantize Q4_K_M. Run on the GPU machine, in two steps
# (each fits one device call; the warm machine keeps WORK between them):
#   bash bench/cuda_q4km.sh prepare LLAMA_TARBALL WORK      # build llama.cpp (CUDA, sm_90), make the files
#   bash bench/cuda_q4km.sh bench   FOLIO_BUILD WORK OUT    # folio bench and llama-bench, alternated
# LLAMA_TARBALL: the llama.cpp tree of the llama-cpp-python==0.3.36 sdist
# (vendor/llama.cpp, tarred without docs/models/media and the backends other
# than CPU and CUDA, so that it travels).
set -u
step=${1:?prepare or bench}
if [ "$step" = prepare ]; then
    TAR=${2:?llama.cpp tarball}; WORK=${3:?work dir}
    mkdir -p "$WORK"
    [ -d "$WORK/llama.cpp" ] || tar xJf "$TAR" -C "$WORK"
    # The random file is written on one core while llama.cpp builds on the others.
    if [ ! -f "$WORK/r8b.F16.gguf" ]; then
        PYTHONPATH="$WORK/llama.cpp/gguf-py" python3 tools/make_random_gguf.py "$WORK/r8b.F16.gguf.part" --no-vocab \
            > "$WORK/make.log" 2>&1 && mv "$WORK/r8b.F16.gguf.part" "$WORK/r8b.F16.gguf" &
    fi
    gen=$!
    if [ ! -x "$WORK/llama.cpp/build/bin/llama-bench" ]; then
        cmake -S "$WORK/llama.cpp" -B "$WORK/llama.cpp/build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DGGML_CUDA=ON \
            -DCMAKE_CUDA_ARCHITECTURES=90 -DGGML_NATIVE=OFF -DLLAMA_CURL=OFF -DLLAMA_BUILD_SERVER=OFF \
            -DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_EXAMPLES=OFF > "$WORK/llama-cmake.log" 2>&1 || { tail -20 "$WORK/llama-cmake.log"; exit 1; }
        cmake --build "$WORK/llama.cpp/build" -j 15 --target llama-bench llama-quantize > "$WORK/llama-build.log" 2>&1 ||
            { tail -30 "$WORK/llama-build.log"; exit 1; }
    fi
    echo "llama.cpp built at $(date -u +%T)"
    wait $gen
    cat "$WORK/make.log"
    [ -f "$WORK/r8b.F16.gguf" ] || { echo "no F16 file"; exit 1; }
    if [ ! -f "$WORK/r8b.Q4_K_M.gguf" ]; then
        "$WORK/llama.cpp/build/bin/llama-quantize" "$WORK/r8b.F16.gguf" "$WORK/r8b.Q4_K_M.gguf.part" Q4_K_M 16 \
            > "$WORK/quantize.log" 2>&1 && mv "$WORK/r8b.Q4_K_M.gguf.part" "$WORK/r8b.Q4_K_M.gguf"
        tail -4 "$WORK/quantize.log"
    fi
    ls -la "$WORK"/*.gguf
    exit 0
fi

B=${2:?folio build}; WORK=${3:?work dir}; OUT=${4:?out dir}
F="$B/app/folio"; LB="$WORK/llama.cpp/build/bin/llama-bench"
Q="$WORK/r8b.Q4_K_M.gguf"; H="$WORK/r8b.F16.gguf"
mkdir -p "$OUT"
nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm,clocks.max.mem --format=csv | tee "$OUT/gpu.txt"
ls -la "$Q" "$H" | tee -a "$OUT/q4km.txt"
run() {  # name, command...
    local name=$1; shift
    echo "== $name: $*" | tee -a "$OUT/q4km.txt"
    "$@" 2>"/tmp/$name.err" | tee -a "$OUT/q4km.txt"
    tail -3 "/tmp/$name.err" >> "$OUT/q4km.txt"
}
# Alternated: llama.cpp, Folio, Folio, llama.cpp (the card is shared and its clocks drift).
run llama-q4km-1 "$LB" -m "$Q" -ngl 99 -fa 1 -p 512 -n 128 -r 3
run folio-q4km-tg-1 "$F" bench -m "$Q" --device cuda -p 0 -n 128 -r 3
run folio-q4km-pp-1 "$F" bench -m "$Q" --device cuda -p 512 -n 0 -r 3
run folio-q4km-tg-2 "$F" bench -m "$Q" --device cuda -p 0 -n 128 -r 3
run llama-q4km-2 "$LB" -m "$Q" -ngl 99 -fa 1 -p 512 -n 128 -r 3
# The verify pass's shape: n rows of one sequence from an empty cache (pp n), n = 1 ... 8.
for n in 1 2 3 5 8; do run "folio-q4km-rows-$n" "$F" bench -m "$Q" --device cuda -p "$n" -n 0 -r 10; done
# The F16 file beside llama.cpp (the F16 row of the table, on a file rather than dummy weights).
run llama-f16 "$LB" -m "$H" -ngl 99 -fa 1 -p 0 -n 128 -r 3
run folio-f16 "$F" bench -m "$H" --device cuda -p 0 -n 128 -r 3
