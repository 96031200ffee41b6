#!/usr/bin/env python3
"""Speculative decoding on the CPU: Folio against llama.cpp in one run (issue 20).

Five programs on the same prompt (the chat template rendered to text, so that
both engines read the same tokens), same threads, greedy, the same target and
draft weights:

  folio-plain     folio run -m TARGET_HF                        (no speculation)
  folio-k4        folio run ... --spec draft -md DRAFT --draft-max K --draft-fixed
  folio-adaptive  folio run ... --spec draft -md DRAFT --draft-max K   (adaptive K)
  llama-plain     llama-completion -m TARGET_GGUF               (no speculation)
  llama-k4        llama-speculative -m TARGET_GGUF -md DRAFT --spec-draft-n-max K

Each round runs every program once per prompt, in an order that rotates from
round to round, so that the load other work puts on this shared machine falls
on all of them; speedups are taken within a round (spec / plain of the same
engine, same round) and summarised as the median over rounds. Before a round
the script waits (up to --max-wait s) until no more than --max-running other
runnable tasks are seen: llama.cpp's spinning thread pool collapses when its 2
threads share 2 cores with other work (bench/README.md), and a round taken then
measures the scheduler. What it saw is printed with the round.

tok/s are each program's own decode rates: Folio's "generated N tokens, X
tok/s" (tokens after the first / time after the first), llama-speculative's
"decoded N tokens in T seconds", llama-completion's "eval time" line.
Acceptance: accepted / drafted draft tokens as each program reports them.
Greedy identity: every program's text must start with the shorter of it and
folio-plain's text (the engines stop at the same end-of-turn token; llama.cpp
counts one more token past -n).

    .venv/bin/python bench/spec_vs_llamacpp.py --folio build-sb/app/folio \\
        --llama-bin /work/llamacpp/build/bin -n 128 -r 5 > bench/results/...txt
"""
from __future__ import annotations

import argparse
import os
import re
import shlex
import statistics
import subprocess
import sys
import time

SYSTEM = "You are a helpful AI assistant named SmolLM, trained by Hugging Face"
PROMPTS = {
    "chat": "Write a short story about a cat who learns to play the piano.",
    "edit": "Repeat the following paragraph exactly, changing only the word Tuesday to Friday: The committee met on "
            "Tuesday to discuss the budget for next year. Members agreed that the library needs new computers, "
            "longer opening hours on weekends, and a larger collection of children's books. The treasurer warned "
            "that the roof repairs would take most of the reserve fund, so the new computers may have to wait "
            "until spring.",
}


def render(message: str) -> str:
    # SmolLM2's chat template (the GGUF's tokenizer.chat_template) for one user
    # message with the generation prompt.
    return (f"<|im_start|>system\n{SYSTEM}<|im_end|>\n<|im_start|>user\n{message}<|im_end|>\n"
            "<|im_start|>assistant\n")


def runnable_others(samples: int = 10) -> float:
    # Mean of /proc/stat's procs_running over ~1 s, less this process.
    seen = []
    for _ in range(samples):
        with open("/proc/stat") as f:
            for line in f:
                if line.startswith("procs_running"):
                    seen.append(int(line.split()[1]) - 1)
        time.sleep(0.1)
    return sum(seen) / len(seen)


def wait_quiet(max_running: float, max_wait: float) -> tuple[float, float]:
    t0 = time.time()
    while True:
        r = runnable_others()
        if r <= max_running or time.time() - t0 > max_wait:
            return r, time.time() - t0


def run(cmd: list[str], timeout: float) -> tuple[str, str, float]:
    t0 = time.time()
    try:
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
        return p.stdout, p.stderr, time.time() - t0
    except subprocess.TimeoutExpired as e:
        return (e.stdout or b"").decode() if isinstance(e.stdout, bytes) else (e.stdout or ""), "TIMEOUT", timeout


def parse(program: str, out: str, err: str, prompt_text: str) -> dict:
    r: dict = {"tps": None, "accept": None, "length": None, "text": ""}
    if program.startswith("folio"):
        m = re.search(r"generated (\d+) tokens, ([\d.]+) tok/s", err)
        if m: r["tps"], r["n"] = float(m.group(2)), int(m.group(1))
        m = re.search(r"(\d+) of (\d+) draft tokens accepted .*mean acceptance length ([\d.]+)", err)
        if m: r["accept"], r["drafted"], r["length"] = int(m.group(1)) / max(1, int(m.group(2))), int(m.group(2)), float(m.group(3))
        r["text"] = out.strip()
    elif program == "llama-k4":
        m = re.search(r"decoded\s+(\d+) tokens in\s+([\d.]+) seconds, speed:\s+([\d.]+) t/s", err)
        if m: r["tps"], r["n"] = float(m.group(3)), int(m.group(1))
        d = re.search(r"n_drafted = (\d+)", err)
        a = re.search(r"n_accept\s+= (\d+)", err)
        if d and a: r["accept"], r["drafted"] = int(a.group(1)) / max(1, int(d.group(1))), int(d.group(1))
        # stdout: the prompt (special tokens shown as text), then the output.
        text = out.replace("\r", "")
        i = text.find("<|im_start|>assistant\n")
        r["text"] = (text[i + len("<|im_start|>assistant\n"):] if i >= 0 else text).strip()
    elif program == "llama-plain":
        m = re.search(r"\beval time =\s+([\d.]+) ms /\s+(\d+) runs.*?([\d.]+) tokens per second", err)
        if m: r["tps"], r["n"] = float(m.group(3)), int(m.group(2))
        r["text"] = out.strip()
    return r


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--folio", default="build-sb/app/folio")
    ap.add_argument("--llama-bin", default="/work/llamacpp/build/bin")
    ap.add_argument("--target-hf", default="models/SmolLM2-135M-Instruct-hf")
    ap.add_argument("--target-gguf", default="/work/quantdata/SmolLM2-135M-Instruct-hf.F32.gguf")
    ap.add_argument("--draft", default="models/SmolLM2-135M-Instruct.Q4_1.gguf")
    ap.add_argument("-n", type=int, default=128)
    ap.add_argument("-t", type=int, default=2)
    ap.add_argument("-k", type=int, default=4)
    ap.add_argument("-r", "--rounds", type=int, default=5)
    ap.add_argument("--prompts", default="chat,edit")
    ap.add_argument("--programs", default="folio-plain,folio-k4,folio-adaptive,llama-plain,llama-k4")
    ap.add_argument("--max-running", type=float, default=0.5, help="other runnable tasks tolerated before a round")
    ap.add_argument("--max-wait", type=float, default=120)
    ap.add_argument("--timeout", type=float, default=300)
    a = ap.parse_args()

    n, t, k = str(a.n), str(a.t), str(a.k)
    L = a.llama_bin
    progs = {
        "folio-plain": [a.folio, "run", "-m", a.target_hf, "--temp", "0", "-n", n, "-t", t, "-c", "4096"],
        "folio-k4": [a.folio, "run", "-m", a.target_hf, "--spec", "draft", "-md", a.draft, "--draft-max", k,
                     "--draft-fixed", "--temp", "0", "-n", n, "-t", t, "-c", "4096"],
        "folio-adaptive": [a.folio, "run", "-m", a.target_hf, "--spec", "draft", "-md", a.draft, "--draft-max", k,
                           "--temp", "0", "-n", n, "-t", t, "-c", "4096"],
        "llama-plain": [f"{L}/llama-completion", "-m", a.target_gguf, "-t", t, "--temp", "0", "-n", n, "-c", "4096",
                        "-no-cnv", "--no-display-prompt", "--no-warmup"],
        "llama-k4": [f"{L}/llama-speculative", "-m", a.target_gguf, "-md", a.draft, "--spec-draft-n-max", k,
                     "-t", t, "--temp", "0", "-n", n, "-c", "4096"],
    }
    programs = [p for p in a.programs.split(",") if p]
    prompts = [p for p in a.prompts.split(",") if p]
    print(f"# {time.strftime('%Y-%m-%dT%H:%M:%SZ', time.gmtime())} {os.uname().machine}, {os.cpu_count()} CPUs; "
          f"-t {t} -n {n} K={k}, greedy, {a.rounds} rounds; command: {' '.join(map(shlex.quote, sys.argv))}")
    for p in programs:
        print(f"# {p}: {' '.join(map(shlex.quote, progs[p]))} -p PROMPT")
    for name in prompts:
        print(f"# prompt {name}: {render(PROMPTS[name])!r}")

    results: dict = {}  # (prompt, program) -> list of parsed runs, per round
    texts: dict = {}
    for rnd in range(a.rounds):
        busy, waited = wait_quiet(a.max_running, a.max_wait)
        print(f"## round {rnd + 1}: other runnable tasks {busy:.1f} after waiting {waited:.0f} s; "
              f"loadavg {open('/proc/loadavg').read().split()[0]}", flush=True)
        for pi, name in enumerate(prompts):
            text = render(PROMPTS[name])
            order = programs[(rnd + pi) % len(programs):] + programs[:(rnd + pi) % len(programs)]
            for prog in order:
                out, err, wall = run(progs[prog] + ["-p", text], a.timeout)
                r = parse(prog, out, err, text)
                r["wall"] = wall
                results.setdefault((name, prog), []).append(r)
                texts.setdefault((name, prog), r["text"])
                acc = f" accepted {r['accept']:.3f} of {r.get('drafted')}" if r["accept"] is not None else ""
                ln = f" mean length {r['length']:.2f}" if r.get("length") else ""
                tps = f"{r['tps']:.2f}" if r["tps"] is not None else "FAILED"
                print(f"{name:5s} {prog:15s} {tps:>8s} tok/s ({r.get('n')} tokens){acc}{ln}; wall {wall:.1f} s", flush=True)
                if r["tps"] is None:
                    print("   stderr tail: " + " | ".join(err.strip().splitlines()[-3:]))

    print("\n# summary: median (min-max) tok/s over rounds; speedup = spec / plain of the same engine, same round, median")
    print("| prompt | program | tok/s median | min-max | acceptance | mean length | speedup (median of rounds) | identical to folio-plain |")
    print("|---|---|---|---|---|---|---|---|")
    for name in prompts:
        ref = texts.get((name, "folio-plain"), "")
        for prog in programs:
            rs = results.get((name, prog), [])
            tps = [r["tps"] for r in rs if r["tps"] is not None]
            if not tps:
                print(f"| {name} | {prog} | failed | | | | | |")
                continue
            accs = [r["accept"] for r in rs if r["accept"] is not None]
            lens = [r["length"] for r in rs if r.get("length")]
            plain = "folio-plain" if prog.startswith("folio") else "llama-plain"
            ratios = [r["tps"] / p["tps"] for r, p in zip(rs, results.get((name, plain), []))
                      if r["tps"] and p["tps"]] if prog != plain else []
            txt = texts[(name, prog)]
            m = min(len(txt), len(ref))
            same = "yes" if m > 0 and txt[:m] == ref[:m] else ("-" if not ref else f"NO (first {m} chars differ)")
            cells = [name, prog, f"{statistics.median(tps):.2f}", f"{min(tps):.2f}-{max(tps):.2f}",
                     f"{statistics.mean(accs):.3f}" if accs else "-", f"{statistics.mean(lens):.2f}" if lens else "-",
                     f"{statistics.median(ratios):.3f} ({min(ratios):.2f}-{max(ratios):.2f})" if ratios else "-", same]
            print("| " + " | ".join(cells) + " |")
        # Folio against llama.cpp, same round
        for f, l in (("folio-plain", "llama-plain"), ("folio-k4", "llama-k4")):
            fr, lr = results.get((name, f), []), results.get((name, l), [])
            rat = [x["tps"] / y["tps"] for x, y in zip(fr, lr) if x["tps"] and y["tps"]]
            if rat:
                print(f"| {name} | {f} / {l} | | | | | {statistics.median(rat):.3f} ({min(rat):.2f}-{max(rat):.2f}) | |")
    print(f"# {time.strftime('%Y-%m-%dT%H:%M:%SZ', time.gmtime())} done; loadavg {open('/proc/loadavg').read().strip()}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
