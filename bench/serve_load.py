#!/usr/bin/env python3
"""Load generator for OpenAI-compatible servers on this machine: folio serve,
llama-server, vLLM. Loopback only and bounded (requests, tokens, clients).

For each server and each concurrency level, `clients` threads send streamed
chat completions (temperature 0, ignore_eos, a fixed max_tokens) until the
level's requests are done, and it reports requests/s, output tokens/s, time
to first token and inter-token latency (p50, p99), measured client-side from
the SSE chunks.

  # folio serve started by the script on a free port:
  bench/serve_load.py --folio build/app/folio -m models/SmolLM2-135M-Instruct.Q4_1.gguf
  # servers already running (names are labels in the report):
  bench/serve_load.py --server folio=http://127.0.0.1:8080 --server llama=http://127.0.0.1:8081
"""
import argparse
import http.client
import json
import re
import subprocess
import sys
import threading
import time
from urllib.parse import urlparse

LOOPBACK = {"127.0.0.1", "localhost", "::1"}
LIMITS = {"requests": 1000, "max_tokens": 1024, "clients": 64}
PROMPTS = [
    "Write a short story about a lighthouse keeper.",
    "Explain how a bicycle works.",
    "List ten uses for a paperclip.",
    "Describe the water cycle to a child.",
]


def percentile(values, p):
    if not values:
        return float("nan")
    s = sorted(values)
    k = min(len(s) - 1, max(0, int(round(p / 100 * (len(s) - 1)))))
    return s[k]


def one_request(host, port, api_key, prompt, max_tokens):
    """(ttft_s, [inter-token gaps], output tokens, e2e_s) of one streamed chat completion."""
    body = json.dumps({"messages": [{"role": "user", "content": prompt}], "max_tokens": max_tokens,
                       "temperature": 0, "ignore_eos": True, "stream": True,
                       "stream_options": {"include_usage": True}})
    headers = {"Content-Type": "application/json"}
    if api_key:
        headers["Authorization"] = "Bearer " + api_key
    conn = http.client.HTTPConnection(host, port, timeout=600)
    t0 = time.perf_counter()
    conn.request("POST", "/v1/chat/completions", body=body, headers=headers)
    r = conn.getresponse()
    if r.status != 200:
        raise RuntimeError(f"status {r.status}: {r.read()[:200]!r}")
    ttft, last, gaps, chunks, usage_tokens = None, None, [], 0, None
    for raw in r:
        line = raw.strip()
        if not line.startswith(b"data: ") or line == b"data: [DONE]":
            continue
        event = json.loads(line[6:])
        if event.get("usage"):
            usage_tokens = event["usage"].get("completion_tokens")
        if not any((c.get("delta") or {}).get("content") for c in event.get("choices") or []):
            continue
        now = time.perf_counter()
        if ttft is None:
            ttft = now - t0
        else:
            gaps.append(now - last)
        last = now
        chunks += 1
    conn.close()
    return ttft, gaps, usage_tokens if usage_tokens is not None else chunks, time.perf_counter() - t0


def run_level(url, api_key, clients, requests, max_tokens):
    u = urlparse(url)
    lock = threading.Lock()
    next_index = [0]
    ttfts, gaps, tokens, errors = [], [], [0], []

    def worker():
        while True:
            with lock:
                i = next_index[0]
                if i >= requests:
                    return
                next_index[0] += 1
            try:
                ttft, g, n, _ = one_request(u.hostname, u.port, api_key, PROMPTS[i % len(PROMPTS)], max_tokens)
                with lock:
                    if ttft is not None:
                        ttfts.append(ttft)
                    gaps.extend(g)
                    tokens[0] += n
            except Exception as e:  # noqa: BLE001 - counted and reported
                with lock:
                    errors.append(repr(e))

    t0 = time.perf_counter()
    threads = [threading.Thread(target=worker) for _ in range(clients)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    seconds = time.perf_counter() - t0
    return {"clients": clients, "requests": requests, "errors": len(errors), "seconds": seconds,
            "requests_per_s": (requests - len(errors)) / seconds, "output_tokens_per_s": tokens[0] / seconds,
            "ttft_p50_s": percentile(ttfts, 50), "ttft_p99_s": percentile(ttfts, 99),
            "itl_p50_s": percentile(gaps, 50), "itl_p99_s": percentile(gaps, 99),
            "first_error": errors[0] if errors else None}


def start_folio(folio, model, extra):
    proc = subprocess.Popen([folio, "serve", "-m", model, "--port", "0", *extra], stderr=subprocess.PIPE,
                            stdout=subprocess.DEVNULL, text=True)
    for line in proc.stderr:
        sys.stderr.write(line)
        m = re.search(r"on (http://127\.0\.0\.1:\d+)/v1", line)
        if m:
            threading.Thread(target=lambda: [None for _ in proc.stderr], daemon=True).start()
            return proc, m.group(1)
    proc.kill()
    raise SystemExit("folio serve did not start")


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--server", action="append", default=[], metavar="NAME=URL", help="a running server (loopback)")
    ap.add_argument("--folio", help="start this folio binary's `serve` (with -m)")
    ap.add_argument("-m", "--model", help="model for --folio")
    ap.add_argument("--folio-arg", action="append", default=[], help="an extra argument for folio serve")
    ap.add_argument("--api-key", default="")
    ap.add_argument("--clients", default="1,8,32", help="concurrency levels (default 1,8,32)")
    ap.add_argument("--requests", type=int, default=32, help="requests per level (default 32)")
    ap.add_argument("--max-tokens", type=int, default=64, help="output tokens per request (default 64)")
    ap.add_argument("--json", help="write the results here too")
    args = ap.parse_args()

    levels = [int(c) for c in args.clients.split(",")]
    if not 1 <= args.requests <= LIMITS["requests"] or not 1 <= args.max_tokens <= LIMITS["max_tokens"] \
            or not all(1 <= c <= LIMITS["clients"] for c in levels):
        raise SystemExit(f"bounded: requests, max tokens and clients within {LIMITS}")
    servers = []
    for spec in args.server:
        name, _, url = spec.partition("=")
        servers.append((name, url.rstrip("/")))
    proc = None
    if args.folio:
        if not args.model:
            raise SystemExit("--folio needs -m MODEL")
        proc, url = start_folio(args.folio, args.model, args.folio_arg)
        servers.append(("folio", url))
    if not servers:
        raise SystemExit("no server: --server NAME=URL or --folio BIN -m MODEL")
    for name, url in servers:
        u = urlparse(url)
        if u.scheme != "http" or u.hostname not in LOOPBACK or not u.port:
            raise SystemExit(f"{name}: {url} is not a loopback http://HOST:PORT URL (this tool only loads this machine)")

    results = []
    try:
        print(f"{'server':<10} {'clients':>7} {'req/s':>8} {'out tok/s':>10} {'TTFT p50':>9} {'TTFT p99':>9} "
              f"{'ITL p50':>8} {'ITL p99':>8} {'errors':>6}")
        for level in levels:
            for name, url in servers:  # side by side, level by level
                r = run_level(url, args.api_key, level, args.requests, args.max_tokens)
                r["server"] = name
                results.append(r)
                print(f"{name:<10} {level:>7} {r['requests_per_s']:>8.2f} {r['output_tokens_per_s']:>10.1f} "
                      f"{r['ttft_p50_s']:>9.3f} {r['ttft_p99_s']:>9.3f} {r['itl_p50_s'] * 1e3:>6.1f}ms "
                      f"{r['itl_p99_s'] * 1e3:>6.1f}ms {r['errors']:>6}", flush=True)
                if r["first_error"]:
                    print(f"  first error: {r['first_error']}")
    finally:
        if proc:
            proc.terminate()
            proc.wait(timeout=30)
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"max_tokens": args.max_tokens, "requests": args.requests, "results": results}, f, indent=1)


if __name__ == "__main__":
    main()
