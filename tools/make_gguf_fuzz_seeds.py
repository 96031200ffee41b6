#!/usr/bin/env python3
"""Seed corpus for tests/fuzz/gguf_fuzzer.cpp: a handful of tiny GGUF files.

Made with:

    .venv/bin/python tools/make_gguf_fuzz_seeds.py tests/fuzz/corpus/gguf

Each file is a few KB and reaches a different part of the reader and of the
model description: a llama file with a BPE tokenizer, a gemma3 file with a
SentencePiece one, every metadata value type (nested arrays too), every
supported tensor type, a version 2 header and a file with 64-byte alignment.
"""
import os
import sys

import numpy as np
import gguf
from gguf import GGMLQuantizationType as T

RNG = np.random.default_rng(7)


def quantized(qtype, shape):
    """Random bytes shaped as a quantized tensor (gguf-py writes raw bytes)."""
    block_elems, block_bytes = gguf.GGML_QUANT_SIZES[qtype]
    rows, cols = shape
    data = RNG.integers(0, 256, size=(rows, cols // block_elems * block_bytes), dtype=np.uint8)
    return data


def writer(path, arch, **kwargs):
    return gguf.GGUFWriter(path, arch, **kwargs)


def finish(w):
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()


def llama_bpe(out):
    w = writer(os.path.join(out, "llama_bpe.gguf"), "llama")
    w.add_name("tiny llama")
    w.add_block_count(1)
    w.add_context_length(64)
    w.add_embedding_length(32)
    w.add_feed_forward_length(64)
    w.add_head_count(4)
    w.add_head_count_kv(2)
    w.add_rope_freq_base(10000.0)
    w.add_layer_norm_rms_eps(1e-5)
    w.add_vocab_size(8)
    w.add_tokenizer_model("gpt2")
    w.add_tokenizer_pre("smollm")
    w.add_token_list(["<|endoftext|>", "<|im_start|>", "<|im_end|>", "a", "b", "ab", "Ġ", "Ġab"])
    w.add_token_types([3, 3, 3, 1, 1, 1, 1, 1])
    w.add_token_merges(["a b", "Ġ ab"])
    w.add_bos_token_id(1)
    w.add_eos_token_id(2)
    w.add_chat_template("{% for m in messages %}{{ m['content'] }}{% endfor %}")
    w.add_tensor("token_embd.weight", quantized(T.Q8_0, (8, 32)), raw_dtype=T.Q8_0)
    w.add_tensor("blk.0.attn_q.weight", quantized(T.Q4_1, (32, 32)), raw_dtype=T.Q4_1)
    w.add_tensor("blk.0.attn_norm.weight", RNG.standard_normal(32).astype(np.float32))
    finish(w)


def gemma3_spm(out):
    w = writer(os.path.join(out, "gemma3_spm.gguf"), "gemma3")
    w.add_name("tiny gemma")
    w.add_block_count(1)
    w.add_context_length(128)
    w.add_embedding_length(256)
    w.add_feed_forward_length(256)
    w.add_head_count(2)
    w.add_head_count_kv(1)
    w.add_key_length(128)
    w.add_value_length(128)
    w.add_sliding_window(32)
    w.add_layer_norm_rms_eps(1e-6)
    w.add_tokenizer_model("llama")
    w.add_token_list(["<pad>", "<eos>", "<bos>", "<unk>", "▁a", "<end_of_turn>"])
    w.add_token_scores([0.0, 0.0, 0.0, 0.0, -1.5, 0.0])
    w.add_token_types([3, 3, 3, 2, 1, 3])
    w.add_bos_token_id(2)
    w.add_eos_token_id(1)
    w.add_add_bos_token(True)
    w.add_tensor("token_embd.weight", quantized(T.Q4_K, (6, 256)), raw_dtype=T.Q4_K)
    w.add_tensor("blk.0.ffn_down.weight", quantized(T.Q6_K, (2, 256)), raw_dtype=T.Q6_K)
    w.add_tensor("blk.0.attn_k.weight", quantized(T.Q5_0, (2, 256)), raw_dtype=T.Q5_0)
    finish(w)


def all_value_types(out):
    w = writer(os.path.join(out, "value_types.gguf"), "unknownarch")
    w.add_uint8("v.u8", 200)
    w.add_int8("v.i8", -5)
    w.add_uint16("v.u16", 60000)
    w.add_int16("v.i16", -300)
    w.add_uint32("v.u32", 7)
    w.add_int32("v.i32", -7)
    w.add_uint64("v.u64", 1 << 40)
    w.add_int64("v.i64", -(1 << 40))
    w.add_float32("v.f32", 0.25)
    w.add_float64("v.f64", 1e-300)
    w.add_bool("v.bool", True)
    w.add_string("v.str", "text")
    w.add_array("v.ints", [1, 2, 3])
    w.add_array("v.strs", ["x", "yz"])
    w.add_array("v.nested", [[1, 2], [3]])
    w.add_array("v.empty", [])
    finish(w)


def every_tensor_type(out):
    w = writer(os.path.join(out, "tensor_types.gguf"), "llama")
    w.add_tensor("f32", RNG.standard_normal((2, 4)).astype(np.float32))
    w.add_tensor("f16", RNG.standard_normal((2, 4)).astype(np.float16))
    w.add_tensor("bf16", RNG.integers(0, 1 << 16, size=(2, 4), dtype=np.uint16).view(np.uint8).reshape(2, 8), raw_dtype=T.BF16)
    for qtype in (T.Q4_0, T.Q4_1, T.Q5_0, T.Q5_1, T.Q8_0):
        w.add_tensor(qtype.name.lower(), quantized(qtype, (1, 32)), raw_dtype=qtype)
    for qtype in (T.Q4_K, T.Q5_K, T.Q6_K):
        w.add_tensor(qtype.name.lower(), quantized(qtype, (1, 256)), raw_dtype=qtype)
    finish(w)


def aligned_64(out):
    w = writer(os.path.join(out, "aligned64.gguf"), "qwen2")
    w.data_alignment = 64
    w.add_custom_alignment(64)
    w.add_block_count(1)
    w.add_tensor("a", RNG.standard_normal(3).astype(np.float32))
    w.add_tensor("b", RNG.standard_normal(5).astype(np.float32))
    finish(w)


def version_2(out):
    # gguf-py writes v3 only; v2 differs in nothing but the version field.
    src = os.path.join(out, "aligned64.gguf")
    data = bytearray(open(src, "rb").read())
    data[4:8] = (2).to_bytes(4, "little")
    open(os.path.join(out, "version2.gguf"), "wb").write(bytes(data))


def main(argv):
    if len(argv) != 2:
        print(__doc__, file=sys.stderr)
        return 2
    out = argv[1]
    os.makedirs(out, exist_ok=True)
    for make in (llama_bpe, gemma3_spm, all_value_types, every_tensor_type, aligned_64, version_2):
        make(out)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
