#!/usr/bin/env bash
# Set up a fresh Debian 12 machine for Folio: system packages, the Python tools
# venv (.venv) and the two test models in models/. Idempotent: a second run
# only checks what is already there.
#
#   bash scripts/setup.sh            everything
#   FOLIO_SKIP_APT=1 bash ...        skip apt (packages already installed)
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"

debs=(
  build-essential cmake ninja-build pkg-config git python3 python3-venv python3-pip
  clang libclang-rt-14-dev            # libFuzzer target of the GGUF reader
  qt6-base-dev qt6-base-dev-tools qt6-svg-dev libgl-dev
  libqcustomplot-dev libqcustomplot2.1-qt6
  nlohmann-json3-dev libpcre2-dev
  libcpp-httplib-dev                  # folio serve's HTTP server (docs/dependencies.md)
  xvfb xauth                          # GUI tests and screenshots on a real X server
  appstream                           # validates the studio's AppStream metainfo
  debootstrap rpm                     # the package install test (packaging/linux/test-install.sh)
)

source "$root/scripts/lib/apt.sh"
[ "${FOLIO_SKIP_APT:-0}" = 1 ] || apt_ensure setup "${debs[@]}"

# Python tools (goldens, fixtures, benchmarks) live in their own venv.
if [ ! -x .venv/bin/python ]; then
  python3 -m venv .venv
fi
# A stamp of the requirements installed: a second run compares it rather than
# importing transformers (seconds).
stamp=.venv/folio-requirements.sha256
want=$(sha256sum tools/requirements.txt | cut -d' ' -f1)
if [ "$(cat "$stamp" 2>/dev/null)" != "$want" ]; then
  if ! .venv/bin/python -c 'import gguf, numpy, safetensors, tokenizers, jinja2, transformers, openai' 2>/dev/null; then
    echo "setup: Python tools into .venv (tools/requirements.txt)"
    .venv/bin/pip install -q --disable-pip-version-check -r tools/requirements.txt
  fi
  echo "$want" >"$stamp"
fi

bash scripts/fetch-models.sh
echo "setup: done"
