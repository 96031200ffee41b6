#!/usr/bin/env python3
"""An F16 GGUF of a real model's shape with random weights, for quantizer speed and memory.

Not committed (llama-3-8b: 16 GB, llama-3.2-1b: 2.5 GB). Made with:

    .venv/bin/python tools/make_random_gguf.py /work/quantdata/llama-3-8b-random.F16.gguf [--shape llama-3.2-1b] [--no-vocab]

Shapes: Llama-3-8B (32 layers, 4096 wide, 14336 FFN, 32 heads / 8 KV heads,
128256 tokens, untied output) or Llama-3.2-1B (16 layers, 2048 wide, 8192
FFN, 32 / 8 heads of 64, tied embeddings); matrices are N(0, 0.02) in F16, norms
1.0 in F32; the tokenizer is a placeholder SentencePiece vocabulary of the
right size (the file is for quantizing, not for generating text), or with
--no-vocab none at all (`tokenizer.ggml.model = none`, as llama.cpp's
benchmark files are; `folio bench` and `llama-bench` run it). Tensors
are generated and written one at a time (gguf-py's add_tensor_info /
write_tensor_data), so memory stays at one tensor.
"""
import argparse

import numpy as np
import gguf

SHAPES = {  # n_vocab, n_embd, n_layer, n_head, n_head_kv, n_ff, tied
    "llama-3-8b": (128256, 4096, 32, 32, 8, 14336, False),
    "llama-3.2-1b": (128256, 2048, 16, 32, 8, 8192, True),
}
N_VOCAB = N_EMBD = N_LAYER = N_HEAD = N_HEAD_KV = N_FF = HEAD_DIM = 0
TIED = False


def tensors():
    yield "token_embd.weight", (N_VOCAB, N_EMBD), np.float16
    for i in range(N_LAYER):
        b = f"blk.{i}."
        yield b + "attn_norm.weight", (N_EMBD,), np.float32
        yield b + "attn_q.weight", (N_EMBD, N_EMBD), np.float16
        yield b + "attn_k.weight", (N_HEAD_KV * HEAD_DIM, N_EMBD), np.float16
        yield b + "attn_v.weight", (N_HEAD_KV * HEAD_DIM, N_EMBD), np.float16
        yield b + "attn_output.weight", (N_EMBD, N_EMBD), np.float16
        yield b + "ffn_norm.weight", (N_EMBD,), np.float32
        yield b + "ffn_gate.weight", (N_FF, N_EMBD), np.float16
        yield b + "ffn_up.weight", (N_FF, N_EMBD), np.float16
        yield b + "ffn_down.weight", (N_EMBD, N_FF), np.float16
    yield "output_norm.weight", (N_EMBD,), np.float32
    if not TIED:
        yield "output.weight", (N_VOCAB, N_EMBD), np.float16


def main() -> None:
    global N_VOCAB, N_EMBD, N_LAYER, N_HEAD, N_HEAD_KV, N_FF, HEAD_DIM, TIED
    ap = argparse.ArgumentParser()
    ap.add_argument("path")
    ap.add_argument("--shape", default="llama-3-8b", choices=sorted(SHAPES))
    ap.add_argument("--no-vocab", action="store_true", help="tokenizer.ggml.model = none, no token list")
    a = ap.parse_args()
    N_VOCAB, N_EMBD, N_LAYER, N_HEAD, N_HEAD_KV, N_FF, TIED = SHAPES[a.shape]
    HEAD_DIM = N_EMBD // N_HEAD
    path = a.path
    w = gguf.GGUFWriter(path, "llama")
    w.add_name(a.shape + "-shape random")
    w.add_context_length(8192)
    w.add_embedding_length(N_EMBD)
    w.add_block_count(N_LAYER)
    w.add_feed_forward_length(N_FF)
    w.add_head_count(N_HEAD)
    w.add_head_count_kv(N_HEAD_KV)
    w.add_rope_freq_base(500000.0)
    w.add_layer_norm_rms_eps(1e-5)
    w.add_rope_dimension_count(HEAD_DIM)
    w.add_vocab_size(N_VOCAB)
    w.add_file_type(gguf.LlamaFileType.MOSTLY_F16)
    if a.no_vocab:
        w.add_tokenizer_model("none")
    else:
        w.add_tokenizer_model("llama")
        w.add_tokenizer_pre("default")
        w.add_token_list([f"<t{i}>" for i in range(N_VOCAB)])
        w.add_token_scores([0.0] * N_VOCAB)
        w.add_token_types([gguf.TokenType.NORMAL] * N_VOCAB)
        w.add_bos_token_id(1)
        w.add_eos_token_id(2)
    specs = list(tensors())
    for name, shape, dtype in specs:
        nbytes = int(np.prod(shape)) * np.dtype(dtype).itemsize
        w.add_tensor_info(name, shape, np.dtype(dtype), nbytes)
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_ti_data_to_file()
    rng = np.random.default_rng(8)
    for name, shape, dtype in specs:
        if dtype == np.float32:
            data = np.ones(shape, dtype=np.float32)
        else:
            data = (rng.standard_normal(shape, dtype=np.float32) * 0.02).astype(np.float16)
        w.write_tensor_data(data)
    w.close()
    print("wrote", path)


if __name__ == "__main__":
    main()
