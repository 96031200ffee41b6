#!/usr/bin/env python3
"""Greedy-continuation and logit goldens from llama.cpp (through llama-cpp-python).

The independent reference for issue 3: llama.cpp runs each model on a fixed
set of prompts, tokenized by llama.cpp itself, continues each greedily for 64
tokens (argmax of the logits, no sampler, no penalties, EOS ignored) and keeps
the logits of every position of prompt + continuation. The format is in
tests/data/inference/README.md.

Made with (from the repository root; needs bench/requirements.txt in .venv
and the F32 GGUF of the HF folder from tools/hf_folder_to_gguf.py):

    .venv/bin/python tools/make_inference_goldens.py \
        models/SmolLM2-135M-Instruct.Q4_1.gguf:smollm2:tests/data/inference/smollm2_q4_1.json \
        models/gemma-3-270m-q4_k_m.gguf:gemma3:tests/data/inference/gemma3_q4_k_m.json \
        models/SmolLM2-135M-Instruct-hf.F32.gguf:smollm2:tests/data/inference/smollm2_hf_f32.json

and, for the Gemma file's dequantized F32 copy (tools/dequantize_gguf.py; the
first spec only supplies the prompt ids, its output is not kept):

    .venv/bin/python tools/make_inference_goldens.py \
        models/gemma-3-270m-q4_k_m.gguf:gemma3:/tmp/gemma3_q4_k_m.regen.json \
        models/gemma-3-270m-q4_k_m.F32.gguf:gemma3:tests/data/inference/gemma3_q4_k_m_f32.json

The first DETERMINISM_PROMPTS prompts of each model run twice, in fresh
contexts; the script fails unless both runs give bit-identical logits (all of
them twice would double a run that already takes minutes on 2 busy cores). The HF-form run takes its prompt ids from the
SmolLM2 GGUF run (same tokenizer; the script checks llama.cpp tokenizes them
identically from the F32 file too).
"""
from __future__ import annotations

import base64
import hashlib
import json
import os
import platform
import sys

import numpy as np
import jinja2.sandbox
import llama_cpp
from llama_cpp import Llama

N_CTX = 512
N_THREADS = 2
N_CONTINUATION = 64
TOP_K = 16
FULL_ROW_PROMPTS = ("capital", "chat_haiku")  # prompts whose last row is stored whole (small vocabs only)
FULL_ROW_MAX_VOCAB = 65536
DETERMINISM_PROMPTS = 2

LONG_TEXT = (
    "The history of the printing press begins in the fifteenth century, when Johannes Gutenberg "
    "combined movable metal type, oil-based inks and a wooden screw press adapted from those used "
    "to make wine. Before his workshop in Mainz produced its first Bible, books in Europe were "
    "copied by hand, a slow and expensive process that kept them in the libraries of monasteries, "
    "universities and the very rich. Within fifty years, presses had spread to more than two "
    "hundred cities, and millions of volumes were in circulation. The consequences reached far "
    "beyond the book trade: scholars could compare identical copies of a text, errors could be "
    "corrected in later editions, and ideas travelled faster than any censor could follow. "
    "Historians still argue about how much of the Reformation, the scientific revolution and the "
    "rise of vernacular literature can be traced to this one machine, but few doubt that"
)

# (name, kind, text): kind "plain" is tokenized as is (BOS as the model adds it,
# special tokens not parsed); "chat" is one user turn in the model's chat format.
PROMPTS = (
    ("capital", "plain", "The capital of France is"),
    ("story", "plain", "Once upon a time, in a small village by the sea, there lived"),
    ("code", "plain", "def fibonacci(n):\n    \"\"\"Return the n-th Fibonacci number.\"\"\"\n"),
    ("counting", "plain", "1, 2, 3, 4, 5, 6, 7, 8,"),
    ("french", "plain", "Le café est une boisson préparée à partir"),
    ("long", "plain", LONG_TEXT),
    ("chat_water", "chat", "What is the boiling point of water at sea level?"),
    ("chat_haiku", "chat", "Write a haiku about autumn leaves."),
    ("chat_cache", "chat", "Explain in two sentences what a CPU cache is."),
    ("chat_list", "chat", "List three fruits that are red."),
)

GEMMA_TURN = "<start_of_turn>user\n{}<end_of_turn>\n<start_of_turn>model\n"


def sha256_of(path: str) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def tensor_data_sha256(path: str) -> str:
    """The sha256 of the data section alone (the tensors' bytes): a file
    whose metadata names where it came from (Folio's quantizer records its
    source's path) is pinned by this one."""
    import gguf  # tools/requirements.txt
    offset = gguf.GGUFReader(path).data_offset
    h = hashlib.sha256()
    with open(path, "rb") as f:
        f.seek(offset)
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def chat_text(family: str, llm: Llama, user: str) -> str:
    if family == "gemma3":  # the GGUF has no template; this is Gemma 3's turn format
        return GEMMA_TURN.format(user)
    template = llm.metadata["tokenizer.chat_template"]
    env = jinja2.sandbox.ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True)
    return env.from_string(template).render(messages=[{"role": "user", "content": user}],
                                            add_generation_prompt=True)


def open_model(path: str, n_ctx: int = N_CTX) -> Llama:
    return Llama(model_path=path, n_ctx=n_ctx, n_batch=n_ctx, n_ubatch=n_ctx, n_threads=N_THREADS,
                 n_threads_batch=N_THREADS, logits_all=True, seed=0, verbose=False)


def greedy_run(llm: Llama, prompt_ids: list[int]) -> tuple[list[int], np.ndarray]:
    """Prompt in one batch, then one token at a time, as `folio run` does.

    Returns the continuation and the logits of every position (len(prompt) + 64
    rows; the last generated token is evaluated too so that its row exists)."""
    llm.reset()
    llm._ctx.kv_cache_clear()
    llm.eval(prompt_ids)
    continuation: list[int] = []
    for _ in range(N_CONTINUATION):
        token = int(np.argmax(llm.scores[llm.n_tokens - 1]))
        continuation.append(token)
        llm.eval([token])
    return continuation, np.array(llm.scores[: llm.n_tokens], dtype=np.float32, copy=True)


def logsumexp(rows: np.ndarray) -> np.ndarray:
    r = rows.astype(np.float64)
    m = r.max(axis=1, keepdims=True)
    return (m[:, 0] + np.log(np.exp(r - m).sum(axis=1)))


def compact_rows(rows: np.ndarray) -> dict:
    top = np.argsort(-rows, axis=1, kind="stable")[:, :TOP_K]
    top_logits = np.take_along_axis(rows, top, axis=1)
    return {
        "top_ids": top.tolist(),
        "top_logits": [[round(float(v), 4) for v in r] for r in top_logits],
        "logsumexp": [round(float(v), 4) for v in logsumexp(rows)],
    }


def greedy_margins(rows: np.ndarray, n_prompt: int) -> list[float]:
    """top1 - top2 logit at each row that chose a continuation token."""
    chosen = rows[n_prompt - 1: n_prompt - 1 + N_CONTINUATION]
    two = -np.sort(-chosen, axis=1)[:, :2]
    return [round(float(a - b), 4) for a, b in two]


def one_batch_deviation(llm: Llama, ids: list[int], rows: np.ndarray) -> dict:
    """How far llama.cpp moves from itself when the same tokens run as one batch.

    The goldens' rows come from a prompt batch and 64 single-token steps; here
    prompt + continuation run as one batch. The largest differences, over the
    golden's top-16 logits and logsumexp of every row, are a floor for the
    tolerance of any other implementation (it cannot be asked to agree with
    llama.cpp better than llama.cpp agrees with itself)."""
    llm.reset()
    llm._ctx.kv_cache_clear()
    llm.eval(ids)
    batch_rows = np.array(llm.scores[: len(ids)], dtype=np.float32, copy=True)
    top = np.argsort(-rows, axis=1, kind="stable")[:, :TOP_K]
    d_top = np.abs(np.take_along_axis(batch_rows, top, axis=1) - np.take_along_axis(rows, top, axis=1))
    d_lse = np.abs(logsumexp(batch_rows) - logsumexp(rows))
    same_argmax = bool((batch_rows.argmax(axis=1) == rows.argmax(axis=1)).all())
    return {"max_abs_top_logit": round(float(d_top.max()), 5), "max_abs_logsumexp": round(float(d_lse.max()), 5),
            "same_argmax": same_argmax}


def make_goldens(path: str, family: str, prompt_ids_from: dict | None, n_ctx: int = N_CTX) -> dict:
    llm = open_model(path, n_ctx)
    entries = []
    for index, (name, kind, text) in enumerate(PROMPTS):
        source = chat_text(family, llm, text) if kind == "chat" else text
        ids = llm.tokenize(source.encode("utf-8"), add_bos=True, special=(kind == "chat"))
        if prompt_ids_from is not None:
            if prompt_ids_from[name] != ids:
                raise SystemExit(f"{path}: llama.cpp tokenizes prompt {name!r} differently from the reference run")
            ids = prompt_ids_from[name]
        continuation, rows = greedy_run(llm, ids)
        if index < DETERMINISM_PROMPTS:
            again, rows_again = greedy_run(llm, ids)
            if again != continuation or not np.array_equal(rows, rows_again):
                raise SystemExit(f"{path}: prompt {name!r} is not deterministic across two runs")
        margins = greedy_margins(rows, len(ids))
        deviation = one_batch_deviation(llm, ids + continuation, rows)
        entry = {
            "name": name,
            "kind": kind,
            "text": source,
            "prompt_ids": ids,
            "continuation_ids": continuation,
            "continuation_text": llm.detokenize(continuation, special=True).decode("utf-8", "replace"),
            "min_greedy_margin": min(margins),
            "greedy_margins": margins,
            "one_batch_deviation": deviation,
            **compact_rows(rows),
        }
        if name in FULL_ROW_PROMPTS and rows.shape[1] <= FULL_ROW_MAX_VOCAB:
            entry["last_row_f16_b64"] = base64.b64encode(rows[-1].astype("<f2").tobytes()).decode("ascii")
        entries.append(entry)
        print(f"  {name}: {len(ids)} prompt tokens, min margin {min(margins):.3f}, one-batch deviation "
              f"{deviation['max_abs_top_logit']:.4f}: "
              f"{entry['continuation_text'][:60]!r}", file=sys.stderr)
    return {
        "generator": "tools/make_inference_goldens.py",
        "reference": f"llama.cpp via llama-cpp-python {llama_cpp.__version__}",
        "machine": f"{platform.machine()} {platform.processor() or ''}".strip(),
        "model_file": os.path.basename(path),
        "model_sha256": sha256_of(path),
        "tensor_data_sha256": tensor_data_sha256(path),
        "n_vocab": llm.n_vocab(),
        "n_ctx": n_ctx,
        "n_threads": N_THREADS,
        "kv_cache_type": "f16",
        "flash_attention": False,
        "n_continuation": N_CONTINUATION,
        "determinism_checked": [p[0] for p in PROMPTS[:DETERMINISM_PROMPTS]],
        "top_k": TOP_K,
        "prompts": entries,
    }


def main(argv: list[str]) -> int:
    if len(argv) < 2:
        print(__doc__, file=sys.stderr)
        return 2
    reference_ids: dict[str, dict[str, list[int]]] = {}
    for spec in argv[1:]:
        # PATH:FAMILY:OUT[:N_CTX] (a context other than 512: Phi-3's LongRoPE factors depend on it)
        path, family, out, *rest = spec.split(":")
        n_ctx = int(rest[0]) if rest else N_CTX
        print(f"{path} ({family}, n_ctx {n_ctx})", file=sys.stderr)
        golden = make_goldens(path, family, reference_ids.get(family), n_ctx)
        reference_ids.setdefault(family, {p["name"]: p["prompt_ids"] for p in golden["prompts"]})
        os.makedirs(os.path.dirname(out), exist_ok=True)
        with open(out, "w", encoding="utf-8") as f:
            json.dump(golden, f, ensure_ascii=False, separators=(",", ":"))
            f.write("\n")
        print(f"  wrote {out} ({os.path.getsize(out)} bytes)", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
