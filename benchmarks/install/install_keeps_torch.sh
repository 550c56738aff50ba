#!/usr/bin/env bash
# Installing polyembed keeps the torch a user already has (a CUDA build, say).
#
# Why: polyembed asks for torch>=2.6, a range, and only requirements-lock.txt pins the CPU build that CI and
# `make setup` install. This shows it: a fresh virtual environment in a temporary folder gets a torch release
# other than the lock's, then `pip install .` installs polyembed's core (no extras) from this repository, and
# torch's version is printed before and after, then imported beside polyembed. Exit status 1 when the
# install changed torch.
#
# Settings (environment variables):
#   PYTHON             interpreter for the virtual environment (default: python3)
#   TORCH_SPEC         the torch to start from (default: any release but the lock's; pip takes the newest)
#   TORCH_PIP_OPTIONS  extra pip options for that one install, such as a local mirror:
#                      "--index-url file:///srv/mirror/simple --extra-index-url https://pypi.org/simple"
#   KEEP_VENV=1        leave the temporary folder in place (removed otherwise)
# PyPI's Linux torch wheels are CUDA builds whose nvidia-* dependencies weigh gigabytes: a mirror saves the
# download. `pip install --no-deps torch` is no shortcut: such a torch cannot be imported without them.
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
python=${PYTHON:-python3}
locked=$(sed -n 's/^torch==\([^ ;]*\).*/\1/p' "$root/requirements-lock.txt")
if [[ -z $locked ]]; then
    echo "no torch== line in $root/requirements-lock.txt" >&2
    exit 2
fi
spec=${TORCH_SPEC:-"torch!=${locked%%+*}"}
work=$(mktemp -d "${TMPDIR:-/tmp}/install-keeps-torch.XXXXXX")
cleanup() {
    if [[ ${KEEP_VENV:-0} == 1 ]]; then
        echo "kept $work"
    else
        rm -rf "$work"
    fi
}
trap cleanup EXIT

venv_python=$work/venv/bin/python
torch_version() { "$venv_python" -c 'import torch; print(torch.__version__)'; }

echo "== the lock pins torch==$locked; a fresh venv ($("$python" --version)) gets $spec"
"$python" -m venv "$work/venv"
# shellcheck disable=SC2086  # TORCH_PIP_OPTIONS is a list of options
"$venv_python" -m pip install --quiet ${TORCH_PIP_OPTIONS:-} "$spec"
before=$(torch_version)
echo "== pip show torch, before"
"$venv_python" -m pip show torch

# A copy of the tree, the uncommitted state included: building in place would leave build/ and *.egg-info behind.
mkdir "$work/polyembed"
tar -C "$root" --exclude=__pycache__ --exclude='*.egg-info' -cf - pyproject.toml README.md src \
    | tar -C "$work/polyembed" -xf -
echo "== pip install . (polyembed's core, no extras)"
(cd "$work/polyembed" && "$venv_python" -m pip install --quiet .)
after=$(torch_version)
echo "== pip show torch, after"
"$venv_python" -m pip show torch
echo "== python -c 'import polyembed, torch; print(torch.__version__)'"
(cd "$work" && "$venv_python" -c 'import polyembed, torch; print(torch.__version__)')

echo "torch before: $before"
echo "torch after:  $after"
if [[ $before != "$after" ]]; then
    echo "installing polyembed changed torch" >&2
    exit 1
fi
echo "installing polyembed kept torch $after"
