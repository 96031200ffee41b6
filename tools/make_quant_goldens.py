#!/usr/bin/env python3
"""Block-quantizer goldens for tests/quant (folio::quantize_row vs gguf-py).

Made with (from the repository root):

    .venv/bin/python tools/make_quant_goldens.py tests/data/quant/legacy_quant_goldens.json

For each type gguf-py (gguf 0.19.0) can quantize and Folio writes — Q4_0,
Q4_1, Q5_0, Q5_1, Q8_0 — rows of float32 values of several kinds (normal,
heavy-tailed with outliers, all zeros, constant, tiny magnitudes, exact
ties between positive and negative extremes, values on the rounding
boundaries) and the bytes gguf.quants.quantize makes of them. gguf-py has
no quantizer for the K-quants; tests/quant checks those against
llama-quantize instead (tools/make_kquant_goldens.py).
"""
import json
import sys

import numpy as np
from gguf import GGMLQuantizationType as T
from gguf.quants import quantize

TYPES = [T.Q4_0, T.Q4_1, T.Q5_0, T.Q5_1, T.Q8_0]


def rows(rng: np.random.Generator) -> list[tuple[str, np.ndarray]]:
    n = 256
    out = [
        ("normal", rng.standard_normal(n).astype(np.float32)),
        ("normal-small", (rng.standard_normal(n) * 0.02).astype(np.float32)),
        ("student-t-outliers", rng.standard_t(2.0, n).astype(np.float32)),
        ("zeros", np.zeros(n, dtype=np.float32)),
        ("constant", np.full(n, 0.3125, dtype=np.float32)),
        ("tiny", (rng.standard_normal(n) * 1e-6).astype(np.float32)),
        ("positive", np.abs(rng.standard_normal(n)).astype(np.float32)),
    ]
    ties = rng.standard_normal(n).astype(np.float32)
    ties[0::32] = 1.5
    ties[1::32] = -1.5  # equal magnitudes: the first one sets the sign
    out.append(("ties", ties))
    # Multiples of 1/16 land on the rounding boundaries of a 4-bit grid.
    out.append(("grid-boundaries", (rng.integers(-64, 64, n) / 16.0).astype(np.float32)))
    return out


def main() -> None:
    path = sys.argv[1]
    rng = np.random.default_rng(20261201)
    cases = []
    for origin, values in rows(rng):
        for t in TYPES:
            q = quantize(values.reshape(1, -1), t).reshape(-1)
            cases.append({
                "type": t.name,
                "origin": origin,
                "values_hex": values.astype("<f4").tobytes().hex(),
                "expected_hex": q.tobytes().hex(),
            })
    with open(path, "w") as f:
        json.dump({"generator": "tools/make_quant_goldens.py", "gguf": "0.19.0", "cases": cases}, f, indent=1)
        f.write("\n")


if __name__ == "__main__":
    main()
