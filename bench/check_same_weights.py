#!/usr/bin/env python3
"""Checks that two model files hold the same weights, tensor by tensor, bit for bit.

  check_same_weights.py HF_FOLDER F32.gguf     a Hugging Face llama folder against its F32 GGUF
                                               (q/k rows permuted as GGUF's llama layout has them)
  check_same_weights.py QUANT.gguf F32.gguf    a quantized GGUF against an F32 copy
                                               (each tensor dequantized by gguf-py)

Used by bench/spec_vs_llamacpp.py's result file to show that Folio and llama.cpp
run the same model from their two files.
"""
import json
import os
import sys

import numpy as np
import gguf
from gguf.quants import dequantize

HF_NAMES = {"attn_q": "self_attn.q_proj", "attn_k": "self_attn.k_proj", "attn_v": "self_attn.v_proj",
            "attn_output": "self_attn.o_proj", "ffn_gate": "mlp.gate_proj", "ffn_up": "mlp.up_proj",
            "ffn_down": "mlp.down_proj", "attn_norm": "input_layernorm", "ffn_norm": "post_attention_layernorm"}


def permute(w, n_head):
    return w.reshape(n_head, 2, w.shape[0] // n_head // 2, *w.shape[1:]).swapaxes(1, 2).reshape(w.shape)


def hf_tensors(folder):
    from safetensors.numpy import load_file
    shards = sorted(set(json.load(open(os.path.join(folder, "model.safetensors.index.json")))["weight_map"].values()))
    out = {}
    for s in shards:
        out.update(load_file(os.path.join(folder, s)))
    cfg = json.load(open(os.path.join(folder, "config.json")))
    return out, cfg


def main():
    a, b = sys.argv[1], sys.argv[2]
    f32 = {t.name: t for t in gguf.GGUFReader(b).tensors}
    n = differ = 0
    if os.path.isdir(a):
        hf, cfg = hf_tensors(a)
        for name, t in f32.items():
            if name == "token_embd.weight": h = "model.embed_tokens.weight"
            elif name == "output_norm.weight": h = "model.norm.weight"
            else:
                _, layer, kind, _ = name.split(".")
                h = f"model.layers.{layer}.{HF_NAMES[kind]}.weight"
            want = hf[h].astype(np.float32)
            if "attn_q" in name: want = permute(want, cfg["num_attention_heads"])
            if "attn_k" in name: want = permute(want, cfg["num_key_value_heads"])
            got = np.asarray(t.data, dtype=np.float32).reshape(want.shape)
            n += 1
            if not np.array_equal(got, want): differ += 1; print("differs:", name)
        extra = len(hf) - n
    else:
        src = gguf.GGUFReader(a).tensors
        for t in src:
            want = dequantize(t.data, t.tensor_type).astype(np.float32).reshape(-1)
            got = np.asarray(f32[t.name].data, dtype=np.float32).reshape(-1)
            n += 1
            if f32[t.name].tensor_type != gguf.GGMLQuantizationType.F32 or not np.array_equal(got, want):
                differ += 1; print("differs:", t.name)
        extra = len(f32) - n
    print(f"{a} vs {b}: {n} tensors, {n - differ} bit-identical, {differ} differ, {extra} unmatched")
    return 1 if differ or extra else 0


if __name__ == "__main__":
    sys.exit(main())
