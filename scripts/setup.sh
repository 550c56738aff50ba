#!/usr/bin/env bash
# Set up polyembed on a fresh machine: virtual environment, the CPU torch wheel, dependencies,
# and the offline built-in models (me5-small is converted once into the cache). Idempotent.
set -euo pipefail
cd "$(dirname "$0")/.."
PYTHON=${PYTHON:-python3.11}
command -v "$PYTHON" >/dev/null 2>&1 || PYTHON=python3
if [ ! -x .venv/bin/python ]; then
  "$PYTHON" -m venv .venv
fi
stamp=.venv/.polyembed-setup
if [ ! -f "$stamp" ] || [ pyproject.toml -nt "$stamp" ]; then
  .venv/bin/python -m pip install --quiet --upgrade pip
  # Exactly this pin: it takes the CPU wheel; a looser spec pulls GBs of CUDA packages.
  .venv/bin/python -m pip install --quiet torch==2.13.0
  .venv/bin/python -m pip install --quiet -e ".[dev]"
  touch "$stamp"
fi
export HF_HUB_OFFLINE=${HF_HUB_OFFLINE:-1}
.venv/bin/polyembed models prepare minilm-en >/dev/null
.venv/bin/polyembed models prepare me5-small
