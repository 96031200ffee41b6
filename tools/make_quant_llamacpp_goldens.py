#!/usr/bin/env python3
"""llama.cpp's perplexity on Folio's quantized files, for tests/quant.

For each test model in models/, Folio quantizes it to Q4_K_M (`folio quantize
-m MODEL -o OUT --validate-chunks 0`), llama.cpp's own llama-perplexity (built
from the llama.cpp tree inside the llama-cpp-python==0.3.36 sdist, CPU) loads
the result and scores /usr/share/common-licenses/GPL-3 (-c 512, 4 chunks), and
the golden records that PPL (flash attention off: llama.cpp's plain softmax
path, as tools/make_perplexity_reference.py; on the CPU its flash-attention
path alone moves this PPL by ~0.5 %, SmolLM2 Q4_1: 18.336 on, 18.242 off,
Folio 18.184) with a hash of the file's tensor data
(weighted-sum-64 of all tensors' bytes in file order, as in
make_quant_recipe_goldens.py). The test quantizes again, checks the hash (so
llama.cpp scored exactly those bytes) and checks Folio's own PPL on the file
within 0.5 %.

llama-perplexity is used rather than llama-cpp-python's bindings because the
latter would build the same llama.cpp a second time (pip, from source);
the arithmetic is the same program's.

Made with (from the repository root):

    .venv/bin/python tools/make_quant_llamacpp_goldens.py --folio build-q/app/folio \
        --llama-perplexity /work/llamacpp/build/bin/llama-perplexity --work-dir /work/quantdata/ppl \
        tests/data/quant/llamacpp_ppl_goldens.json
"""
import argparse
import json
import os
import re
import subprocess

import numpy as np
import gguf

MODELS = ["SmolLM2-135M-Instruct.Q4_1.gguf", "gemma-3-270m-q4_k_m.gguf"]
TEXT = "/usr/share/common-licenses/GPL-3"
CHUNKS = 4
GOLDEN_RATIO_64 = np.uint64(0x9E3779B97F4A7C15)


def tensor_data_hash(path: str) -> int:
    r = gguf.GGUFReader(path)
    data = np.concatenate([np.asarray(t.data).reshape(-1).view(np.uint8) for t in r.tensors]).astype(np.uint64)
    total = np.uint64(0)
    with np.errstate(over="ignore"):
        for start in range(0, data.size, 1 << 24):
            i = np.arange(start, min(start + (1 << 24), data.size), dtype=np.uint64)
            total = total + np.sum(data[start:start + i.size] * ((np.uint64(2) * i + np.uint64(1)) * GOLDEN_RATIO_64),
                                   dtype=np.uint64)
    return int(total)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--folio", required=True)
    ap.add_argument("--llama-perplexity", required=True)
    ap.add_argument("--work-dir", required=True)
    ap.add_argument("out")
    a = ap.parse_args()
    os.makedirs(a.work_dir, exist_ok=True)
    golden = {"generator": "tools/make_quant_llamacpp_goldens.py", "text": TEXT, "n_ctx": 512, "chunks": CHUNKS,
              "preset": "Q4_K_M", "models": {}}
    for model in MODELS:
        out = os.path.join(a.work_dir, model + ".folio.Q4_K_M.gguf")
        subprocess.run([a.folio, "quantize", "-m", os.path.join("models", model), "-o", out, "--validate-chunks", "0",
                        "-t", "2"], check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        run = subprocess.run([a.llama_perplexity, "-m", out, "-f", TEXT, "-c", "512", "-b", "512", "--chunks", str(CHUNKS),
                              "-t", "2", "-fa", "off"], check=True, capture_output=True, text=True)
        ppl = float(re.findall(r"Final estimate: PPL = ([0-9.]+)", run.stdout + run.stderr)[-1])
        golden["models"][model] = {"tensor_data_hash": str(tensor_data_hash(out)), "llama_cpp_ppl": ppl}
    with open(a.out, "w") as f:
        json.dump(golden, f, indent=1)
        f.write("\n")


if __name__ == "__main__":
    main()
