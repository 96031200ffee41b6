#!/usr/bin/env python3
"""Imatrix goldens for tests/quant: llama.cpp's importance matrix, and what
llama-quantize makes with it.

From a bench run (bench/quant/compare_llamacpp.sh on SmolLM2's F32 GGUF, which
ran llama-imatrix on Folio's default calibration text, 16 chunks of 512, and
llama-quantize --imatrix ... Q4_K_M), this keeps three of llama-imatrix's
entries, copied value for value with its metadata into a small imatrix GGUF
(tests/data/quant/llama_imatrix_smollm2_3.gguf), and records the hash
(weighted-sum-64, as make_quant_recipe_goldens.py) of llama-quantize's bytes
for those three tensors: a Q6_K, a Q4_K and a Q5_0 (576-column fallback) one.
The test reads the file as llama.cpp's and quantizes the three tensors with it.

Made with:

    .venv/bin/python tools/make_imatrix_goldens.py /work/quantdata/bench-smollm2 tests/data/quant
"""
import json
import os
import sys

import numpy as np
import gguf

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from make_quant_recipe_goldens import weighted_sum_64  # noqa: E402

TENSORS = ["blk.0.ffn_down.weight", "blk.4.ffn_down.weight", "blk.0.attn_q.weight"]


def main() -> None:
    bench, out_dir = sys.argv[1], sys.argv[2]
    src = gguf.GGUFReader(os.path.join(bench, "llama.imatrix.gguf"))
    w = gguf.GGUFWriter(os.path.join(out_dir, "llama_imatrix_smollm2_3.gguf"), arch="imatrix")
    # GGUFWriter adds general.architecture; llama.cpp's files have general.type instead (kept as well).
    w.add_type("imatrix")
    w.add_array("imatrix.datasets", [bytes(src.fields["imatrix.datasets"].parts[i]).decode()
                                     for i in src.fields["imatrix.datasets"].data])
    w.add_uint32("imatrix.chunk_count", int(src.fields["imatrix.chunk_count"].parts[-1][0]))
    w.add_uint32("imatrix.chunk_size", int(src.fields["imatrix.chunk_size"].parts[-1][0]))
    tensors = {t.name: t for t in src.tensors}
    for name in TENSORS:
        for suffix in (".in_sum2", ".counts"):
            t = tensors[name + suffix]
            w.add_tensor(name + suffix, np.asarray(t.data, dtype=np.float32).reshape(list(reversed(t.shape.tolist()))))
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    quantized = gguf.GGUFReader(os.path.join(bench, "llama.Q4_K_M.imatrix.gguf"))
    q = {t.name: t for t in quantized.tensors}
    golden = {"generator": "tools/make_imatrix_goldens.py", "imatrix": "llama_imatrix_smollm2_3.gguf",
              "source_model": "SmolLM2-135M-Instruct.Q4_1.gguf (dequantized: the F32 GGUF's values)",
              "tensors": {n: {"type": q[n].tensor_type.name, "hash": str(weighted_sum_64(q[n].data))} for n in TENSORS}}
    with open(os.path.join(out_dir, "imatrix_goldens.json"), "w") as f:
        json.dump(golden, f, indent=1)
        f.write("\n")


if __name__ == "__main__":
    main()
