#!/usr/bin/env python3
"""Dequantization goldens for tests/format (folio::dequantize vs gguf-py).

Made with:

    .venv/bin/python tools/make_gguf_goldens.py models tests/data/format/dequant_goldens.json

Two kinds of cases, all computed by gguf.quants.dequantize (gguf 0.19.0):

* "tensors": for each test model and each tensor type in it, 2-3 real
  tensors (the first, the smallest and the largest of that type), each with
  its element count, a hash of the float32 result and a few sampled values.
* "blocks": for every type Folio supports, a few blocks of bytes with the
  expected float32 output in full: random raw blocks (any bit pattern, with
  the f16 scale fields kept finite) and, where gguf-py can quantize the type,
  quantized random normal data. These cover F16, BF16, Q4_0, Q5_1 and Q5_K,
  which neither model contains.

The hash ("weighted-sum-64") is sum_i bits_i * w_i mod 2^64 over the float32
bit patterns bits_i, with w_i = (2i + 1) * 0x9E3779B97F4A7C15 mod 2^64. The
weights are odd, so any single changed value changes the hash, and unlike
FNV-1a it vectorizes in numpy (SmolLM2's Q8_0 embedding has 28M values).
"""
import json
import os
import sys

import numpy as np
import gguf
from gguf import GGMLQuantizationType as T
from gguf.quants import dequantize, quantize

MODELS = ["SmolLM2-135M-Instruct.Q4_1.gguf", "gemma-3-270m-q4_k_m.gguf"]
SUPPORTED = [T.F32, T.F16, T.BF16, T.Q4_0, T.Q4_1, T.Q5_0, T.Q5_1, T.Q8_0, T.Q4_K, T.Q5_K, T.Q6_K]
GOLDEN_RATIO_64 = np.uint64(0x9E3779B97F4A7C15)
# Byte offsets of the f16 scale fields inside one block, per type.
F16_FIELDS = {
    T.Q4_0: [0], T.Q4_1: [0, 2], T.Q5_0: [0], T.Q5_1: [0, 2], T.Q8_0: [0],
    T.Q4_K: [0, 2], T.Q5_K: [0, 2], T.Q6_K: [208],
}


def weighted_sum_64(values: np.ndarray) -> int:
    bits = values.astype(np.float32, copy=False).reshape(-1).view(np.uint32)
    total = np.uint64(0)
    chunk = 1 << 20
    with np.errstate(over="ignore"):
        for start in range(0, bits.size, chunk):
            i = np.arange(start, min(start + chunk, bits.size), dtype=np.uint64)
            w = (np.uint64(2) * i + np.uint64(1)) * GOLDEN_RATIO_64
            total = total + np.sum(bits[start:start + i.size].astype(np.uint64) * w, dtype=np.uint64)
    return int(total)


def tensor_case(t) -> dict:
    values = dequantize(t.data, t.tensor_type).reshape(-1).astype(np.float32, copy=False)
    n = values.size
    picks = sorted({0, 1, 31, 32, 255, 256, 1000, n // 3, n // 2, n - 1} & set(range(n)))
    bits = values.view(np.uint32)
    return {
        "tensor": t.name,
        "type": t.tensor_type.name,
        "n_elements": int(n),
        "hash": f"{weighted_sum_64(values):016x}",
        "samples": [[int(i), int(bits[i])] for i in picks],
    }


def model_cases(path: str) -> list:
    reader = gguf.GGUFReader(path)
    by_type = {}
    for t in reader.tensors:
        by_type.setdefault(t.tensor_type, []).append(t)
    cases = []
    for qtype, tensors in sorted(by_type.items(), key=lambda kv: kv[0].value):
        chosen = {tensors[0].name: tensors[0]}
        for t in (min(tensors, key=lambda t: t.n_bytes), max(tensors, key=lambda t: t.n_bytes)):
            chosen.setdefault(t.name, t)
        for t in list(chosen.values())[:3]:
            cases.append(tensor_case(t))
    return cases


def raw_blocks(qtype, rng, n_blocks: int) -> bytes:
    block_elems, block_bytes = gguf.GGML_QUANT_SIZES[qtype]
    if qtype == T.F32:  # finite values only: NaN payloads are not what we test here
        return rng.standard_normal(n_blocks * 16).astype(np.float32).tobytes()
    data = bytearray(rng.integers(0, 256, size=n_blocks * block_bytes, dtype=np.uint8).tobytes())
    for b in range(n_blocks):
        for off in F16_FIELDS.get(qtype, []):
            scale = np.float16(rng.uniform(-0.05, 0.05)).tobytes()
            data[b * block_bytes + off: b * block_bytes + off + 2] = scale
    return bytes(data)


def block_case(qtype, data: bytes, origin: str) -> dict:
    arr = np.frombuffer(data, dtype=np.uint8)
    if qtype in (T.F16, T.BF16):
        arr = arr.copy()
    if qtype == T.F32:
        values = arr.view(np.float32)
    elif qtype == T.F16:
        values = dequantize(arr.view(np.float16), qtype)
    else:
        values = dequantize(arr.reshape(1, -1), qtype).reshape(-1)
    values = np.ascontiguousarray(values, dtype=np.float32)
    return {
        "type": qtype.name,
        "origin": origin,
        "n_elements": int(values.size),
        "data_hex": data.hex(),
        "expected_f32_hex": values.tobytes().hex(),
    }


def block_cases(rng) -> list:
    cases = []
    for qtype in SUPPORTED:
        block_elems, _ = gguf.GGML_QUANT_SIZES[qtype]
        n_blocks = 2 if block_elems == 256 else (8 if block_elems == 32 else 64)
        cases.append(block_case(qtype, raw_blocks(qtype, rng, n_blocks), "random raw blocks"))
    for qtype in (T.F16, T.BF16, T.Q4_0, T.Q4_1, T.Q5_0, T.Q5_1, T.Q8_0):
        data = (rng.standard_normal(256) * 0.02).astype(np.float32).reshape(1, 256)
        quantized = quantize(data, qtype)
        cases.append(block_case(qtype, np.ascontiguousarray(quantized).view(np.uint8).tobytes(), "gguf.quants.quantize of random normal data"))
    return cases


def main(argv):
    if len(argv) != 3:
        print(__doc__, file=sys.stderr)
        return 2
    models_dir, out_path = argv[1], argv[2]
    rng = np.random.default_rng(20261129)
    golden = {
        "generator": "tools/make_gguf_goldens.py with gguf " + getattr(gguf, "__version__", "0.19.0"),
        "hash": "weighted-sum-64",
        "models": {m: model_cases(os.path.join(models_dir, m)) for m in MODELS},
        "blocks": block_cases(rng),
    }
    with open(out_path, "w") as f:
        json.dump(golden, f, indent=1)
        f.write("\n")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
