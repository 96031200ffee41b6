#!/usr/bin/env python3
"""Turn the SmolLM2 Hugging Face folder back into an all-F32 GGUF, for llama.cpp.

llama.cpp cannot read a Hugging Face folder, so the independent reference for
the HF form of SmolLM2 is llama.cpp running this file: the folder's F32
safetensors weights as they are (no requantization), Q and K rows permuted
from Hugging Face's rotate-half order back to GGUF's interleaved-pair order
(the inverse of tools/gguf_to_hf.py), and the metadata (hyper-parameters,
tokenizer) copied from the GGUF the folder was made from, except
general.file_type, which becomes ALL_F32. The hyper-parameters in config.json
are checked against that GGUF first: a folder that does not match is refused.

llama.cpp's own convert_hf_to_gguf.py would be the other route, but it needs
torch, which the venv does not have.

Made with (from the repository root; the output is git-ignored, ~540 MB):

    .venv/bin/python tools/hf_folder_to_gguf.py models/SmolLM2-135M-Instruct-hf \
        models/SmolLM2-135M-Instruct.Q4_1.gguf models/SmolLM2-135M-Instruct-hf.F32.gguf
"""
from __future__ import annotations

import argparse
import json
import os
import sys

import numpy as np
import gguf
from safetensors.numpy import load_file

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from gguf_to_hf import config_json, hf_name, permute, self_check_permutation  # noqa: E402

DEFAULT_FOLDER = "models/SmolLM2-135M-Instruct-hf"
DEFAULT_SOURCE = "models/SmolLM2-135M-Instruct.Q4_1.gguf"
DEFAULT_OUT = "models/SmolLM2-135M-Instruct-hf.F32.gguf"

# Keys the GGUF writer makes itself, or that no longer hold for an F32 file.
SKIPPED_KEYS = {"general.architecture", "general.file_type", "general.quantization_version"}

# config.json entries that must equal what the source GGUF says.
CHECKED_CONFIG = ("vocab_size", "hidden_size", "intermediate_size", "num_hidden_layers",
                  "num_attention_heads", "num_key_value_heads", "head_dim", "rms_norm_eps",
                  "rope_theta", "tie_word_embeddings", "bos_token_id", "eos_token_id")


def read_folder(folder: str) -> tuple[dict, dict[str, np.ndarray]]:
    with open(os.path.join(folder, "config.json"), encoding="utf-8") as f:
        config = json.load(f)
    tensors: dict[str, np.ndarray] = {}
    for name in sorted(os.listdir(folder)):
        if name.endswith(".safetensors"):
            tensors.update(load_file(os.path.join(folder, name)))
    return config, tensors


def check_config(config: dict, reader: gguf.GGUFReader) -> None:
    tied = not any(t.name == "output.weight" for t in reader.tensors)
    expected = config_json(reader, tied)
    for key in CHECKED_CONFIG:
        if config.get(key) != expected.get(key):
            raise ValueError(f"config.json {key} = {config.get(key)!r} but the GGUF says {expected.get(key)!r}")


def copy_metadata(reader: gguf.GGUFReader, writer: gguf.GGUFWriter) -> None:
    for field in reader.fields.values():
        if field.name.startswith("GGUF.") or field.name in SKIPPED_KEYS:
            continue
        vtype = field.types[0]
        sub_type = field.types[-1] if vtype == gguf.GGUFValueType.ARRAY else None
        writer.add_key_value(field.name, field.contents(), vtype, sub_type=sub_type)
    writer.add_file_type(gguf.LlamaFileType.ALL_F32)


def start_f32_copy(reader: gguf.GGUFReader, out: str) -> gguf.GGUFWriter:
    """A writer of an all-F32 GGUF with reader's metadata, to out + ".partial" until finish()."""
    writer = gguf.GGUFWriter(out + ".partial", arch=str(reader.fields["general.architecture"].contents()))
    copy_metadata(reader, writer)
    return writer


def finish(writer: gguf.GGUFWriter, out: str) -> None:
    """Writes everything added to writer, then moves the file into place: nothing half-written at out."""
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    os.replace(out + ".partial", out)


def convert(folder: str, source: str, out: str) -> None:
    self_check_permutation()
    reader = gguf.GGUFReader(source)
    config, hf = read_folder(folder)
    check_config(config, reader)

    writer = start_f32_copy(reader, out)
    used = set()
    for t in reader.tensors:  # the source's tensor order, so the two files line up
        name = hf_name(t.name)
        if name not in hf:
            raise ValueError(f"{folder} has no tensor {name} (GGUF {t.name})")
        w = hf[name].astype(np.float32, copy=False)
        if t.name.endswith("attn_q.weight"):
            w = permute(w, config["num_attention_heads"])
        elif t.name.endswith("attn_k.weight"):
            w = permute(w, config["num_key_value_heads"])
        expected_shape = [int(d) for d in reversed(t.shape)]
        if list(w.shape) != expected_shape:
            raise ValueError(f"{name}: shape {list(w.shape)}, the GGUF has {expected_shape}")
        writer.add_tensor(t.name, np.ascontiguousarray(w))
        used.add(name)
    extra = sorted(set(hf) - used)
    if extra:
        raise ValueError(f"tensors in {folder} with no GGUF counterpart: {extra[:5]}")
    finish(writer, out)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("folder", nargs="?", default=DEFAULT_FOLDER)
    parser.add_argument("source", nargs="?", default=DEFAULT_SOURCE,
                        help="the GGUF the folder was made from (metadata, tokenizer)")
    parser.add_argument("out", nargs="?", default=DEFAULT_OUT)
    args = parser.parse_args()
    convert(args.folder, args.source, args.out)
    print(f"hf_folder_to_gguf: wrote {args.out}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
