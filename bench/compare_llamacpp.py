#!/usr/bin/env python3
"""Folio against llama.cpp on the CPU: prompt processing and generation, side by side.

For each model, at one thread count, both engines are measured with
llama-bench's semantics:

  pp<P>  P random tokens (BOS first when the model adds one) decoded as one
         batch into an empty KV cache; tokens/s = P / time of that decode.
  tg<N>  N tokens decoded one at a time into an empty KV cache, each step
         waiting for its logits; tokens/s = N / total time.

llama.cpp runs in this process through llama-cpp-python's low-level API
(llama_decode on llama_batch_get_one, as llama-bench does; F16 KV cache,
n_batch = n_ubatch = P, flash attention "auto" like llama-bench, one warm-up
of each test first). Folio runs as `folio bench -m MODEL -p P -n N -r 1 -t T
--json`, once per repetition: the two engines alternate, repetition by
repetition, so that noise on this shared machine falls on both. The table
gives mean +- sd over the repetitions and the ratio Folio / llama.cpp.

Also, when `folio run` exists: peak resident memory (GNU time's "Maximum
resident set size") of `folio run` on SmolLM2 at -c 2048 against the file size
plus the F16 KV cache of 2048 positions (the issue's limit is 1.3 x file + KV).

Results go to bench/results/cpu-vs-llamacpp-<UTC date>.{txt,json}, with the
command line, date, CPU, thread count, load average and versions.

    .venv/bin/python bench/compare_llamacpp.py            # both test models, -t 2 -r 5
    .venv/bin/python bench/compare_llamacpp.py -t 2 -r 5 --folio build/app/folio \
        -m models/SmolLM2-135M-Instruct.Q4_1.gguf -m models/gemma-3-270m-q4_k_m.gguf
"""
from __future__ import annotations

import argparse
import ctypes
import datetime
import json
import os
import platform
import random
import shlex
import statistics
import subprocess
import sys
import time

import llama_cpp

DEFAULT_MODELS = ("models/SmolLM2-135M-Instruct.Q4_1.gguf", "models/gemma-3-270m-q4_k_m.gguf")
DEFAULT_FOLIO = "build/app/folio"
RSS_MODEL = "models/SmolLM2-135M-Instruct.Q4_1.gguf"
RSS_CTX = 2048
FLASH_ATTN = {"auto": llama_cpp.LLAMA_FLASH_ATTN_TYPE_AUTO, "on": llama_cpp.LLAMA_FLASH_ATTN_TYPE_ENABLED,
              "off": llama_cpp.LLAMA_FLASH_ATTN_TYPE_DISABLED}


def _silence(level, text, user_data):  # llama.cpp logs every load to stderr otherwise
    del level, text, user_data


_LOG_CALLBACK = llama_cpp.llama_log_callback(_silence)


class LlamaCppBench:
    """One model loaded once, one context; pp and tg as llama-bench runs them."""

    def __init__(self, path: str, threads: int, n_prompt: int, n_gen: int, flash_attn: str):
        llama_cpp.llama_log_set(_LOG_CALLBACK, ctypes.c_void_p(0))
        llama_cpp.llama_backend_init()
        mparams = llama_cpp.llama_model_default_params()
        mparams.n_gpu_layers = 0
        self.model = llama_cpp.llama_model_load_from_file(path.encode(), mparams)
        if not self.model:
            raise RuntimeError(f"llama.cpp could not load {path}")
        cparams = llama_cpp.llama_context_default_params()
        cparams.n_ctx = n_prompt + n_gen
        cparams.n_batch = n_prompt
        cparams.n_ubatch = n_prompt
        cparams.n_threads = threads
        cparams.n_threads_batch = threads
        cparams.flash_attn_type = FLASH_ATTN[flash_attn]
        cparams.no_perf = True
        self.ctx = llama_cpp.llama_init_from_model(self.model, cparams)
        if not self.ctx:
            raise RuntimeError(f"llama.cpp could not make a context for {path}")
        vocab = llama_cpp.llama_model_get_vocab(self.model)
        self.n_vocab = llama_cpp.llama_vocab_n_tokens(vocab)
        self.bos = llama_cpp.llama_vocab_bos(vocab) if llama_cpp.llama_vocab_get_add_bos(vocab) else None
        self.rng = random.Random(0)
        self.n_prompt, self.n_gen = n_prompt, n_gen

    def _clear(self) -> None:
        llama_cpp.llama_memory_clear(llama_cpp.llama_get_memory(self.ctx), False)

    def _decode(self, tokens: list[int]) -> None:
        arr = (llama_cpp.llama_token * len(tokens))(*tokens)
        if llama_cpp.llama_decode(self.ctx, llama_cpp.llama_batch_get_one(arr, len(tokens))) != 0:
            raise RuntimeError("llama_decode failed")

    def _first_token(self) -> int:
        return self.bos if self.bos is not None else self.rng.randrange(self.n_vocab)

    def prompt_seconds(self, n_prompt: int) -> float:
        self._clear()
        tokens = [self._first_token()] + [self.rng.randrange(self.n_vocab) for _ in range(n_prompt - 1)]
        start = time.perf_counter()
        self._decode(tokens)
        llama_cpp.llama_synchronize(self.ctx)
        return time.perf_counter() - start

    def generation_seconds(self, n_gen: int) -> float:
        self._clear()
        token = self._first_token()
        steps = []
        for _ in range(n_gen):  # tokens drawn outside the timed region
            steps.append((llama_cpp.llama_token * 1)(token))
            token = self.rng.randrange(self.n_vocab)
        start = time.perf_counter()
        for arr in steps:
            if llama_cpp.llama_decode(self.ctx, llama_cpp.llama_batch_get_one(arr, 1)) != 0:
                raise RuntimeError("llama_decode failed")
            llama_cpp.llama_synchronize(self.ctx)
        return time.perf_counter() - start

    def warm_up(self) -> None:
        self.prompt_seconds(self.n_prompt)
        self.generation_seconds(1)

    def close(self) -> None:
        llama_cpp.llama_free(self.ctx)
        llama_cpp.llama_model_free(self.model)


def folio_has_verb(folio: str, verb: str) -> bool:
    if not os.access(folio, os.X_OK):
        return False
    probe = subprocess.run([folio, verb, "--help"], capture_output=True, text=True)
    return probe.returncode == 0


def folio_bench_once(folio: str, model: str, args: argparse.Namespace) -> dict:
    cmd = [folio, "bench", "-m", model, "-p", str(args.n_prompt), "-n", str(args.n_gen), "-r", "1",
           "-t", str(args.threads), "--json"]
    out = subprocess.run(cmd, capture_output=True, text=True)
    if out.returncode != 0:
        raise RuntimeError(f"{shlex.join(cmd)} failed ({out.returncode}):\n{out.stderr[-2000:]}")
    return json.loads(out.stdout)


def summary(values: list[float]) -> dict:
    return {"mean_tps": statistics.fmean(values), "sd_tps": statistics.stdev(values) if len(values) > 1 else 0.0,
            "runs_tps": [round(v, 3) for v in values]}


def bench_model(model: str, args: argparse.Namespace, with_folio: bool) -> dict:
    llama = LlamaCppBench(model, args.threads, args.n_prompt, args.n_gen, args.flash_attn)
    llama.warm_up()
    pp, tg, folio_pp, folio_tg = [], [], [], []
    for rep in range(args.repetitions):
        pp.append(args.n_prompt / llama.prompt_seconds(args.n_prompt))
        tg.append(args.n_gen / llama.generation_seconds(args.n_gen))
        if with_folio:
            result = folio_bench_once(args.folio, model, args)
            folio_pp.append(float(result["pp"]["mean_tps"]))
            folio_tg.append(float(result["tg"]["mean_tps"]))
        print(f"  rep {rep + 1}/{args.repetitions}: llama.cpp pp {pp[-1]:.1f} tg {tg[-1]:.1f}"
              + (f" | folio pp {folio_pp[-1]:.1f} tg {folio_tg[-1]:.1f}" if with_folio else ""), file=sys.stderr)
    llama.close()
    entry = {"model": model, "model_bytes": os.path.getsize(model),
             "llama_cpp": {"pp": summary(pp), "tg": summary(tg)}}
    if with_folio:
        entry["folio"] = {"pp": summary(folio_pp), "tg": summary(folio_tg)}
        entry["ratio"] = {k: entry["folio"][k]["mean_tps"] / entry["llama_cpp"][k]["mean_tps"] for k in ("pp", "tg")}
    return entry


def kv_bytes_f16(model: str, n_ctx: int) -> int:
    """K and V, F16, every layer, n_ctx positions (llama arch keys)."""
    import gguf  # only here: the benchmark itself does not need it
    reader = gguf.GGUFReader(model)
    arch = str(reader.fields["general.architecture"].contents())

    def key(name, default=None):
        f = reader.fields.get(f"{arch}.{name}")
        return default if f is None else int(f.contents())
    n_embd, n_head = key("embedding_length"), key("attention.head_count")
    n_kv = key("attention.head_count_kv", n_head)
    k_len = key("attention.key_length", n_embd // n_head)
    v_len = key("attention.value_length", n_embd // n_head)
    return key("block_count") * n_ctx * n_kv * (k_len + v_len) * 2


def peak_rss_folio_run(folio: str) -> dict:
    cmd = ["/usr/bin/time", "-v", folio, "run", "-m", RSS_MODEL, "-p", "The capital of France is", "-n", "32",
           "-c", str(RSS_CTX), "-t", "2"]
    out = subprocess.run(cmd, capture_output=True, text=True)
    rss_kb = None
    for line in out.stderr.splitlines():
        if "Maximum resident set size" in line:
            rss_kb = int(line.rsplit(":", 1)[1])
    if out.returncode != 0 or rss_kb is None:
        return {"command": shlex.join(cmd), "error": out.stderr[-1000:]}
    file_bytes, kv = os.path.getsize(RSS_MODEL), kv_bytes_f16(RSS_MODEL, RSS_CTX)
    rss = rss_kb * 1024
    return {"command": shlex.join(cmd), "peak_rss_bytes": rss, "file_bytes": file_bytes, "kv_f16_bytes": kv,
            "limit_bytes": int(1.3 * file_bytes + kv), "rss_over_file_plus_kv": rss / (file_bytes + kv)}


def cpu_model() -> str:
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown"


def git_commit() -> str:
    out = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True)
    return out.stdout.strip() or "unknown"


def folio_version(folio: str) -> str:
    if not os.access(folio, os.X_OK):
        return "absent"
    return subprocess.run([folio, "--version"], capture_output=True, text=True).stdout.strip()


def fmt(s: dict) -> str:
    return f"{s['mean_tps']:9.2f} ± {s['sd_tps']:6.2f}"


def report_text(result: dict) -> str:
    lines = [f"# {result['command']}",
             f"# date {result['date']}  cpu {result['cpu']} ({result['logical_cpus']} logical)  threads {result['threads']}",
             f"# llama.cpp via llama-cpp-python {result['llama_cpp_python']} ({result['llama_cpp_system_info']})",
             f"# llama.cpp flash attention: {result['flash_attn']}; F16 KV cache",
             f"# folio {result['folio_version']} at git {result['git_commit']}",
             f"# load average before: {result['loadavg_before']}  after: {result['loadavg_after']}",
             f"# {result['repetitions']} repetitions, engines alternating; tokens/s, mean ± sd", ""]
    header = f"{'model':<40} {'test':<6} {'llama.cpp t/s':>20} {'folio t/s':>20} {'folio/llama.cpp':>16}"
    lines += [header, "-" * len(header)]
    for m in result["models"]:
        for test, n in (("pp", result["n_prompt"]), ("tg", result["n_gen"])):
            folio = fmt(m["folio"][test]) if "folio" in m else "n/a"
            ratio = f"{m['ratio'][test]:.3f}" if "ratio" in m else "n/a"
            lines.append(f"{os.path.basename(m['model']):<40} {test}{n:<4} {fmt(m['llama_cpp'][test]):>20} "
                         f"{folio:>20} {ratio:>16}")
    if result.get("folio_note"):
        lines += ["", result["folio_note"]]
    rss = result.get("peak_rss")
    if rss:
        lines.append("")
        if "peak_rss_bytes" in rss:
            lines.append(f"peak RSS of `{rss['command']}`: {rss['peak_rss_bytes'] / 2**20:.1f} MiB; file "
                         f"{rss['file_bytes'] / 2**20:.1f} MiB + F16 KV {rss['kv_f16_bytes'] / 2**20:.1f} MiB; "
                         f"limit 1.3 x file + KV = {rss['limit_bytes'] / 2**20:.1f} MiB: "
                         f"{'met' if rss['peak_rss_bytes'] <= rss['limit_bytes'] else 'NOT met'}")
        else:
            lines.append(f"peak RSS: `{rss['command']}` failed: {rss['error']}")
    return "\n".join(lines) + "\n"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("-m", "--model", action="append", help="GGUF model (repeatable; default: both test models)")
    parser.add_argument("-t", "--threads", type=int, default=2)
    parser.add_argument("-r", "--repetitions", type=int, default=5)
    parser.add_argument("-p", "--n-prompt", type=int, default=512)
    parser.add_argument("-n", "--n-gen", type=int, default=128)
    parser.add_argument("--flash-attn", choices=sorted(FLASH_ATTN), default="auto",
                        help="llama.cpp's flash attention (llama-bench's default: auto)")
    parser.add_argument("--folio", default=DEFAULT_FOLIO, help=f"the folio binary (default {DEFAULT_FOLIO})")
    parser.add_argument("--out-dir", default="bench/results")
    parser.add_argument("--no-write", action="store_true", help="print only")
    args = parser.parse_args()
    models = args.model or list(DEFAULT_MODELS)

    with_folio = folio_has_verb(args.folio, "bench")
    note = "" if with_folio else (f"folio: `{args.folio} bench` does not exist yet (binary missing or verb "
                                  f"unknown): llama.cpp's numbers alone.")
    if note:
        print(note, file=sys.stderr)
    now = datetime.datetime.now(datetime.timezone.utc)
    result = {
        "command": shlex.join([os.path.relpath(sys.executable) if sys.executable.startswith(os.getcwd())
                               else sys.executable] + sys.argv),
        "date": now.strftime("%Y-%m-%d %H:%M UTC"),
        "cpu": cpu_model(), "logical_cpus": os.cpu_count(), "threads": args.threads,
        "llama_cpp_python": llama_cpp.__version__,
        "llama_cpp_system_info": llama_cpp.llama_print_system_info().decode(errors="replace").strip(),
        "flash_attn": args.flash_attn,
        "folio_version": folio_version(args.folio), "git_commit": git_commit(),
        "loadavg_before": " ".join(f"{v:.2f}" for v in os.getloadavg()),
        "repetitions": args.repetitions, "n_prompt": args.n_prompt, "n_gen": args.n_gen,
        "folio_note": note, "models": [],
    }
    for model in models:
        print(model, file=sys.stderr)
        result["models"].append(bench_model(model, args, with_folio))
    if folio_has_verb(args.folio, "run"):
        result["peak_rss"] = peak_rss_folio_run(args.folio)
    result["loadavg_after"] = " ".join(f"{v:.2f}" for v in os.getloadavg())

    text = report_text(result)
    print(text)
    if not args.no_write:
        os.makedirs(args.out_dir, exist_ok=True)
        stem = os.path.join(args.out_dir, f"cpu-vs-llamacpp-{now.strftime('%Y-%m-%d-%H%M')}")
        with open(stem + ".txt", "w", encoding="utf-8") as f:
            f.write(text)
        with open(stem + ".json", "w", encoding="utf-8") as f:
            json.dump(result, f, indent=1)
            f.write("\n")
        print(f"wrote {stem}.txt and .json", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
