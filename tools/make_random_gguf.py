#!/usr/bin/env python3
"""A GGUF of a real model's shape with random weights, for quantizer and engine speed and memory.

Not committed (llama-3-8b: 16 GB, llama-3.2-1b: 2.5 GB, qwen3-8b: 16 GB,
qwen3-30b-a3b: 61 GB in F16, ~17 GB in Q4_K). Made with:

    .venv/bin/python tools/make_random_gguf.py /work/quantdata/llama-3-8b-random.F16.gguf \
        [--shape llama-3.2-1b] [--no-vocab] [--type Q4_K] [--layers N]

Shapes (--shape, default llama-3-8b):
  llama-3-8b     `llama`: 32 layers, 4096 wide, 14336 FFN, 32 heads / 8 KV
                 heads of 128, 128256 tokens, untied output.
  llama-3.2-1b   `llama`: 16 layers, 2048 wide, 8192 FFN, 32 / 8 heads of 64,
                 tied embeddings.
  qwen3-8b       `qwen3`: 36 layers, 4096 wide, 12288 FFN, 32 / 8 heads of
                 128, 151936 tokens, untied output, 40960 context, RoPE base
                 1e6, RMS eps 1e-6; per layer also attn_q_norm / attn_k_norm
                 (F32, [128]).
  qwen3-30b-a3b  `qwen3moe`: 48 layers, 2048 wide, 32 / 4 heads of 128 (so
                 attn_q is 2048 -> 4096; attention.key_length / value_length
                 128), 151936 tokens, untied, 40960 context, RoPE base 1e6,
                 RMS eps 1e-6; 128 experts of 768 (expert_count 128,
                 expert_used_count 8, expert_feed_forward_length 768,
                 feed_forward_length 6144 as the real file carries), per layer
                 attn_q_norm / attn_k_norm, an F32 router ffn_gate_inp (GGUF
                 shape (2048, 128)) and 3-D ffn_gate_exps / ffn_up_exps
                 (2048, 768, 128) and ffn_down_exps (768, 2048, 128) in place
                 of the dense FFN.

--type F16 (default): matrices are N(0, 0.02) in F16. --type Q4_K: every
matrix (2-D, token_embd and output included, and the 3-D expert stacks) is
raw GGML Q4_K blocks made directly (nothing is quantized; gguf-py cannot
make K-quants): 144 bytes a 256 weights, random 6-bit scales / mins and
4-bit quants, d = s/128 and dmin = 7.5*s/128 with s = 1/sqrt(ne0), so the
weights come out of the order of 1/sqrt(fan-in) (general.file_type
MOSTLY_Q4_K_M, as llama-quantize --pure writes it). Either way norms are 1.0
in F32 and the qwen3moe router is N(0, 0.02) in F32.

--layers N writes only the first N blocks (block_count N), for a small file
of the shape for tests (e.g. a 2-layer qwen3-30b-a3b Q4_K file is ~1.05 GB).

The tokenizer is a placeholder SentencePiece vocabulary of the right size
(the file is for quantizing, not for generating text), or with --no-vocab
none at all (`tokenizer.ggml.model = none`, as llama.cpp's benchmark files
are; `folio bench` and `llama-bench` run it). Tensors are generated and
written one at a time (gguf-py's add_tensor_info / write_tensor_data), so
memory stays at one tensor (the biggest: token_embd / output, or a Q4_K
expert stack of ~113 MB).
"""
import argparse
from dataclasses import dataclass

import numpy as np
import gguf


@dataclass(frozen=True)
class Shape:
    arch: str
    n_vocab: int
    n_embd: int
    n_layer: int
    n_head: int
    n_head_kv: int
    n_ff: int  # feed_forward_length as the file carries it
    tied: bool
    head_dim: int = 0  # 0: n_embd / n_head, and no attention.key_length key
    n_ctx: int = 8192
    rope_base: float = 500000.0
    rms_eps: float = 1e-5
    qk_norm: bool = False
    n_expert: int = 0
    n_expert_used: int = 0
    n_ff_expert: int = 0


SHAPES = {
    "llama-3-8b": Shape("llama", 128256, 4096, 32, 32, 8, 14336, False),
    "llama-3.2-1b": Shape("llama", 128256, 2048, 16, 32, 8, 8192, True),
    "qwen3-8b": Shape("qwen3", 151936, 4096, 36, 32, 8, 12288, False, head_dim=128, n_ctx=40960,
                      rope_base=1e6, rms_eps=1e-6, qk_norm=True),
    "qwen3-30b-a3b": Shape("qwen3moe", 151936, 2048, 48, 32, 4, 6144, False, head_dim=128, n_ctx=40960,
                           rope_base=1e6, rms_eps=1e-6, qk_norm=True,
                           n_expert=128, n_expert_used=8, n_ff_expert=768),
}

# Tensor kinds: "norm" (F32 ones), "router" (F32 N(0, 0.02)), "matrix" (F16 or Q4_K).
# Shapes below are numpy order (outermost first); GGUF's ne order is the reverse.


def tensors(s: Shape, n_layer: int):
    hd = s.head_dim or s.n_embd // s.n_head
    yield "token_embd.weight", (s.n_vocab, s.n_embd), "matrix"
    for i in range(n_layer):
        b = f"blk.{i}."
        yield b + "attn_norm.weight", (s.n_embd,), "norm"
        yield b + "attn_q.weight", (s.n_head * hd, s.n_embd), "matrix"
        yield b + "attn_k.weight", (s.n_head_kv * hd, s.n_embd), "matrix"
        yield b + "attn_v.weight", (s.n_head_kv * hd, s.n_embd), "matrix"
        yield b + "attn_output.weight", (s.n_embd, s.n_head * hd), "matrix"
        if s.qk_norm:
            yield b + "attn_q_norm.weight", (hd,), "norm"
            yield b + "attn_k_norm.weight", (hd,), "norm"
        yield b + "ffn_norm.weight", (s.n_embd,), "norm"
        if s.n_expert:
            yield b + "ffn_gate_inp.weight", (s.n_expert, s.n_embd), "router"
            yield b + "ffn_gate_exps.weight", (s.n_expert, s.n_ff_expert, s.n_embd), "matrix"
            yield b + "ffn_up_exps.weight", (s.n_expert, s.n_ff_expert, s.n_embd), "matrix"
            yield b + "ffn_down_exps.weight", (s.n_expert, s.n_embd, s.n_ff_expert), "matrix"
        else:
            yield b + "ffn_gate.weight", (s.n_ff, s.n_embd), "matrix"
            yield b + "ffn_up.weight", (s.n_ff, s.n_embd), "matrix"
            yield b + "ffn_down.weight", (s.n_embd, s.n_ff), "matrix"
    yield "output_norm.weight", (s.n_embd,), "norm"
    if not s.tied:
        yield "output.weight", (s.n_vocab, s.n_embd), "matrix"


Q4_K = gguf.GGMLQuantizationType.Q4_K


def q4k_byte_shape(shape) -> tuple:
    return tuple(gguf.quants.quant_shape_to_byte_shape(shape, Q4_K))


def random_q4k(rng: np.random.Generator, shape) -> np.ndarray:
    """Raw Q4_K blocks of an element shape: uint8, last dimension the bytes of a row."""
    block_size, type_size = gguf.GGML_QUANT_SIZES[Q4_K]
    assert (block_size, type_size) == (256, 144)
    bshape = q4k_byte_shape(shape)
    data = rng.integers(0, 256, bshape, dtype=np.uint8)
    sc = 1.0 / np.sqrt(shape[-1])
    # block_q4_K: fp16 d, fp16 dmin, 12 bytes of 6-bit scales / mins, 128 bytes of 4-bit quants
    head = np.array([sc / 128, 7.5 * sc / 128], dtype=np.float16).view(np.uint8)
    data.reshape(-1, type_size)[:, 0:4] = head
    return data


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("path")
    ap.add_argument("--shape", default="llama-3-8b", choices=sorted(SHAPES))
    ap.add_argument("--no-vocab", action="store_true", help="tokenizer.ggml.model = none, no token list")
    ap.add_argument("--type", default="F16", choices=["F16", "Q4_K"], help="type of the matrices (norms stay F32)")
    ap.add_argument("--layers", type=int, default=None, help="number of blocks (default: the shape's)")
    a = ap.parse_args()
    s = SHAPES[a.shape]
    n_layer = s.n_layer if a.layers is None else a.layers
    if n_layer < 1:
        ap.error("--layers must be at least 1")
    head_dim = s.head_dim or s.n_embd // s.n_head
    quant = a.type == "Q4_K"
    path = a.path
    w = gguf.GGUFWriter(path, s.arch)
    name = a.shape + "-shape random"
    if n_layer != s.n_layer:
        name += f" ({n_layer} layers)"
    w.add_name(name)
    w.add_context_length(s.n_ctx)
    w.add_embedding_length(s.n_embd)
    w.add_block_count(n_layer)
    w.add_feed_forward_length(s.n_ff)
    w.add_head_count(s.n_head)
    w.add_head_count_kv(s.n_head_kv)
    w.add_rope_freq_base(s.rope_base)
    w.add_layer_norm_rms_eps(s.rms_eps)
    if s.head_dim:  # as convert_hf_to_gguf.py writes a config's head_dim (qwen3, qwen3moe)
        w.add_key_length(s.head_dim)
        w.add_value_length(s.head_dim)
    else:
        w.add_rope_dimension_count(head_dim)
    if s.n_expert:
        w.add_expert_count(s.n_expert)
        w.add_expert_used_count(s.n_expert_used)
        w.add_expert_feed_forward_length(s.n_ff_expert)
    w.add_vocab_size(s.n_vocab)
    if quant:
        w.add_file_type(gguf.LlamaFileType.MOSTLY_Q4_K_M)
        w.add_quantization_version(gguf.GGML_QUANT_VERSION)
    else:
        w.add_file_type(gguf.LlamaFileType.MOSTLY_F16)
    if a.no_vocab:
        w.add_tokenizer_model("none")
    else:
        w.add_tokenizer_model("llama")
        w.add_tokenizer_pre("default")
        w.add_token_list([f"<t{i}>" for i in range(s.n_vocab)])
        w.add_token_scores([0.0] * s.n_vocab)
        w.add_token_types([gguf.TokenType.NORMAL] * s.n_vocab)
        w.add_bos_token_id(1)
        w.add_eos_token_id(2)
    specs = list(tensors(s, n_layer))
    for tname, shape, kind in specs:
        if kind == "matrix" and quant:
            bshape = q4k_byte_shape(shape)
            # a uint8 byte shape with raw_dtype: the writer turns it back into the element shape
            w.add_tensor_info(tname, bshape, np.dtype(np.uint8), int(np.prod(bshape)), raw_dtype=Q4_K)
        else:
            dtype = np.float16 if kind == "matrix" else np.float32
            nbytes = int(np.prod(shape)) * np.dtype(dtype).itemsize
            w.add_tensor_info(tname, shape, np.dtype(dtype), nbytes)
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_ti_data_to_file()
    rng = np.random.default_rng(8)
    for tname, shape, kind in specs:
        if kind == "norm":
            data = np.ones(shape, dtype=np.float32)
        elif kind == "router":
            data = rng.standard_normal(shape, dtype=np.float32) * np.float32(0.02)
        elif quant:
            data = random_q4k(rng, shape)
        else:
            data = (rng.standard_normal(shape, dtype=np.float32) * 0.02).astype(np.float16)
        w.write_tensor_data(data)
        del data
    w.close()
    print("wrote", path)


if __name__ == "__main__":
    main()
