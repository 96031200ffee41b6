#!/usr/bin/env python3
"""Goldens for the imatrix-weighted Q4_1 and Q5_1 quantizers: llama-quantize's bytes.

The three tensors of tests/data/quant/llama_imatrix_smollm2_3.gguf (llama-imatrix's
entries for SmolLM2, tools/make_imatrix_goldens.py), taken from SmolLM2's F32 GGUF
(the Q4_1 file's values) and perturbed as x * (1 + (i % 7) / 64) in float32, i the
flat index (exact in both numpy and C++; it moves the values off the 4-bit grid
they came from, so the offset search has work to do), are written into a copy of
that GGUF; llama-quantize --pure --imatrix quantizes the copy to Q4_1 and to Q5_1;
the weighted-sum-64 hash (make_quant_recipe_goldens.py) of each of the three
tensors is recorded. tests/quant/quant_models_test.cpp applies the same
perturbation to the Q4_1 file's dequantized values and quantizes them with the
same importance matrix.

Made with (llama.cpp tools: bench/quant/build_llamacpp.sh; the F32 GGUF:
tools/hf_folder_to_gguf.py, as its header says):

    .venv/bin/python tools/make_legacy_imatrix_goldens.py /work/llamacpp/build/bin \\
        /work/quantdata/SmolLM2-135M-Instruct-hf.F32.gguf /work/quantdata tests/data/quant
"""
import json
import os
import shutil
import subprocess
import sys

import numpy as np
import gguf

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from make_imatrix_goldens import TENSORS  # noqa: E402
from make_quant_recipe_goldens import weighted_sum_64  # noqa: E402

TYPES = ["Q4_1", "Q5_1"]


def perturbed(values: np.ndarray) -> np.ndarray:
    x = np.asarray(values, dtype=np.float32).reshape(-1)
    i = np.arange(x.size, dtype=np.int64)
    factor = np.float32(1) + (i % 7).astype(np.float32) / np.float32(64)
    return (x * factor).astype(np.float32)


def main() -> None:
    bin_dir, source, work, out_dir = sys.argv[1:5]
    imatrix = os.path.join(out_dir, "llama_imatrix_smollm2_3.gguf")
    copy = os.path.join(work, "smollm2-perturbed.F32.gguf")
    shutil.copyfile(source, copy)
    reader = gguf.GGUFReader(copy, "r+")
    for t in reader.tensors:
        if t.name in TENSORS:
            assert t.tensor_type == gguf.GGMLQuantizationType.F32, t.name
            t.data.reshape(-1)[:] = perturbed(t.data)
    del reader
    entries = []
    for qtype in TYPES:
        out = os.path.join(work, f"smollm2-perturbed.{qtype}.gguf")
        subprocess.run([os.path.join(bin_dir, "llama-quantize"), "--pure", "--imatrix", imatrix, copy, out, qtype, "2"],
                       check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        q = {t.name: t for t in gguf.GGUFReader(out).tensors}
        for name in TENSORS:
            assert q[name].tensor_type.name == qtype, (name, q[name].tensor_type.name)
            entries.append({"tensor": name, "type": qtype, "hash": str(weighted_sum_64(q[name].data))})
        os.remove(out)
    os.remove(copy)
    golden = {"generator": "tools/make_legacy_imatrix_goldens.py", "imatrix": "llama_imatrix_smollm2_3.gguf",
              "source_model": "SmolLM2-135M-Instruct.Q4_1.gguf (dequantized), each tensor x * (1 + (i % 7) / 64)",
              "quantized": entries}
    with open(os.path.join(out_dir, "legacy_imatrix_goldens.json"), "w") as f:
        json.dump(golden, f, indent=1)
        f.write("\n")


if __name__ == "__main__":
    main()
