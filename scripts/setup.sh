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
# -qq: pip's errors only (its warnings, such as an index in the machine's pip.conf that does not exist, are not
# ours to print before the study's first line); a failed install still stops here with pip's error.
pip=(.venv/bin/python -m pip --disable-pip-version-check -qq)
sum=$(cksum < pyproject.toml)
done_sum=$(sed -n 1p .venv/.attnscope-installed 2>/dev/null || true)
# torch is found, not imported (importing it costs a second of every run)
if ! .venv/bin/python -c "import importlib.util as u, sys; sys.exit(u.find_spec('torch') is None)" 2>/dev/null; then
    # shellcheck disable=SC2086
    "${pip[@]}" install ${ATTNSCOPE_TORCH:-torch==2.13.0}
fi
# The editable install is redone only when pyproject.toml changed since the last one or an extra is asked that it
# did not install (it took seconds on every run of study.sh): .venv/.attnscope-installed records what it did.
done_extras=$(sed -n 2p .venv/.attnscope-installed 2>/dev/null || true)
fresh=1
[ "$sum" = "$done_sum" ] && .venv/bin/python -c "import importlib.metadata as m; m.version('attnscope')" 2>/dev/null || fresh=0
for e in ${extras//,/ }; do
    case ",$done_extras," in *",$e,"*) ;; *) fresh=0 ;; esac
done
if [ "$fresh" = 0 ]; then
    if [ -n "$extras" ]; then
        "${pip[@]}" install -e ".[$extras]"
    else
        "${pip[@]}" install -e .
    fi
    all=$( { [ "$sum" = "$done_sum" ] && printf '%s' "$done_extras"; printf ',%s' "$extras"; } | tr ',' '\n' | sed '/^$/d' | sort -u | paste -sd, -)
    printf '%s\n%s\n' "$sum" "$all" > .venv/.attnscope-installed
fi
