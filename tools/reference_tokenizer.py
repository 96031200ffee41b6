#!/usr/bin/env python3
"""The reference Hugging Face tokenizer for a GGUF test model.

Folio's C++ tokenizer is checked against the Hugging Face `tokenizers`
library, not against llama.cpp: where the two disagree, HF is the reference.
This script rebuilds, from the vocabulary stored in a GGUF file, the
`tokenizers.Tokenizer` that the model's original tokenizer.json describes,
and can write it out as a tokenizer.json (+ tokenizer_config.json).

    .venv/bin/python tools/reference_tokenizer.py MODEL.gguf OUT/tokenizer.json

Choices, per tokenizer.ggml.model:

* "gpt2" (byte-level BPE, e.g. SmolLM2): built here the way SmolLM2's own
  tokenizer.json is written: model BPE(vocab, merges, no unk, no
  byte_fallback), no normalizer, pre-tokenizer
  Sequence[Digits(individual_digits=True), ByteLevel(add_prefix_space=False,
  trim_offsets=True, use_regex=True)] for pre "smollm" (llama.cpp's "smollm"
  is the same: a digit split, then the GPT-2 regex); other `pre` values get
  Split(<the regex llama.cpp/transformers use>) + ByteLevel(use_regex=False).
  Decoder ByteLevel. Tokens of type CONTROL/USER_DEFINED are added special
  tokens (normalized=False), as in SmolLM2's tokenizer.json. No BOS is added
  unless tokenizer.ggml.add_bos_token says so.

* "llama" (SentencePiece) with a Gemma architecture: built with the
  installed transformers' own GGUF tokenizer converter
  (transformers.integrations.gguf.gguf_tokenizer_mapping.convert_gguf_tokenizer,
  what AutoTokenizer.from_pretrained(dir, gguf_file=...) runs; the
  AutoTokenizer entry point itself needs torch, which is not installed, so
  the converter is called directly with the same tokenizer dict). It yields
  the shape of Gemma's real tokenizer.json: model BPE with byte_fallback=True
  and unk "<unk>", merges derived from the vocabulary ordered by token
  position (transformers notes that Gemma's GGUF scores do not follow the
  merge order, the token order does), vocabulary tokens made only of spaces
  respelled as "▁" runs, normalizer Replace(" " -> "▁") (no prefix space),
  pre-tokenizer Split(" ", merged_with_previous) (a no-op after the
  normalizer), decoder Sequence[Replace("▁", " "), ByteFallback, Fuse],
  CONTROL tokens as added special tokens and USER_DEFINED tokens present in
  the respelled vocabulary ("\n" runs, "\t" runs, HTML tags, image markers)
  as added non-special tokens, all normalized=False. We then add a
  TemplateProcessing post-processor "<bos> $A" when add_bos_token is true
  (Gemma: yes), as Gemma's tokenizer.json has.
"""
from __future__ import annotations

import argparse
import json
import os
import sys

import gguf
from tokenizers import AddedToken, Regex, Tokenizer, decoders, models, pre_tokenizers, processors

TOKEN_CONTROL = 3
TOKEN_USER_DEFINED = 4

# llama.cpp's pre-tokenizer regexes (src/llama-vocab.cpp) for the `pre` names we know.
GPT2_REGEX = r"'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+"
LLAMA3_REGEX = (r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}"
                r"| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+")
QWEN2_REGEX = (r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}"
               r"| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+")
PRE_SPLITS = {"llama-bpe": LLAMA3_REGEX, "llama3": LLAMA3_REGEX, "qwen2": QWEN2_REGEX}


def read_gguf_tokenizer(gguf_path: str) -> dict:
    """tokenizer.ggml.* of a GGUF file, under transformers' tokenizer-dict names."""
    reader = gguf.GGUFReader(gguf_path)
    fields = reader.fields

    def value(key, default=None):
        field = fields.get(key)
        if field is None:
            return default
        if field.types[0] == gguf.GGUFValueType.ARRAY:
            if field.types[1] == gguf.GGUFValueType.STRING:
                return [bytes(field.parts[i]).decode("utf-8") for i in field.data]
            return [field.parts[i][0].item() for i in field.data]
        if field.types[0] == gguf.GGUFValueType.STRING:
            return bytes(field.parts[field.data[0]]).decode("utf-8")
        return field.parts[field.data[0]][0].item()

    out = {
        "architecture": value("general.architecture"),
        "tokenizer_type": value("tokenizer.ggml.model"),
        "pre_tokenizer_type": value("tokenizer.ggml.pre"),
        "tokens": value("tokenizer.ggml.tokens"),
        "token_type": value("tokenizer.ggml.token_type"),
        "scores": value("tokenizer.ggml.scores"),
        "merges": value("tokenizer.ggml.merges"),
        "bos_token_id": value("tokenizer.ggml.bos_token_id"),
        "eos_token_id": value("tokenizer.ggml.eos_token_id"),
        "unk_token_id": value("tokenizer.ggml.unknown_token_id"),
        "pad_token_id": value("tokenizer.ggml.padding_token_id"),
        "add_prefix_space": value("tokenizer.ggml.add_space_prefix"),
        "add_bos_token": value("tokenizer.ggml.add_bos_token"),
        "add_eos_token": value("tokenizer.ggml.add_eos_token"),
        "chat_template": value("tokenizer.chat_template"),
    }
    if out["tokenizer_type"] == "llama" and out["add_bos_token"] is None:
        out["add_bos_token"] = True  # llama.cpp's and transformers' default for SentencePiece
    return {k: v for k, v in out.items() if v is not None}


def _byte_level_tokenizer(d: dict) -> Tokenizer:
    vocab = {token: index for index, token in enumerate(d["tokens"])}
    merges = [tuple(m.split(" ", 1)) for m in d["merges"]]
    tok = Tokenizer(models.BPE(vocab=vocab, merges=merges, byte_fallback=False, fuse_unk=False))
    pre = d.get("pre_tokenizer_type", "default")
    if pre == "smollm":
        tok.pre_tokenizer = pre_tokenizers.Sequence([
            pre_tokenizers.Digits(individual_digits=True),
            pre_tokenizers.ByteLevel(add_prefix_space=False, trim_offsets=True, use_regex=True),
        ])
    elif pre in PRE_SPLITS:
        tok.pre_tokenizer = pre_tokenizers.Sequence([
            pre_tokenizers.Split(Regex(PRE_SPLITS[pre]), behavior="isolated"),
            pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False),
        ])
    else:  # "gpt2", "default" and the rest: the GPT-2 regex inside ByteLevel
        tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False, trim_offsets=True,
                                                     use_regex=True)
    tok.decoder = decoders.ByteLevel()
    kinds = d.get("token_type") or []
    specials = [AddedToken(t, special=True, normalized=False)
                for t, k in zip(d["tokens"], kinds) if k in (TOKEN_CONTROL, TOKEN_USER_DEFINED)]
    tok.add_special_tokens(specials)
    return tok


def _gemma_tokenizer(d: dict) -> Tokenizer:
    from transformers.integrations.gguf.gguf_tokenizer_mapping import convert_gguf_tokenizer

    tok_dict = {k: v for k, v in d.items() if k not in ("architecture", "chat_template")}
    backend, _ = convert_gguf_tokenizer(d["architecture"], tok_dict)
    return backend


def _add_post_processor(tok: Tokenizer, d: dict) -> None:
    tokens = d["tokens"]
    add_bos = bool(d.get("add_bos_token")) and d.get("bos_token_id") is not None
    add_eos = bool(d.get("add_eos_token")) and d.get("eos_token_id") is not None
    if not add_bos and not add_eos:
        tok.post_processor = None
        return
    bos, eos = (tokens[d["bos_token_id"]] if add_bos else None), (tokens[d["eos_token_id"]] if add_eos else None)
    single = ([f"{bos}:0"] if bos else []) + ["$A:0"] + ([f"{eos}:0"] if eos else [])
    pair = single + ([f"{bos}:1"] if bos else []) + ["$B:1"] + ([f"{eos}:1"] if eos else [])
    special = [(t, tokens.index(t)) for t in dict.fromkeys(x for x in (bos, eos) if x)]
    tok.post_processor = processors.TemplateProcessing(single=" ".join(single), pair=" ".join(pair),
                                                       special_tokens=special)


def hf_tokenizer_for_gguf(gguf_path: str) -> Tokenizer:
    """The reference `tokenizers.Tokenizer` for the tokenizer a GGUF file describes."""
    d = read_gguf_tokenizer(gguf_path)
    kind = d.get("tokenizer_type")
    if kind == "gpt2":
        tok = _byte_level_tokenizer(d)
    elif kind == "llama" and str(d.get("architecture", "")).startswith("gemma"):
        tok = _gemma_tokenizer(d)
    else:
        raise ValueError(f"{gguf_path}: no reference tokenizer for tokenizer.ggml.model={kind!r} "
                         f"(architecture {d.get('architecture')!r})")
    _add_post_processor(tok, d)
    return tok


def tokenizer_config_for_gguf(gguf_path: str) -> dict:
    """The tokenizer_config.json that goes with the tokenizer.json."""
    d = read_gguf_tokenizer(gguf_path)
    tokens = d["tokens"]
    config = {
        "add_bos_token": bool(d.get("add_bos_token", False)),
        "add_eos_token": bool(d.get("add_eos_token", False)),
        "clean_up_tokenization_spaces": False,
        "model_max_length": 8192,
        "tokenizer_class": "GemmaTokenizer" if d.get("tokenizer_type") == "llama" else "GPT2Tokenizer",
    }
    for name, key in (("bos_token", "bos_token_id"), ("eos_token", "eos_token_id"),
                      ("unk_token", "unk_token_id"), ("pad_token", "pad_token_id")):
        if d.get(key) is not None and 0 <= d[key] < len(tokens):
            config[name] = tokens[d[key]]
    if d.get("chat_template"):
        config["chat_template"] = d["chat_template"]
    return config


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("gguf", help="model .gguf file")
    parser.add_argument("out", help="tokenizer.json to write; tokenizer_config.json goes beside it")
    args = parser.parse_args()
    tok = hf_tokenizer_for_gguf(args.gguf)
    os.makedirs(os.path.dirname(os.path.abspath(args.out)), exist_ok=True)
    tok.save(args.out)
    config_path = os.path.join(os.path.dirname(os.path.abspath(args.out)), "tokenizer_config.json")
    with open(config_path, "w", encoding="utf-8") as f:
        json.dump(tokenizer_config_for_gguf(args.gguf), f, ensure_ascii=False, indent=2)
        f.write("\n")
    print(f"wrote {args.out} and {config_path}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
