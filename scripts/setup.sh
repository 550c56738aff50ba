#!/usr/bin/env bash
# Set up polyembed on a fresh machine: a virtual environment with exactly the versions in
# requirements-lock.txt (installed by uv, which is pinned below), polyembed itself (editable), and the
# offline built-in models (me5-small is converted once into the cache). Idempotent: the environment is
# synced again only when the lock file or pyproject.toml changes.
set -euo pipefail
cd "$(dirname "$0")/.."
PYTHON=${PYTHON:-python3.11}
command -v "$PYTHON" >/dev/null 2>&1 || PYTHON=python3
UV_VERSION=$(sed -n "s/^uv==//p" requirements-lock.txt)  # the lock pins uv too
LOCK=requirements-lock.txt
if [ ! -x .venv/bin/python ]; then
  "$PYTHON" -m venv .venv
fi
stamp=.venv/.polyembed-setup
if [ ! -f "$stamp" ] || [ "$LOCK" -nt "$stamp" ] || [ pyproject.toml -nt "$stamp" ]; then
  echo "setup: installing the locked environment ($LOCK) into .venv" >&2
  if [ "$(.venv/bin/uv --version 2>/dev/null)" != "uv $UV_VERSION" ]; then
    .venv/bin/python -m pip install --quiet "uv==$UV_VERSION"
  fi
  # The lock pins torch's CPU build (2.13.0+cpu). uv reads no pip.conf, so pass pip's find-links on:
  # that is where this machine keeps the CPU wheel. Elsewhere, point UV_FIND_LINKS or
  # UV_EXTRA_INDEX_URL at a folder or index that has it.
  find_links=()
  for link in ${PIP_FIND_LINKS:-} $("$PYTHON" -m pip config get global.find-links 2>/dev/null || true); do
    find_links+=(--find-links "$link")
  done
  .venv/bin/uv pip sync --quiet --python .venv/bin/python "${find_links[@]}" "$LOCK"
  .venv/bin/uv pip install --quiet --python .venv/bin/python --no-deps -e .
  touch "$stamp"
fi
export HF_HUB_OFFLINE=${HF_HUB_OFFLINE:-1}
.venv/bin/polyembed models prepare minilm-en >/dev/null
.venv/bin/polyembed models prepare me5-small
