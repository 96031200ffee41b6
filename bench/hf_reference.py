#!/usr/bin/env python3
"""Hugging Face transformers on the shapes of the CUDA benchmark, for the
ratio the issue asks for: random weights (no download), F16, SDPA attention,
on one GPU. Prints one JSON line per measurement:

  python3 bench/hf_reference.py --shape llama-3-8b [--tests tg128,pp512,tg128@4096,batch128]

tgN: batch-1 greedy decode of N tokens after a 1-token prompt (generate with
min_new_tokens = max_new_tokens, decode time = total - the prefill's time);
ppN: one forward of N tokens; tgN@D: decode after a D-token prompt;
batchB: B sequences of 128 prompt tokens, 128 generated, decode tokens/s.
Times are medians of --reps runs after a warm-up, with CUDA synchronisation.
"""
import argparse
import json
import statistics
import time

import torch
from transformers import LlamaConfig, LlamaForCausalLM

SHAPES = {
    "llama-3-8b": dict(vocab_size=128256, hidden_size=4096, num_hidden_layers=32, num_attention_heads=32,
                       num_key_value_heads=8, intermediate_size=14336, rope_theta=500000.0, tie_word_embeddings=False),
    "llama-3.2-1b": dict(vocab_size=128256, hidden_size=2048, num_hidden_layers=16, num_attention_heads=32,
                         num_key_value_heads=8, intermediate_size=8192, head_dim=64, rope_theta=500000.0,
                         tie_word_embeddings=True),
}


def timed(fn, reps):
    fn()  # warm-up
    times = []
    for _ in range(reps):
        torch.cuda.synchronize()
        t0 = time.perf_counter()
        fn()
        torch.cuda.synchronize()
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--shape", default="llama-3-8b", choices=sorted(SHAPES))
    ap.add_argument("--tests", default="tg128,pp512,tg128@4096,batch128")
    ap.add_argument("--reps", type=int, default=3)
    args = ap.parse_args()

    config = LlamaConfig(**SHAPES[args.shape], max_position_embeddings=8192, torch_dtype="float16")
    config._attn_implementation = "sdpa"
    torch.manual_seed(0)
    with torch.device("cuda"):
        model = LlamaForCausalLM(config).to(torch.float16).eval()
    vocab = config.vocab_size
    gen = dict(do_sample=False, pad_token_id=0, eos_token_id=None)

    def prompt(batch, n):
        return torch.randint(3, vocab, (batch, n), device="cuda")

    with torch.inference_mode():
        for test in args.tests.split(","):
            if test.startswith("pp"):
                n = int(test[2:])
                ids = prompt(1, n)
                t = timed(lambda: model(ids), args.reps)
                out = dict(test=test, tokens_per_s=n / t)
            elif test.startswith("tg"):
                n, _, depth = test[2:].partition("@")
                n, depth = int(n), int(depth or 1)
                ids = prompt(1, depth)
                prefill = timed(lambda: model.generate(ids, max_new_tokens=1, min_new_tokens=1, **gen), args.reps)
                total = timed(lambda: model.generate(ids, max_new_tokens=n + 1, min_new_tokens=n + 1, **gen), args.reps)
                out = dict(test=test, tokens_per_s=n / (total - prefill))
            elif test.startswith("batch"):
                b = int(test[5:])
                ids = prompt(b, 128)
                mask = torch.ones_like(ids)
                prefill = timed(lambda: model.generate(ids, attention_mask=mask, max_new_tokens=1, min_new_tokens=1, **gen), 1)
                total = timed(lambda: model.generate(ids, attention_mask=mask, max_new_tokens=129, min_new_tokens=129, **gen), 1)
                out = dict(test=test, decode_tokens_per_s=b * 128 / (total - prefill), total_s=total)
            else:
                raise SystemExit(f"unknown test {test}")
            out.update(shape=args.shape, dtype="f16", torch=torch.__version__, device=torch.cuda.get_device_name())
            print(json.dumps(out), flush=True)


if __name__ == "__main__":
    main()
