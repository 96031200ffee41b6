#!/usr/bin/env python3
"""Write an all-F32 copy of a quantized GGUF, for llama.cpp.

The reference for Folio's F32-activation products (`--f32-activations`): a
quantized file whose every block is dequantized and multiplied by F32
activations computes what this file computes in an F32 engine. Each tensor is
dequantized by gguf-py (gguf.quants.dequantize, which Folio's own
dequantize() matches bit for bit: tests/format/dequant_golden.h), in the
source's tensor order; the metadata (hyper-parameters, tokenizer, chat
template) is copied except general.file_type, which becomes ALL_F32.

Made with (from the repository root; the output is git-ignored, ~1.1 GB):

    .venv/bin/python tools/dequantize_gguf.py models/gemma-3-270m-q4_k_m.gguf \
        models/gemma-3-270m-q4_k_m.F32.gguf

(SmolLM2 needs no such file: its Hugging Face folder was made by dequantizing
the Q4_1 GGUF, and tools/hf_folder_to_gguf.py already writes that folder's F32
GGUF.)
"""
from __future__ import annotations

import argparse
import os
import sys

import numpy as np
import gguf

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from hf_folder_to_gguf import finish, start_f32_copy  # noqa: E402


def convert(source: str, out: str) -> None:
    reader = gguf.GGUFReader(source)
    writer = start_f32_copy(reader, out)
    for t in reader.tensors:
        w = gguf.quants.dequantize(t.data, t.tensor_type).astype(np.float32, copy=False)
        writer.add_tensor(t.name, np.ascontiguousarray(w.reshape([int(d) for d in reversed(t.shape)])))
    finish(writer, out)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("source")
    parser.add_argument("out")
    args = parser.parse_args()
    convert(args.source, args.out)
    print(f"dequantize_gguf: wrote {args.out}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
