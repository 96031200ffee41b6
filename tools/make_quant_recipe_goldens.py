#!/usr/bin/env python3
"""Goldens of llama-quantize's choices, for tests/quant.

Two files, both made by llama.cpp's own llama-quantize (built from the
llama.cpp tree inside the llama-cpp-python==0.3.36 sdist, CPU only) run on
the full-precision forms of the two test models:

  * tests/data/quant/recipe_goldens.json: for each preset (Q4_K_M, Q4_K_S,
    Q4_0, Q5_K_M, Q6_K, Q8_0) and model, the type llama-quantize gave every
    tensor, in the order it wrote them, and general.file_type.
  * tests/data/quant/kquant_goldens.json: for Q4_K, Q5_K, Q6_K, Q4_0, Q8_0
    run with --pure (every matrix the one type), a hash of each quantized
    tensor's bytes for a few tensors per model (whole rows of 256), so the
    test can check Folio's block quantizers byte for byte against
    llama.cpp's on real weights.

The full-precision forms (git-ignored, ~1.6 GB together) come from the
models in models/:

    .venv/bin/python tools/hf_folder_to_gguf.py models/SmolLM2-135M-Instruct-hf \
        models/SmolLM2-135M-Instruct.Q4_1.gguf $F32/SmolLM2-135M-Instruct-hf.F32.gguf
    .venv/bin/python tools/dequantize_gguf.py models/gemma-3-270m-q4_k_m.gguf \
        $F32/gemma-3-270m-q4_k_m.F32.gguf

Both are the shipped files' weights, dequantized by gguf-py (which Folio's
dequantize() matches bit for bit), so the test rebuilds the same float32
values from models/ without the big files.

Made with (llama.cpp built in /work/llamacpp/build, F32=/work/quantdata):

    .venv/bin/python tools/make_quant_recipe_goldens.py \
        --llama-quantize /work/llamacpp/build/bin/llama-quantize --f32-dir /work/quantdata \
        --work-dir /work/quantdata/recipes tests/data/quant
"""
import argparse
import json
import os
import subprocess

import numpy as np
import gguf

MODELS = {
    "SmolLM2-135M-Instruct.Q4_1.gguf": "SmolLM2-135M-Instruct-hf.F32.gguf",
    "gemma-3-270m-q4_k_m.gguf": "gemma-3-270m-q4_k_m.F32.gguf",
}
PRESETS = ["Q4_K_M", "Q4_K_S", "Q4_0", "Q5_K_M", "Q6_K", "Q8_0"]
PURE_TYPES = ["Q4_K", "Q5_K", "Q6_K", "Q4_0", "Q8_0"]
# Tensors whose bytes the K-quant golden hashes: whole-256 rows in both models.
GOLDEN_RATIO_64 = np.uint64(0x9E3779B97F4A7C15)


def weighted_sum_64(data: np.ndarray) -> int:
    values = np.asarray(data).reshape(-1).view(np.uint8).astype(np.uint64)
    i = np.arange(values.size, dtype=np.uint64)
    with np.errstate(over="ignore"):
        w = (np.uint64(2) * i + np.uint64(1)) * GOLDEN_RATIO_64
        return int(np.sum(values * w, dtype=np.uint64))


HASHED = ["blk.0.ffn_down.weight", "blk.1.ffn_down.weight", "blk.3.ffn_down.weight"]


def quantize(tool: str, src: str, dst: str, qtype: str, pure: bool) -> None:
    if os.path.exists(dst):
        return
    cmd = [tool] + (["--pure"] if pure else []) + [src, dst, qtype, "2"]
    subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--llama-quantize", required=True)
    ap.add_argument("--f32-dir", required=True)
    ap.add_argument("--work-dir", required=True)
    ap.add_argument("out_dir")
    a = ap.parse_args()
    os.makedirs(a.work_dir, exist_ok=True)

    recipes = {"generator": "tools/make_quant_recipe_goldens.py", "llama_cpp": "llama-cpp-python 0.3.36 sdist",
               "models": {}}
    kquants = {"generator": "tools/make_quant_recipe_goldens.py", "llama_cpp": "llama-cpp-python 0.3.36 sdist",
               "hash": "weighted-sum-64 of the tensor's bytes", "models": {}}
    for model, f32 in MODELS.items():
        src = os.path.join(a.f32_dir, f32)
        recipes["models"][model] = {}
        for preset in PRESETS:
            dst = os.path.join(a.work_dir, f"{f32}.{preset}.gguf")
            quantize(a.llama_quantize, src, dst, preset, pure=False)
            r = gguf.GGUFReader(dst)
            recipes["models"][model][preset] = {
                "file_type": int(r.fields["general.file_type"].parts[-1][0]),
                "tensors": [[t.name, t.tensor_type.name] for t in r.tensors],
            }
        kquants["models"][model] = {}
        for qtype in PURE_TYPES:
            dst = os.path.join(a.work_dir, f"{f32}.pure-{qtype}.gguf")
            quantize(a.llama_quantize, src, dst, qtype, pure=True)
            r = gguf.GGUFReader(dst)
            entry = {}
            for t in r.tensors:
                if t.name in HASHED and t.tensor_type.name == qtype:
                    entry[t.name] = str(weighted_sum_64(t.data))
            kquants["models"][model][qtype] = entry
    with open(os.path.join(a.out_dir, "recipe_goldens.json"), "w") as f:
        json.dump(recipes, f, indent=1)
        f.write("\n")
    with open(os.path.join(a.out_dir, "kquant_goldens.json"), "w") as f:
        json.dump(kquants, f, indent=1)
        f.write("\n")


if __name__ == "__main__":
    main()
