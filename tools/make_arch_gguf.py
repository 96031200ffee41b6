#!/usr/bin/env python3
"""Small random-weight GGUFs of the architectures Folio runs, for goldens from llama.cpp.

Each file has its family's real metadata keys and tensor names, F32 weights
drawn from a fixed seed (so the same command writes the same bytes: the tests
regenerate the files instead of committing them, and check the sha256 that the
goldens record), and SmolLM2's real vocabulary, merges and chat template
(taken from the test model), so prompts tokenize as real text.

    .venv/bin/python tools/make_arch_gguf.py FAMILY OUT.gguf [--hf-config CONFIG.json]
        [--vocab-from models/SmolLM2-135M-Instruct.Q4_1.gguf]

Families:
  llama31  `llama`, Llama 3.1/3.2 style: GQA, tied embeddings, rope_freqs.weight
           (the "llama3" RoPE frequency factors, computed as convert_hf_to_gguf
           does from factor 8, low_freq_factor 1, high_freq_factor 4 and an
           original context of 512 instead of 8192, so that the prompts'
           positions (< 256) turn the pairs the factors slow down by a
           radian or more: Llama 3.1's shape, 8 pairs of 32 at 1, 3 blended,
           21 at 8; 4 heads of 64 on 64-wide embeddings)
  qwen3    `qwen3`: per-head Q/K RMSNorm weights, no biases, key_length 64 on
           64-wide embeddings (head_dim != n_embd / n_head, as in real Qwen3)
  qwen3yarn  `qwen3` with YaRN (rope.scaling.type yarn, factor 4, original
           context 256: the pairs below 10 blend extrapolation in, q.k scaled
           by (1 + 0.1 ln 4)^2), other weights

  gemma2   `gemma2`: pre and post norms on both sub-blocks, GeGLU, even layers
           sliding over 16 tokens (so the prompts cross the window), attention
           and final soft-capping at 2 / 15 (the real keys, with values low
           enough that these weights' scores (std ~1) and logits (std ~8)
           reach them; Gemma 2's 50 / 30 would go untested); 26 layers, the
           layer count llama.cpp knows as Gemma 2 2B (its attention scale rule
           depends on the model size)

  phi3     `phi3`, Phi-3 128k style: fused attn_qkv and ffn_up (gate rows, then
           up: 2 * n_ff), split-half RoPE, LongRoPE (rope_factors_long /
           rope_factors_short, rope.scaling.original_context_length 256 and
           rope.scaling.attn_factor as convert_hf_to_gguf computes it for a
           2048 context: sqrt(1 + ln 8 / ln 256)), so llama.cpp at n_ctx 512
           takes the long factors and at 256 the short ones; both sets move the
           prompts' angles by radians (long 1 -> 8, short 1 -> 1.5 over the
           32 pairs); attention.sliding_window 16, which llama.cpp ignores for
           phi3 (so must we); 2 heads of 64 on 128-wide embeddings, GQA 2/1,
           tied embeddings (an output.weight would double the file past what
           the GPU machine's carry takes)

  qwen3moe `qwen3moe`: the qwen3 block with a mixture of experts in every
           layer: 8 experts of expert_feed_forward_length 128, 2 used per
           token (expert_count, expert_used_count), ffn_gate_inp router and
           3-D ffn_{gate,up,down}_exps tensors; feed_forward_length 192 is
           written as the real files carry it (their dense width, unused)
  mixtral  `llama` with experts, Mixtral style: 8 experts of
           feed_forward_length 128 (Mixtral has no expert_feed_forward_length),
           2 used; 4 heads of 16 on 64-wide embeddings, GQA 4/2, an untied
           output.weight as Mixtral has (N(0, 1), as the tied families' head)
           Both routers are drawn with std 4/sqrt(n_embd) (router logits of
           std ~4), so the second and third experts of a token are rarely
           near a tie that rounding could flip.

llama31 and qwen3 are 4 layers, all GQA 4/2, ~16 MB (the 49152 x 64
embedding is most of it; gemma2 ~23 MB).

--hf-config also writes the Hugging Face config.json of the same model
(LlamaForCausalLM with rope_scaling llama3; Qwen3ForCausalLM; Gemma2ForCausalLM
in transformers 4's form, whose HF norms would be stored as w - 1; Phi3ForCausalLM
with rope_scaling longrope), for the test
that both forms map to the same description.

Weights: N(0, 1/in_features) matrices (activations stay O(1) through the
layers, so the logits are peaked and greedy choices are not near-ties),
N(0, 1) embeddings, norms 1 + N(0, 0.1^2).
"""
from __future__ import annotations

import argparse
import json
import math
import sys

import numpy as np
import gguf

FAMILIES = {
    # arch, n_embd, n_layer, n_head, n_head_kv, head_dim, n_ff, rope_theta, rms_eps, seed
    "llama31": ("llama", 64, 4, 4, 2, 64, 192, 500000.0, 1e-5, 31),
    "qwen3": ("qwen3", 64, 4, 4, 2, 64, 192, 1000000.0, 1e-6, 3),
    "qwen3yarn": ("qwen3", 64, 4, 4, 2, 64, 192, 1000000.0, 1e-6, 37),
    "gemma2": ("gemma2", 64, 26, 4, 2, 64, 192, 10000.0, 1e-6, 2),
    "phi3": ("phi3", 128, 4, 2, 1, 64, 192, 10000.0, 1e-5, 35),
    "qwen3moe": ("qwen3moe", 64, 4, 4, 2, 64, 192, 1000000.0, 1e-6, 30),
    "mixtral": ("llama", 64, 4, 4, 2, 16, 128, 1000000.0, 1e-5, 8),
}
GEMMA2_WINDOW = 16
GEMMA2_ATTN_SOFTCAP, GEMMA2_FINAL_SOFTCAP = 2.0, 15.0  # Gemma 2's are 50 and 30: never reached by these weights
LLAMA3_ROPE = {"rope_type": "llama3", "factor": 8.0, "low_freq_factor": 1.0, "high_freq_factor": 4.0,
               "original_max_position_embeddings": 512}
CONTEXT = 2048
# Mixture-of-experts families: (expert_count, expert_used_count, expert width or None = feed_forward_length)
MOE = {"qwen3moe": (8, 2, 128), "mixtral": (8, 2, None)}
ROUTER_STD = 4.0
PHI3_ORIG_CONTEXT, PHI3_WINDOW = 256, 16
# YaRN as Qwen's long-context configs ask for it (theirs: factor 4 over 32768), over a 256-token original context:
# pairs 0..9 of 32 blend extrapolation into the interpolation, and every q.k is scaled by (1 + 0.1 ln 4)^2.
YARN_FACTOR, YARN_ORIG_CONTEXT = 4.0, 256


def phi3_longrope_factors(n_pairs: int) -> tuple[np.ndarray, np.ndarray]:
    """LongRoPE-shaped divisors: near 1 for the fast pairs, growing towards the slow ones."""
    ramp = np.arange(n_pairs, dtype=np.float64) / (n_pairs - 1)
    long = 1.0 + 7.0 * ramp ** 1.5
    short = 1.0 + 0.5 * ramp
    return long.astype(np.float32), short.astype(np.float32)


def llama3_rope_factors(theta: float, dim: int, rope: dict) -> np.ndarray:
    """convert_hf_to_gguf's LlamaModel rope_freqs, in float32 as its torch code computes them."""
    freqs = np.float32(1.0) / (np.float32(theta) ** (np.arange(0, dim, 2, dtype=np.float32) / np.float32(dim)))
    factor = rope["factor"]
    low, high = rope["low_freq_factor"], rope["high_freq_factor"]
    old_context = rope["original_max_position_embeddings"]
    low_wavelen, high_wavelen = old_context / low, old_context / high
    out = []
    for freq in freqs:
        wavelen = np.float32(2 * math.pi) / freq
        if wavelen < high_wavelen:
            out.append(1.0)
        elif wavelen > low_wavelen:
            out.append(factor)
        else:
            smooth = (np.float32(old_context) / wavelen - np.float32(low)) / np.float32(high - low)
            out.append(np.float32(1) / ((np.float32(1) - smooth) / np.float32(factor) + smooth))
    return np.array(out, dtype=np.float32)


def copy_vocabulary(w: gguf.GGUFWriter, path: str) -> int:
    r = gguf.GGUFReader(path)
    f = r.fields
    tokens = f["tokenizer.ggml.tokens"].contents()
    w.add_tokenizer_model(f["tokenizer.ggml.model"].contents())
    w.add_tokenizer_pre(f["tokenizer.ggml.pre"].contents())
    w.add_token_list(tokens)
    w.add_token_types(f["tokenizer.ggml.token_type"].contents())
    w.add_token_merges(f["tokenizer.ggml.merges"].contents())
    w.add_bos_token_id(f["tokenizer.ggml.bos_token_id"].contents())
    w.add_eos_token_id(f["tokenizer.ggml.eos_token_id"].contents())
    w.add_unk_token_id(f["tokenizer.ggml.unknown_token_id"].contents())
    w.add_pad_token_id(f["tokenizer.ggml.padding_token_id"].contents())
    w.add_add_bos_token(f["tokenizer.ggml.add_bos_token"].contents())
    w.add_add_space_prefix(f["tokenizer.ggml.add_space_prefix"].contents())
    w.add_chat_template(f["tokenizer.chat_template"].contents())
    return len(tokens)


def hf_config(family: str, n_vocab: int) -> dict:
    arch, n_embd, n_layer, n_head, n_head_kv, head_dim, n_ff, theta, eps, _ = FAMILIES[family]
    config = {
        "architectures": ["LlamaForCausalLM" if arch == "llama" else "Qwen3ForCausalLM"],  # gemma2: below
        "model_type": arch,
        "vocab_size": n_vocab,
        "hidden_size": n_embd,
        "num_hidden_layers": n_layer,
        "num_attention_heads": n_head,
        "num_key_value_heads": n_head_kv,
        "head_dim": head_dim,
        "intermediate_size": n_ff,
        "max_position_embeddings": CONTEXT,
        "rms_norm_eps": eps,
        "rope_theta": theta,
        "hidden_act": "silu",
        "tie_word_embeddings": True,
        "torch_dtype": "float32",
    }
    if family == "llama31":
        config["rope_scaling"] = dict(LLAMA3_ROPE)
    elif family == "gemma2":
        config.update({"architectures": ["Gemma2ForCausalLM"], "hidden_act": "gelu_pytorch_tanh",
                       "hidden_activation": "gelu_pytorch_tanh", "query_pre_attn_scalar": head_dim,
                       "sliding_window": GEMMA2_WINDOW, "attn_logit_softcapping": GEMMA2_ATTN_SOFTCAP,
                       "final_logit_softcapping": GEMMA2_FINAL_SOFTCAP})
    elif family == "qwen3yarn":
        config.update({"attention_bias": False, "use_sliding_window": False,
                       "rope_scaling": {"rope_type": "yarn", "factor": YARN_FACTOR,
                                        "original_max_position_embeddings": YARN_ORIG_CONTEXT}})
    elif family == "phi3":
        long, short = phi3_longrope_factors(head_dim // 2)
        config.update({"architectures": ["Phi3ForCausalLM"], "attention_bias": False,
                       "original_max_position_embeddings": PHI3_ORIG_CONTEXT, "sliding_window": PHI3_WINDOW,
                       "partial_rotary_factor": 1.0,
                       "rope_scaling": {"type": "longrope", "long_factor": [float(f) for f in long],
                                        "short_factor": [float(f) for f in short]}})
    else:
        config.update({"attention_bias": False, "use_sliding_window": False, "rope_scaling": None})
    return config


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("family", choices=sorted(FAMILIES))
    ap.add_argument("out")
    ap.add_argument("--vocab-from", default="models/SmolLM2-135M-Instruct.Q4_1.gguf")
    ap.add_argument("--hf-config")
    a = ap.parse_args()
    if a.hf_config and a.family in MOE:
        ap.error("--hf-config: no Hugging Face form is written for the mixture-of-experts families")
    arch, n_embd, n_layer, n_head, n_head_kv, head_dim, n_ff, theta, eps, seed = FAMILIES[a.family]

    w = gguf.GGUFWriter(a.out, arch)
    # Not "...phi3": llama.cpp gives a model whose name says phi-3/phi3 Phi-3's token attributes,
    # which SmolLM2's vocabulary lacks (its loader throws).
    w.add_name("folio-random-longrope" if a.family == "phi3" else f"folio-random-{a.family}")
    w.add_context_length(CONTEXT)
    w.add_embedding_length(n_embd)
    w.add_block_count(n_layer)
    w.add_feed_forward_length(n_ff)
    w.add_head_count(n_head)
    w.add_head_count_kv(n_head_kv)
    w.add_key_length(head_dim)
    w.add_value_length(head_dim)
    w.add_rope_freq_base(theta)
    w.add_rope_dimension_count(head_dim)
    w.add_layer_norm_rms_eps(eps)
    w.add_file_type(gguf.LlamaFileType.ALL_F32)
    n_vocab = copy_vocabulary(w, a.vocab_from)
    w.add_vocab_size(n_vocab)
    if a.family in MOE:
        n_expert, n_expert_used, expert_ff = MOE[a.family]
        w.add_expert_count(n_expert)
        w.add_expert_used_count(n_expert_used)
        if expert_ff is not None:
            w.add_expert_feed_forward_length(expert_ff)
    if arch == "phi3":
        scale = CONTEXT / PHI3_ORIG_CONTEXT
        w.add_rope_scaling_orig_ctx_len(PHI3_ORIG_CONTEXT)
        w.add_rope_scaling_attn_factors(math.sqrt(1 + math.log(scale) / math.log(PHI3_ORIG_CONTEXT)))
        w.add_sliding_window(PHI3_WINDOW)
    if a.family == "qwen3yarn":
        w.add_rope_scaling_type(gguf.RopeScalingType.YARN)
        w.add_rope_scaling_factor(YARN_FACTOR)
        w.add_rope_scaling_orig_ctx_len(YARN_ORIG_CONTEXT)
    if arch == "gemma2":
        w.add_sliding_window(GEMMA2_WINDOW)
        w.add_attn_logit_softcapping(GEMMA2_ATTN_SOFTCAP)
        w.add_final_logit_softcapping(GEMMA2_FINAL_SOFTCAP)

    rng = np.random.default_rng(seed)

    def matrix(n_out: int, n_in: int, std: float | None = None) -> np.ndarray:
        s = std if std is not None else 1.0 / math.sqrt(n_in)
        return (rng.standard_normal((n_out, n_in), dtype=np.float32) * np.float32(s)).astype(np.float32)

    def norm(n: int) -> np.ndarray:
        return (np.float32(1) + rng.standard_normal(n, dtype=np.float32) * np.float32(0.1)).astype(np.float32)

    # numpy shapes are (out, in): gguf-py reverses them into GGML order.
    w.add_tensor("token_embd.weight", matrix(n_vocab, n_embd, 1.0))
    if a.family == "llama31":
        w.add_tensor("rope_freqs.weight", llama3_rope_factors(theta, head_dim, LLAMA3_ROPE))
    if arch == "phi3":
        long, short = phi3_longrope_factors(head_dim // 2)
        w.add_tensor("rope_factors_long.weight", long)
        w.add_tensor("rope_factors_short.weight", short)
    for i in range(n_layer):
        b = f"blk.{i}."
        w.add_tensor(b + "attn_norm.weight", norm(n_embd))
        if arch == "phi3":
            w.add_tensor(b + "attn_qkv.weight", matrix((n_head + 2 * n_head_kv) * head_dim, n_embd))
            w.add_tensor(b + "attn_output.weight", matrix(n_embd, n_head * head_dim))
            w.add_tensor(b + "ffn_norm.weight", norm(n_embd))
            w.add_tensor(b + "ffn_up.weight", matrix(2 * n_ff, n_embd))  # gate rows, then up rows
            w.add_tensor(b + "ffn_down.weight", matrix(n_embd, n_ff))
            continue
        w.add_tensor(b + "attn_q.weight", matrix(n_head * head_dim, n_embd))
        w.add_tensor(b + "attn_k.weight", matrix(n_head_kv * head_dim, n_embd))
        w.add_tensor(b + "attn_v.weight", matrix(n_head_kv * head_dim, n_embd))
        if arch in ("qwen3", "qwen3moe"):
            w.add_tensor(b + "attn_q_norm.weight", norm(head_dim))
            w.add_tensor(b + "attn_k_norm.weight", norm(head_dim))
        w.add_tensor(b + "attn_output.weight", matrix(n_embd, n_head * head_dim))
        if arch == "gemma2":
            w.add_tensor(b + "post_attention_norm.weight", norm(n_embd))
        w.add_tensor(b + "ffn_norm.weight", norm(n_embd))
        if a.family in MOE:
            n_expert, _, expert_ff = MOE[a.family]
            ff = expert_ff or n_ff
            # numpy (n_expert, out, in): GGML [in, out, n_expert], as convert_hf_to_gguf stacks them.
            w.add_tensor(b + "ffn_gate_inp.weight", matrix(n_expert, n_embd, ROUTER_STD / math.sqrt(n_embd)))
            w.add_tensor(b + "ffn_gate_exps.weight", np.stack([matrix(ff, n_embd) for _ in range(n_expert)]))
            w.add_tensor(b + "ffn_up_exps.weight", np.stack([matrix(ff, n_embd) for _ in range(n_expert)]))
            w.add_tensor(b + "ffn_down_exps.weight", np.stack([matrix(n_embd, ff) for _ in range(n_expert)]))
            continue
        w.add_tensor(b + "ffn_gate.weight", matrix(n_ff, n_embd))
        w.add_tensor(b + "ffn_up.weight", matrix(n_ff, n_embd))
        w.add_tensor(b + "ffn_down.weight", matrix(n_embd, n_ff))
        if arch == "gemma2":
            w.add_tensor(b + "post_ffw_norm.weight", norm(n_embd))
    w.add_tensor("output_norm.weight", norm(n_embd))
    if a.family == "mixtral":
        # N(0, 1) as the tied families' head (the embedding): logits of std ~8, greedy far from ties.
        w.add_tensor("output.weight", matrix(n_vocab, n_embd, 1.0))
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    print(f"wrote {a.out}", file=sys.stderr)
    if a.hf_config:
        with open(a.hf_config, "w", encoding="utf-8") as f:
            json.dump(hf_config(a.family, n_vocab), f, indent=2)
            f.write("\n")
        print(f"wrote {a.hf_config}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
