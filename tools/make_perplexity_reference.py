#!/usr/bin/env python3
"""Perplexity reference: llama-perplexity's protocol, run by llama.cpp through llama-cpp-python.

The text is /usr/share/common-licenses/GPL-3 (on every Debian machine; its
sha256 is recorded and checked). The protocol is llama.cpp's
tools/perplexity/perplexity.cpp (`llama-perplexity -f TEXT -c 512`):

  1. tokenize the whole text once, BOS first only if the model adds one
     (tokenizer.ggml.add_bos_token), special tokens not parsed;
  2. n_chunk = n_tokens // n_ctx chunks of n_ctx consecutive tokens; the tail
     that does not fill a chunk is dropped;
  3. each chunk is evaluated in a fresh context (KV cache cleared), positions
     0..n_ctx-1, in one batch; if the model adds BOS, the chunk's first token
     is replaced by BOS for the evaluation (the targets are not affected);
  4. only the second half is scored: for i in [n_ctx/2, n_ctx-2], the NLL of
     chunk token i+1 under the log-softmax of the logits at position i, so
     n_ctx/2 - 1 = 255 tokens per chunk at n_ctx = 512;
  5. PPL = exp(sum NLL / count) over all chunks.

Deviations from llama-perplexity, none of them in the arithmetic of the score:
llama-perplexity packs n_batch / n_ctx chunks into one batch as separate
sequences (n_batch 2048 -> 4 chunks a batch) and its flash attention is on
"auto" (on, on the CPU); here each chunk is its own batch and attention is
llama.cpp's plain softmax path (the goldens' setting). Both change results
only by float rounding. The "+/-" is computed as llama-perplexity does.

Made with (from the repository root; needs bench/requirements.txt in .venv and
models/SmolLM2-135M-Instruct-hf.F32.gguf from tools/hf_folder_to_gguf.py):

    .venv/bin/python tools/make_perplexity_reference.py tests/data/inference/perplexity.json \
        models/SmolLM2-135M-Instruct.Q4_1.gguf models/gemma-3-270m-q4_k_m.gguf \
        models/SmolLM2-135M-Instruct-hf.F32.gguf

The committed file was made one model at a time, in parallel, with -t 1 (the
machine was busy; llama.cpp's threads spin at barriers and crawl when
oversubscribed), then merged with --merge:

    for m in models/SmolLM2-135M-Instruct.Q4_1.gguf models/gemma-3-270m-q4_k_m.gguf \
             models/SmolLM2-135M-Instruct-hf.F32.gguf; do
        .venv/bin/python tools/make_perplexity_reference.py -t 1 /tmp/ppl-$(basename $m).json $m &
    done; wait
    .venv/bin/python tools/make_perplexity_reference.py --merge tests/data/inference/perplexity.json \
        /tmp/ppl-SmolLM2-135M-Instruct.Q4_1.gguf.json /tmp/ppl-gemma-3-270m-q4_k_m.gguf.json \
        /tmp/ppl-SmolLM2-135M-Instruct-hf.F32.gguf.json

Optionally --llama-perplexity PATH runs the real llama-perplexity binary on
the same files too and records its "Final estimate" beside ours.
"""
from __future__ import annotations

import argparse
import hashlib
import json
import math
import os
import re
import subprocess
import sys

import numpy as np
import llama_cpp
from llama_cpp import Llama

TEXT = "/usr/share/common-licenses/GPL-3"
TEXT_SHA256 = "3972dc9744f6499f0f9b2dbf76696f2ae7ad8af9b23dde66d6af86c9dfb36986"
N_CTX = 512
N_THREADS = 2


def sha256_of(path: str) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def chunk_nll(llm: Llama, chunk: list[int], add_bos: bool) -> np.ndarray:
    """NLLs of tokens n_ctx/2+1 .. n_ctx-1 of one chunk, in a fresh context."""
    evaluated = list(chunk)
    if add_bos:
        evaluated[0] = llm.token_bos()
    llm.reset()
    llm._ctx.kv_cache_clear()
    llm.eval(evaluated)
    first = N_CTX // 2
    logits = np.asarray(llm.scores[first: N_CTX - 1], dtype=np.float64)
    targets = np.asarray(chunk[first + 1: N_CTX])
    m = logits.max(axis=1)
    log_z = m + np.log(np.exp(logits - m[:, None]).sum(axis=1))
    return log_z - logits[np.arange(len(targets)), targets]


def uncertainty(nll: np.ndarray) -> float:
    """llama-perplexity's "+/-": PPL * sqrt(var(NLL) / (count - 1))."""
    mean = nll.mean()
    var = (nll ** 2).mean() - mean ** 2
    return float(math.exp(mean) * math.sqrt(max(var, 0.0) / (len(nll) - 1)))


def perplexity(model: str, text: str, threads: int) -> dict:
    llm = Llama(model_path=model, n_ctx=N_CTX, n_batch=N_CTX, n_ubatch=N_CTX, n_threads=threads,
                n_threads_batch=threads, logits_all=True, seed=0, verbose=False)
    add_bos = llama_cpp.llama_vocab_get_add_bos(llama_cpp.llama_model_get_vocab(llm.model))
    tokens = llm.tokenize(text.encode("utf-8"), add_bos=True, special=False)
    n_chunk = len(tokens) // N_CTX
    per_chunk = []
    all_nll = []
    for i in range(n_chunk):
        nll = chunk_nll(llm, tokens[i * N_CTX: (i + 1) * N_CTX], bool(add_bos))
        all_nll.append(nll)
        per_chunk.append(round(float(nll.mean()), 6))
        print(f"  [{i + 1}/{n_chunk}] running PPL {math.exp(np.concatenate(all_nll).mean()):.4f}", file=sys.stderr)
    nll = np.concatenate(all_nll)
    return {
        "model_file": os.path.basename(model),
        "model_sha256": sha256_of(model),
        "add_bos": bool(add_bos),
        "n_tokens": len(tokens),
        "first_tokens": tokens[:16],
        "n_chunks": n_chunk,
        "n_scored": int(len(nll)),
        "chunk_mean_nll": per_chunk,
        "mean_nll": round(float(nll.mean()), 6),
        "ppl": round(float(math.exp(nll.mean())), 4),
        "ppl_uncertainty": round(uncertainty(nll), 4),
    }


def run_llama_perplexity(binary: str, model: str) -> dict:
    cmd = [binary, "-m", model, "-f", TEXT, "-c", str(N_CTX), "-b", str(N_CTX)]
    out = subprocess.run(cmd, capture_output=True, text=True, check=True)
    log = out.stdout + out.stderr
    final = re.search(r"Final estimate: PPL = ([0-9.]+) \+/- ([0-9.]+)", log)
    tokens = re.search(r"tokenizing the input .*?\n.*?tokenization took", log, re.S)
    chunks = re.search(r"calculating perplexity over (\d+) chunks", log)
    if not final:
        raise RuntimeError(f"no final estimate in llama-perplexity's output:\n{log[-2000:]}")
    del tokens
    return {"command": " ".join(cmd), "ppl": float(final.group(1)), "ppl_uncertainty": float(final.group(2)),
            "n_chunks": int(chunks.group(1)) if chunks else None}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("out")
    parser.add_argument("models", nargs="+")
    parser.add_argument("-t", "--threads", type=int, default=N_THREADS,
                        help="llama.cpp threads (1 is fastest on a machine busy with other work: its threads "
                             "spin at barriers)")
    parser.add_argument("--llama-perplexity", help="path of a llama-perplexity binary to run as well")
    parser.add_argument("--merge", action="store_true",
                        help="the arguments after OUT are result files of this script: concatenate their models")
    args = parser.parse_args()
    if args.merge:
        parts = []
        for path in args.models:
            with open(path, encoding="utf-8") as f:
                parts.append(json.load(f))
        merged = dict(parts[0], models=[m for p in parts for m in p["models"]])
        with open(args.out, "w", encoding="utf-8") as f:
            json.dump(merged, f, indent=1)
            f.write("\n")
        return 0
    if sha256_of(TEXT) != TEXT_SHA256:
        raise SystemExit(f"{TEXT} is not the expected file (sha256 differs)")
    with open(TEXT, encoding="utf-8") as f:
        text = f.read()
    results = []
    for model in args.models:
        print(model, file=sys.stderr)
        result = perplexity(model, text, args.threads)
        if args.llama_perplexity:
            result["llama_perplexity"] = run_llama_perplexity(args.llama_perplexity, model)
        print(f"  PPL = {result['ppl']} over {result['n_chunks']} chunks", file=sys.stderr)
        results.append(result)
    golden = {
        "generator": "tools/make_perplexity_reference.py",
        "reference": f"llama.cpp via llama-cpp-python {llama_cpp.__version__}",
        "text": TEXT,
        "text_sha256": TEXT_SHA256,
        "n_ctx": N_CTX,
        "n_threads": args.threads,
        "protocol": "llama-perplexity: chunks of n_ctx tokens, fresh context each, first token -> BOS when the "
                    "model adds BOS, NLL of tokens n_ctx/2+1..n_ctx-1 of each chunk, PPL = exp(mean NLL)",
        "models": results,
    }
    with open(args.out, "w", encoding="utf-8") as f:
        json.dump(golden, f, indent=1)
        f.write("\n")
    print(f"wrote {args.out}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
