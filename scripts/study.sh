#!/usr/bin/env bash
# The main job: the attention study on this machine (CPU by default, the GPU when present).
# Extra arguments go to `attnscope run`, e.g.  bash scripts/study.sh --kernels --seq 1024
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
mkdir -p out
exec .venv/bin/attnscope run --json out/study.json --trace-dir out/traces "$@"
