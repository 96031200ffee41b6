#!/usr/bin/env python3
"""Token-id goldens for tests/data/tokenizer/corpus.jsonl from the HF reference tokenizers.

Made with (from the repository root, models from scripts/setup.sh):

    .venv/bin/python tools/make_tokenizer_corpus.py tests/data/tokenizer/corpus.jsonl
    .venv/bin/python tools/make_tokenizer_goldens.py \
        models/SmolLM2-135M-Instruct.Q4_1.gguf:tests/data/tokenizer/smollm2_ids.jsonl \
        models/gemma-3-270m-q4_k_m.gguf:tests/data/tokenizer/gemma3_ids.jsonl

For each model, line i of the output belongs to line i of the corpus:
{"r": R, "ids": [...]} where ids = reference.encode(s, add_special_tokens=False)
(special-token text in s is split out as special tokens, as HF does by default)
and R = 1 when reference.decode(ids, skip_special_tokens=False) == s. The
reference is tools/reference_tokenizer.py (Hugging Face `tokenizers`).

Beside it, <out>_plain.jsonl (e.g. smollm2_ids_plain.jsonl) holds
{"i": i, "ids": [...]} for the corpus strings whose ids differ when special
tokens are not parsed (the reference with encode_special_tokens = True; the
C++ encode(..., parse_special = false)); every other string gives the same ids
either way.
"""
from __future__ import annotations

import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from reference_tokenizer import hf_tokenizer_for_gguf, read_gguf_tokenizer  # noqa: E402

CORPUS = "tests/data/tokenizer/corpus.jsonl"


def read_corpus(path: str) -> list[str]:
    with open(path, encoding="utf-8", newline="\n") as f:
        return [json.loads(line) for line in f.read().split("\n") if line]


def write_goldens(gguf_path: str, out_path: str, corpus: list[str]) -> None:
    tok = hf_tokenizer_for_gguf(gguf_path)
    meta = read_gguf_tokenizer(gguf_path)
    bos = meta.get("bos_token_id") if meta.get("add_bos_token") else None
    round_trips = 0
    plain_ids = []
    with open(out_path, "w", encoding="utf-8", newline="\n") as f:
        for index, s in enumerate(corpus):
            ids = tok.encode(s, add_special_tokens=False).ids
            with_specials = tok.encode(s, add_special_tokens=True).ids
            # The C++ tests rely on add_special meaning exactly "BOS in front" for these models.
            assert with_specials == ([bos] if bos is not None else []) + ids, (s, with_specials, ids)
            rt = tok.decode(ids, skip_special_tokens=False) == s
            round_trips += rt
            f.write(json.dumps({"r": int(rt), "ids": ids}, separators=(",", ":")) + "\n")
            tok.encode_special_tokens = True
            plain = tok.encode(s, add_special_tokens=False).ids
            tok.encode_special_tokens = False
            if plain != ids:
                plain_ids.append({"i": index, "ids": plain})
    with open(out_path.replace(".jsonl", "_plain.jsonl"), "w", encoding="utf-8", newline="\n") as f:
        for entry in plain_ids:
            f.write(json.dumps(entry, separators=(",", ":")) + "\n")
    print(f"{out_path}: {len(corpus)} strings, {round_trips} round-trip, "
          f"{len(plain_ids)} differ without special-token parsing", file=sys.stderr)


def main() -> int:
    corpus = read_corpus(CORPUS)
    for arg in sys.argv[1:]:
        gguf_path, out_path = arg.split(":", 1)
        write_goldens(gguf_path, out_path, corpus)
    return 0


if __name__ == "__main__":
    sys.exit(main())
