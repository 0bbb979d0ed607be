#!/usr/bin/env bash
# Idempotent set-up: a virtual environment in .venv with attnscope installed.
#
# The venv is isolated from the system's site-packages by default, so the suite runs with
# the versions pip resolves on a fresh machine (not whatever the system Python happens to
# carry, say an older pytest).  On a GPU box whose system Python already has a CUDA torch,
# set ATTNSCOPE_SYSTEM_SITE=1 to let the venv see it (--system-site-packages) instead of
# reinstalling several GB; this applies only when the venv is first created.
#
# torch comes first and on purpose: a plain `torch` requirement can pull a CUDA build of
# several GB.  If the venv can already import torch, nothing is reinstalled.  Otherwise
# ATTNSCOPE_TORCH is installed: torch==2.13.0 by default (a CPU wheel where one is offered);
# set ATTNSCOPE_TORCH='torch==2.13.0 --index-url https://download.pytorch.org/whl/cu130'
# (or any pip arguments) to choose a build.
set -euo pipefail
cd "$(dirname "$0")/.."
extras=${1:-}
py=${PYTHON:-python3}
if [ ! -x .venv/bin/python ]; then
    if [ "${ATTNSCOPE_SYSTEM_SITE:-0}" = 1 ]; then
        "$py" -m venv --system-site-packages .venv
    else
        "$py" -m venv .venv
    fi
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
