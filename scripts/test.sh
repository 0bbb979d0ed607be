#!/usr/bin/env bash
# The whole test suite: lint, types, then every test (CPU only; GPU behaviour is checked
# against real H200 traces committed under tests/data/).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh dev
export KINETO_LOG_LEVEL=6
.venv/bin/python -m ruff check attnscope tests benchmarks
.venv/bin/python -m ruff format --check attnscope tests benchmarks
.venv/bin/python -m mypy
.venv/bin/python -m pytest -q "$@"
