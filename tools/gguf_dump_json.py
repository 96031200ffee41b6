#!/usr/bin/env python3
"""Canonical JSON view of a GGUF file, as the `gguf` Python package reads it.

Used by tests/format to check that files written by Folio's GgufWriter read
back identically in the reference implementation:

    .venv/bin/python tools/gguf_dump_json.py FILE.gguf            # JSON to stdout
    .venv/bin/python tools/gguf_dump_json.py --compare A.gguf B.gguf  # exit 1 if they differ

The view holds the version, alignment, every metadata key in file order with
its type and value, and every tensor's name, type, shape (GGML order), byte
size and SHA-256 of its data (plus the data as hex for tensors of at most
256 bytes). Offsets are left out: two files that say the same thing compare
equal whatever their padding.
"""
import hashlib
import json
import math
import sys

import gguf


def _plain(value):
    if isinstance(value, float) and not math.isfinite(value):
        return repr(value)  # JSON has no NaN/inf: "nan", "inf", "-inf"
    if isinstance(value, list):
        return [_plain(v) for v in value]
    return value


def _field(field):
    types = [t.name for t in field.types]
    entry = {"key": field.name, "type": types[0]}
    if field.types[0] == gguf.GGUFValueType.ARRAY:
        entry["element_type"] = types[1] if len(types) > 1 else None
        if len(types) > 2:  # nested arrays: gguf-py only exposes the raw parts
            entry["value"] = [_plain(field.parts[i].tolist()) for i in field.data]
        else:
            entry["value"] = _plain(field.contents())
    else:
        entry["value"] = _plain(field.contents())
    return entry


def dump(path):
    reader = gguf.GGUFReader(path)
    out = {"version": int(reader.fields["GGUF.version"].contents()), "alignment": int(reader.alignment)}
    out["metadata"] = [_field(f) for name, f in reader.fields.items() if not name.startswith("GGUF.")]
    tensors = []
    for t in reader.tensors:
        data = t.data.tobytes()
        entry = {
            "name": t.name,
            "type": t.tensor_type.name,
            "shape": [int(d) for d in t.shape],
            "nbytes": int(t.n_bytes),
            "sha256": hashlib.sha256(data).hexdigest(),
        }
        if len(data) <= 256:
            entry["data_hex"] = data.hex()
        tensors.append(entry)
    out["tensors"] = tensors
    return out


def main(argv):
    if len(argv) == 4 and argv[1] == "--compare":
        a, b = dump(argv[2]), dump(argv[3])
        if a == b:
            print("identical")
            return 0
        for part in ("version", "alignment"):
            if a[part] != b[part]:
                print(f"{part}: {a[part]} != {b[part]}")
        for x, y in zip(a["metadata"], b["metadata"]):
            if x != y:
                print(f"metadata differs at key {x['key']!r} / {y['key']!r}")
                break
        for x, y in zip(a["tensors"], b["tensors"]):
            if x != y:
                print(f"tensor differs: {x['name']!r}")
                break
        if len(a["metadata"]) != len(b["metadata"]) or len(a["tensors"]) != len(b["tensors"]):
            print("different numbers of keys or tensors")
        return 1
    if len(argv) == 2:
        json.dump(dump(argv[1]), sys.stdout, ensure_ascii=False, separators=(",", ":"))
        sys.stdout.write("\n")
        return 0
    print(__doc__, file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv))
