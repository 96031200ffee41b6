#!/usr/bin/env python3
"""Turn a GGUF `llama` model into a Hugging Face model folder.

The HF test fixture is made from the GGUF test model, since no model hub is
reachable: every tensor is dequantized to F32 (exact: Q4_1/Q8_0 values are
representable), Q and K rows are put back from GGUF's interleaved-pair RoPE
order into Hugging Face's rotate-half order, and the folder gets config.json,
tokenizer.json + tokenizer_config.json (tools/reference_tokenizer.py),
generation_config.json and the weights as one model.safetensors or, with
--shards N, N shards + model.safetensors.index.json.

The fixture models/SmolLM2-135M-Instruct-hf/ (about 540 MB, git-ignored) is
made by scripts/fetch-models.sh with:

    .venv/bin/python tools/gguf_to_hf.py models/SmolLM2-135M-Instruct.Q4_1.gguf \
        models/SmolLM2-135M-Instruct-hf --shards 2

Only gguf, numpy, safetensors and tokenizers are used (no torch).
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import sys

import numpy as np
import gguf
from safetensors.numpy import save_file

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from reference_tokenizer import hf_tokenizer_for_gguf, tokenizer_config_for_gguf  # noqa: E402

DEFAULT_GGUF = "models/SmolLM2-135M-Instruct.Q4_1.gguf"
DEFAULT_OUT = "models/SmolLM2-135M-Instruct-hf"

# GGUF tensor name -> Hugging Face name (llama). "{}" is the layer index.
LAYER_NAMES = {
    "attn_q.weight": "self_attn.q_proj.weight",
    "attn_k.weight": "self_attn.k_proj.weight",
    "attn_v.weight": "self_attn.v_proj.weight",
    "attn_output.weight": "self_attn.o_proj.weight",
    "ffn_gate.weight": "mlp.gate_proj.weight",
    "ffn_up.weight": "mlp.up_proj.weight",
    "ffn_down.weight": "mlp.down_proj.weight",
    "attn_norm.weight": "input_layernorm.weight",
    "ffn_norm.weight": "post_attention_layernorm.weight",
}
MODEL_NAMES = {
    "token_embd.weight": "model.embed_tokens.weight",
    "output_norm.weight": "model.norm.weight",
    "output.weight": "lm_head.weight",
}


def hf_name(gguf_name: str) -> str:
    if gguf_name in MODEL_NAMES:
        return MODEL_NAMES[gguf_name]
    parts = gguf_name.split(".", 2)
    if len(parts) == 3 and parts[0] == "blk" and parts[1].isdigit() and parts[2] in LAYER_NAMES:
        return f"model.layers.{parts[1]}.{LAYER_NAMES[parts[2]]}"
    raise ValueError(f"no Hugging Face name for GGUF tensor {gguf_name!r}")


# llama.cpp's convert_hf_to_gguf.py LlamaModel.permute: within each head, HF's
# rows [first half | second half] become interleaved pairs (r0, r_{d/2}, r1, ...).
def permute(w: np.ndarray, n_head: int) -> np.ndarray:
    return w.reshape(n_head, 2, w.shape[0] // n_head // 2, *w.shape[1:]).swapaxes(1, 2).reshape(w.shape)


def unpermute(w: np.ndarray, n_head: int) -> np.ndarray:
    return w.reshape(n_head, w.shape[0] // n_head // 2, 2, *w.shape[1:]).swapaxes(1, 2).reshape(w.shape)


def self_check_permutation() -> None:
    """permute and unpermute are inverses, and neither is the identity."""
    rng = np.random.default_rng(0)
    for n_head, head_dim, cols in ((9, 64, 5), (3, 64, 7), (2, 4, 3)):
        w = rng.standard_normal((n_head * head_dim, cols)).astype(np.float32)
        assert np.array_equal(permute(unpermute(w, n_head), n_head), w)
        assert np.array_equal(unpermute(permute(w, n_head), n_head), w)
        assert not np.array_equal(unpermute(w, n_head), w)
    # One head of 4 rows [a, b, c, d] (rotate-half pairs (a,c), (b,d)) -> GGUF [a, c, b, d].
    rows = np.arange(4, dtype=np.float32).reshape(4, 1)
    assert permute(rows, 1).ravel().tolist() == [0, 2, 1, 3]
    # The point of it all: rotate-half RoPE on HF rows gives the same attention
    # scores as interleaved-pair RoPE on the permuted rows.
    n_head, head_dim, n_embd = 2, 8, 6
    wq = rng.standard_normal((n_head * head_dim, n_embd))
    wk = rng.standard_normal((n_head * head_dim, n_embd))
    x_q, x_k = rng.standard_normal(n_embd), rng.standard_normal(n_embd)
    for pos_q, pos_k in ((5, 2), (17, 17)):
        hf = rope_rotate_half(wq @ x_q, pos_q, head_dim) * rope_rotate_half(wk @ x_k, pos_k, head_dim)
        gg = (rope_interleaved(permute(wq, n_head) @ x_q, pos_q, head_dim)
              * rope_interleaved(permute(wk, n_head) @ x_k, pos_k, head_dim))
        for h in range(n_head):
            head = slice(h * head_dim, (h + 1) * head_dim)
            assert np.isclose(hf[head].sum(), gg[head].sum()), "RoPE conventions disagree"


def _rope_angles(pos: int, head_dim: int, base: float = 10000.0) -> np.ndarray:
    return pos * base ** (-np.arange(0, head_dim, 2) / head_dim)


def rope_rotate_half(v: np.ndarray, pos: int, head_dim: int) -> np.ndarray:
    """Hugging Face: dimension i rotates with i + head_dim/2."""
    out = v.reshape(-1, head_dim).copy()
    a = _rope_angles(pos, head_dim)
    lo, hi = out[:, : head_dim // 2].copy(), out[:, head_dim // 2:].copy()
    out[:, : head_dim // 2] = lo * np.cos(a) - hi * np.sin(a)
    out[:, head_dim // 2:] = hi * np.cos(a) + lo * np.sin(a)
    return out.ravel()


def rope_interleaved(v: np.ndarray, pos: int, head_dim: int) -> np.ndarray:
    """GGML's normal mode: dimensions 2i and 2i+1 rotate together."""
    out = v.reshape(-1, head_dim).copy()
    a = _rope_angles(pos, head_dim)
    even, odd = out[:, 0::2].copy(), out[:, 1::2].copy()
    out[:, 0::2] = even * np.cos(a) - odd * np.sin(a)
    out[:, 1::2] = odd * np.cos(a) + even * np.sin(a)
    return out.ravel()


def field(reader: gguf.GGUFReader, key: str, default=None):
    f = reader.fields.get(key)
    return default if f is None else f.contents()


def float32_text(value: float) -> float:
    """The shortest decimal that reads back as the same float32 (1e-05, not 9.99e-06)."""
    return float(str(np.float32(value)))


def config_json(reader: gguf.GGUFReader, tied: bool) -> dict:
    arch = field(reader, "general.architecture")
    if arch != "llama":
        raise ValueError(f"only llama GGUF files are converted (this one is {arch!r})")
    n_embd = int(field(reader, "llama.embedding_length"))
    n_head = int(field(reader, "llama.attention.head_count"))
    head_dim = int(field(reader, "llama.attention.key_length", n_embd // n_head))
    tokens = reader.fields["tokenizer.ggml.tokens"]
    config = {
        "architectures": ["LlamaForCausalLM"],
        "model_type": "llama",
        "vocab_size": int(field(reader, "llama.vocab_size", len(tokens.data))),
        "hidden_size": n_embd,
        "intermediate_size": int(field(reader, "llama.feed_forward_length")),
        "num_hidden_layers": int(field(reader, "llama.block_count")),
        "num_attention_heads": n_head,
        "num_key_value_heads": int(field(reader, "llama.attention.head_count_kv", n_head)),
        "head_dim": head_dim,
        "max_position_embeddings": int(field(reader, "llama.context_length")),
        "rms_norm_eps": float32_text(field(reader, "llama.attention.layer_norm_rms_epsilon")),
        "rope_theta": float32_text(field(reader, "llama.rope.freq_base", 10000.0)),
        "rope_scaling": None,
        "hidden_act": "silu",
        "attention_bias": False,
        "mlp_bias": False,
        "tie_word_embeddings": tied,
        "torch_dtype": "float32",
        "initializer_range": 0.02,
        "pretraining_tp": 1,
        "use_cache": True,
    }
    scale = field(reader, "llama.rope.scaling.factor")
    if field(reader, "llama.rope.scaling.type") == "linear" and scale:
        config["rope_scaling"] = {"rope_type": "linear", "factor": float32_text(scale)}
    for name, key in (("bos_token_id", "tokenizer.ggml.bos_token_id"),
                      ("eos_token_id", "tokenizer.ggml.eos_token_id"),
                      ("pad_token_id", "tokenizer.ggml.padding_token_id")):
        if key in reader.fields:
            config[name] = int(field(reader, key))
    return config


def hf_tensors(reader: gguf.GGUFReader, config: dict) -> dict[str, np.ndarray]:
    """Every tensor dequantized to F32, named and laid out as Hugging Face has it."""
    tensors = {}
    for t in reader.tensors:
        w = gguf.quants.dequantize(t.data, t.tensor_type).astype(np.float32, copy=False)
        # numpy's view of GGUF data is already [out_features, in_features], as HF stores it.
        w = w.reshape([int(d) for d in reversed(t.shape)])
        if t.name.endswith("attn_q.weight"):
            w = unpermute(w, config["num_attention_heads"])
        elif t.name.endswith("attn_k.weight"):
            w = unpermute(w, config["num_key_value_heads"])
        tensors[hf_name(t.name)] = np.ascontiguousarray(w)
    return tensors


def write_weights(tensors: dict[str, np.ndarray], out: str, shards: int) -> None:
    metadata = {"format": "pt"}
    if shards <= 1:
        save_file(tensors, os.path.join(out, "model.safetensors"), metadata=metadata)
        return
    names = list(tensors)
    total = sum(tensors[n].nbytes for n in names)
    groups: list[list[str]] = [[] for _ in range(shards)]
    done = 0
    for n in names:  # contiguous runs of about total/shards bytes, in model order
        groups[min(shards - 1, done * shards // total)].append(n)
        done += tensors[n].nbytes
    if any(not g for g in groups):
        raise ValueError(f"cannot split {len(names)} tensors into {shards} non-empty shards")
    weight_map = {}
    for i, group in enumerate(groups):
        file_name = f"model-{i + 1:05d}-of-{shards:05d}.safetensors"
        save_file({n: tensors[n] for n in group}, os.path.join(out, file_name), metadata=metadata)
        weight_map.update({n: file_name for n in group})
    index = {"metadata": {"total_size": total}, "weight_map": dict(sorted(weight_map.items()))}
    write_json(os.path.join(out, "model.safetensors.index.json"), index)


def write_json(path: str, value: dict) -> None:
    with open(path, "w", encoding="utf-8") as f:
        json.dump(value, f, ensure_ascii=False, indent=2)
        f.write("\n")


def convert(gguf_path: str, out: str, shards: int) -> None:
    self_check_permutation()
    reader = gguf.GGUFReader(gguf_path)
    names = {t.name for t in reader.tensors}
    tied = "output.weight" not in names
    config = config_json(reader, tied)

    # Written beside the destination, then renamed: a folder that exists is complete.
    tmp = out.rstrip("/") + ".partial"
    shutil.rmtree(tmp, ignore_errors=True)
    os.makedirs(tmp)
    write_json(os.path.join(tmp, "config.json"), config)
    generation = {k: config[k] for k in ("bos_token_id", "eos_token_id", "pad_token_id") if k in config}
    write_json(os.path.join(tmp, "generation_config.json"), generation)
    hf_tokenizer_for_gguf(gguf_path).save(os.path.join(tmp, "tokenizer.json"))
    write_json(os.path.join(tmp, "tokenizer_config.json"), tokenizer_config_for_gguf(gguf_path))
    write_weights(hf_tensors(reader, config), tmp, shards)

    shutil.rmtree(out, ignore_errors=True)
    os.rename(tmp, out)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("gguf", nargs="?", default=DEFAULT_GGUF, help=f"GGUF llama model (default {DEFAULT_GGUF})")
    parser.add_argument("out", nargs="?", default=DEFAULT_OUT, help=f"folder to write (default {DEFAULT_OUT})")
    parser.add_argument("--shards", type=int, default=1,
                        help="1: one model.safetensors; N > 1: N shards + model.safetensors.index.json")
    parser.add_argument("--self-check", action="store_true", help="only check permute/unpermute and exit")
    args = parser.parse_args()
    if args.self_check:
        self_check_permutation()
        print("gguf_to_hf: permutation self-check ok")
        return 0
    convert(args.gguf, args.out, args.shards)
    print(f"gguf_to_hf: wrote {args.out}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
