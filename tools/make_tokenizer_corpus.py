#!/usr/bin/env python3
"""Writes tests/data/tokenizer/corpus.jsonl: varied strings for tokenizer goldens.

Deterministic (seeded); rerun with

    .venv/bin/python tools/make_tokenizer_corpus.py tests/data/tokenizer/corpus.jsonl

One JSON string per line. The categories are the places tokenizers go wrong:
whitespace runs, code, emoji (ZWJ sequences, skin tones, flags), scripts
without spaces or with combining marks, numbers, contractions, special-token
text (whole and partial), markdown, URLs, control characters, long inputs.
"""
from __future__ import annotations

import json
import random
import sys

SEED = 20261129

WORDS = ("the of and to in is you that it he was for on are as with his they at be this have from "
         "or one had by word but not what all were we when your can said there use an each which she "
         "do how their if will up other about out many then them these so some her would make like him "
         "into time has look two more write go see number no way could people my than first water been "
         "call who oil its now find long down day did get come made may part tokenizer inference "
         "quantization attention transformer kernel gradient").split()
CONTRACTIONS = ["'s", "'t", "'re", "'ve", "'m", "'ll", "'d", "'S", "'T", "'RE", "'VE", "'M", "'LL", "'D"]
SPECIALS = ["<|im_start|>", "<|im_end|>", "<|endoftext|>", "<repo_name>", "<file_sep>", "<jupyter_code>",
            "<start_of_turn>", "<end_of_turn>", "<bos>", "<eos>", "<pad>", "<mask>", "<unk>", "<unused0>",
            "<unused42>", "<start_of_image>", "<end_of_image>", "[multimodal]", "<table>", "</td>", "<h1>",
            "<code>", "</code>"]
PARTIAL_SPECIALS = ["<|im_", "<|im_start", "|im_start|>", "<|im_end", "<start_of_", "<end_of_turn",
                    "start_of_turn>", "<bo", "<bos", "bos>", "<|", "|>", "<<|im_start|>>", "<|<|im_end|>|>",
                    "<|IM_START|>", "< |im_start| >", "<start_of_turn >", "<eos >"]
EMOJI = ["😀", "😂", "🤖", "🚀", "❤️", "👍", "👍🏻", "👍🏽", "👍🏿", "👩‍💻", "👨‍👩‍👧‍👦", "🏳️‍🌈", "🧑🏾‍🚀",
         "🇫🇷", "🇯🇵", "🇺🇸", "✨", "🔥", "💯", "🙏🏼", "👩🏻‍❤️‍💋‍👨🏼", "🫠", "🪿", "©️", "#️⃣", "1️⃣"]
SCRIPTS = {
    "cjk": ["你好，世界。", "今天天气很好。", "日本語のテキストです。", "東京都渋谷区", "한국어 문장입니다.",
            "我们正在测试分词器。", "ひらがなとカタカナ", "中文、日本語、한국어", "龍が如く", "𠀀𠀁𪚥"],
    "arabic": ["مرحبا بالعالم", "السلام عليكم ورحمة الله", "اللغة العربية جميلة", "١٢٣٤٥٦٧٨٩٠"],
    "hebrew": ["שלום עולם", "עברית היא שפה שמית", "בְּרֵאשִׁית בָּרָא"],
    "devanagari": ["नमस्ते दुनिया", "हिन्दी भाषा", "संस्कृतम्", "क्षत्रिय ज्ञान"],
    "thai": ["สวัสดีครับ", "ภาษาไทยไม่มีช่องว่างระหว่างคำ", "กรุงเทพมหานคร"],
    "cyrillic": ["Привет, мир!", "Съешь же ещё этих мягких французских булок", "ЁЛКИ-ПАЛКИ", "Україна, Київ"],
    "latin": ["Ça va très bien, merci", "Größe und Straße", "naïve café résumé", "Ångström Øre Æsir",
              "ñandú pingüino", "Dvořák Łódź Kraków", "İstanbul ışık", "e\u0301 combining acute",
              "ﬁ ligature ﬂ", "Ｆｕｌｌｗｉｄｔｈ"],
    "greek": ["Γειά σου κόσμε", "αβγδεζηθ ΑΒΓΔ"],
    "other": ["ሰላም ዓለም", "Բարեւ աշխարհ", "გამარჯობა", "ᚠᚢᚦᚨᚱᚲ", "𝔘𝔫𝔦𝔠𝔬𝔡𝔢", "𝐁𝐨𝐥𝐝 𝑖𝑡𝑎𝑙𝑖𝑐"],
}
CODE = [
    "def add(a, b):\n    return a + b\n",
    "for (int i = 0; i < n; ++i) {\n\tsum += v[i];\n}\n",
    "#include <stdio.h>\nint main(void) { printf(\"hi\\n\"); return 0; }\n",
    "fn main() {\n    let x: Vec<u32> = (0..10).map(|i| i * i).collect();\n    println!(\"{:?}\", x);\n}\n",
    "const f = async (x) => { await fetch(`/api/${x}`); };\n",
    "SELECT id, name FROM users WHERE age >= 18 ORDER BY name DESC;",
    "if __name__ == \"__main__\":\n    main()\n",
    "<div class=\"card\"><p>Hello</p></div>",
    "package main\n\nimport \"fmt\"\n\nfunc main() {\n\tfmt.Println(\"hi\")\n}\n",
    "x <<= 2; y >>>= 3; z ??= w; a->b; c::d; e => f; g != h; i === j;",
    "#!/bin/bash\nset -euo pipefail\nfor f in *.txt; do echo \"$f\"; done\n",
    "public static void main(String[] args) { System.out.println(args.length); }",
    "    \t  indented with mixed tabs\n\t\t\tand spaces   \n",
    "{\"key\": [1, 2.5, -3e10, true, null], \"nested\": {\"a\": \"b\"}}",
    "lambda x: x**2 if x % 2 == 0 else ~x & 0xFF | 0b1010 ^ 0o17",
    "\\begin{equation} E = mc^2 \\end{equation} $\\alpha_i^2$",
]
MARKDOWN = ["# Title\n\n## Subtitle\n\n- item one\n- item two\n", "**bold** and _italic_ and `code`",
            "> quote\n>> nested", "| a | b |\n|---|---|\n| 1 | 2 |", "```python\nprint('x')\n```",
            "1. first\n2. second\n   - sub", "[link](https://example.com) ![img](a.png)", "---\n***\n___"]
URLS = ["https://www.example.com/path/to/page?query=1&x=y#frag", "http://localhost:8080/api/v1/models",
        "ftp://user:pass@host.org/file.tar.gz", "mailto:someone@example.org", "www.wikipedia.org/wiki/Tokenization",
        "https://github.com/ggml-org/llama.cpp/blob/master/src/llama-vocab.cpp#L123",
        "file:///home/user/My%20Documents/report.pdf", "user.name+tag@sub.domain.co.uk"]
PUNCT = ["!!!", "???", "...", "?!?!", "—", "–", "…", "«»", "“quoted”", "‘single’", "''", "\"\"", "'''", "``",
         "::", ";;", ",,", "--", "-->", "<--", "<!-- -->", "@#$%^&*()", "[]{}()<>", "~`|\\/", "¡¿", "§¶†‡",
         "™®©", "°±×÷", "€£¥₹₿", "½¼¾", "→←↑↓⇒", "∀∃∈∉∑∏√∞≠≤≥", "′″", "•·", "\u00a0", "\u200b", "\ufeff",
         "\u2028", "\u3000", "\u202e"]
CONTROL = ["\x00", "\x01", "\x07", "\x08", "\x0b", "\x0c", "\x1b[31m", "\x7f", "\x85", "\x9f", "\r", "\r\n"]
WHITESPACE = [" ", "  ", "   ", "    ", "\t", "\t\t", "\n", "\n\n", "\n\n\n", "\r\n", " \n", "\n ", " \t ",
              "\t\n", "        ", " " * 17, "\n" * 5, "\t" * 4, " \n\n ", "\u00a0 ", "\u3000"]


def number(rng: random.Random) -> str:
    kind = rng.randrange(8)
    digits = "".join(rng.choice("0123456789") for _ in range(rng.randint(1, 24)))
    if kind == 0:
        return digits
    if kind == 1:
        return f"{int(digits):,}"
    if kind == 2:
        return f"{int(digits):,}".replace(",", ".")
    if kind == 3:
        return f"{rng.uniform(-1e6, 1e6):.{rng.randint(0, 8)}f}"
    if kind == 4:
        return f"{rng.uniform(-1, 1):.3e}"
    if kind == 5:
        return f"{rng.randint(1, 31)}/{rng.randint(1, 12)}/{rng.randint(1900, 2100)}"
    if kind == 6:
        return f"+1 ({rng.randint(100, 999)}) {rng.randint(100, 999)}-{rng.randint(1000, 9999)}"
    return f"{rng.randint(0, 255)}.{rng.randint(0, 255)}.{rng.randint(0, 255)}.{rng.randint(0, 255)}"


def sentence(rng: random.Random, n: int) -> str:
    words = [rng.choice(WORDS) for _ in range(n)]
    for i in range(len(words)):
        r = rng.random()
        if r < 0.1:
            words[i] = words[i].capitalize()
        elif r < 0.13:
            words[i] = words[i].upper()
        elif r < 0.18:
            words[i] += rng.choice(CONTRACTIONS)
    return " ".join(words)


def piece(rng: random.Random) -> str:
    """One random fragment from any category."""
    kind = rng.randrange(12)
    if kind == 0:
        return sentence(rng, rng.randint(1, 12))
    if kind == 1:
        return rng.choice(WHITESPACE)
    if kind == 2:
        return rng.choice(CODE)
    if kind == 3:
        return "".join(rng.choice(EMOJI) for _ in range(rng.randint(1, 4)))
    if kind == 4:
        return rng.choice(rng.choice(list(SCRIPTS.values())))
    if kind == 5:
        return number(rng)
    if kind == 6:
        return rng.choice(SPECIALS)
    if kind == 7:
        return rng.choice(PARTIAL_SPECIALS)
    if kind == 8:
        return rng.choice(MARKDOWN)
    if kind == 9:
        return rng.choice(URLS)
    if kind == 10:
        return rng.choice(PUNCT)
    return rng.choice(CONTROL)


def corpus() -> list[str]:
    rng = random.Random(SEED)
    out: list[str] = []
    # Every fixed fragment alone, and with spaces around it.
    fixed = (WHITESPACE + CODE + EMOJI + [s for v in SCRIPTS.values() for s in v] + SPECIALS + PARTIAL_SPECIALS
             + MARKDOWN + URLS + PUNCT + CONTROL)
    for s in fixed:
        out += [s, " " + s, s + " ", "x" + s + "y"]
    for c in CONTRACTIONS:
        out += [f"I{c}", f"you{c} here", f"THEY{c}", f"it{c}{c}", f"'{c[1:]}", f"don{c} won{c}"]
    for n in range(1, 40):
        out.append("1234567890" * (n // 10) + "1234567890"[: n % 10])
    for _ in range(60):
        out.append(number(rng))
        out.append(f"{rng.choice(WORDS)} {number(rng)} {rng.choice(WORDS)}")
    for _ in range(250):
        out.append(sentence(rng, rng.randint(1, 30)))
    for _ in range(900):
        out.append("".join(piece(rng) + rng.choice(["", "", " ", "\n", "  "]) for _ in range(rng.randint(1, 6))))
    # Chat-formatted text, as the engine will see it.
    for _ in range(60):
        user, reply = sentence(rng, rng.randint(2, 15)), sentence(rng, rng.randint(2, 15))
        if rng.random() < 0.5:
            out.append(f"<|im_start|>system\nYou are helpful.<|im_end|>\n<|im_start|>user\n{user}<|im_end|>\n"
                       f"<|im_start|>assistant\n{reply}<|im_end|>\n")
        else:
            out.append(f"<bos><start_of_turn>user\n{user}<end_of_turn>\n<start_of_turn>model\n{reply}<end_of_turn>\n")
    # Whitespace runs of every kind and length.
    for _ in range(120):
        out.append("".join(rng.choice([" ", "\t", "\n", "\r", "\u00a0", "a", "é", "1"]) for _ in range(rng.randint(1, 40))))
    # Byte-fallback-heavy and unusual text.
    for _ in range(60):
        out.append("".join(chr(rng.choice([rng.randint(0x20, 0x7e), rng.randint(0xa0, 0x2fff),
                                           rng.randint(0x3000, 0x9fff), rng.randint(0xac00, 0xd7a3),
                                           rng.randint(0x10000, 0x1faff), rng.randint(0xe000, 0xf8ff)]))
                           for _ in range(rng.randint(1, 30))))
    # A few long inputs (several KB).
    for length in (3000, 6000, 9000, 12000):
        parts, size = [], 0
        while size < length:
            parts.append(piece(rng))
            size += len(parts[-1].encode("utf-8"))
        out.append(" ".join(parts))
    out.append("a" * 5000)
    out.append(" " * 3000)
    out.append("\n" * 1000 + "end")
    out.append("9" * 2000)
    out += ["", " ", "a", "A", "I", "'", "''"]
    # Surrogate code points cannot be encoded; drop any the generator could make.
    return [s for s in out if not any(0xD800 <= ord(c) <= 0xDFFF for c in s)]


def main() -> int:
    path = sys.argv[1] if len(sys.argv) > 1 else "tests/data/tokenizer/corpus.jsonl"
    lines = corpus()
    with open(path, "w", encoding="utf-8", newline="\n") as f:
        for s in lines:
            f.write(json.dumps(s, ensure_ascii=False) + "\n")
    print(f"wrote {len(lines)} strings to {path}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
