#!/usr/bin/env bash
# Idempotent set-up: a virtual environment in .venv with attnscope installed.
#
# torch comes first and on purpose: a plain `torch` requirement can pull a CUDA build of
# several GB.  If the Python you start from already has torch (say a CUDA build on a GPU
# box), the venv sees it (--system-site-packages) and nothing is reinstalled.  Otherwise
# ATTNSCOPE_TORCH is installed: torch==2.13.0 by default (a CPU wheel where one is offered);
# set ATTNSCOPE_TORCH='torch==2.13.0 --index-url https://download.pytorch.org/whl/cu130'
# (or any pip arguments) to choose a build.
set -euo pipefail
cd "$(dirname "$0")/.."
extras=${1:-}
py=${PYTHON:-python3}
if [ ! -x .venv/bin/python ]; then
    "$py" -m venv --system-site-packages .venv
fi
pip=(.venv/bin/python -m pip --disable-pip-version-check -q)
if ! .venv/bin/python -c "import torch" 2>/dev/null; then
    # shellcheck disable=SC2086
    "${pip[@]}" install ${ATTNSCOPE_TORCH:-torch==2.13.0}
fi
if [ -n "$extras" ]; then
    "${pip[@]}" install -e ".[$extras]"
else
    "${pip[@]}" install -e .
fi
