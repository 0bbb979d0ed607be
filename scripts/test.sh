#!/usr/bin/env bash
# The whole test suite: lint, types, then every test (CPU only; GPU behaviour is checked
# against real H200 traces committed under tests/data/).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh dev,html,hf,ray
bash scripts/browser.sh
# where chromium could be installed (CI runs as root), a missing browser fails the browser tests
if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
    export ATTNSCOPE_REQUIRE_BROWSER=1
fi
export KINETO_LOG_LEVEL=6
.venv/bin/python -m ruff check attnscope tests benchmarks
.venv/bin/python -m ruff format --check attnscope tests benchmarks
.venv/bin/python -m mypy
.venv/bin/lint-imports
# -rs lists every skip with its reason under the summary line that counts them: a skip is never silent.
.venv/bin/python -m pytest -q -rs "$@"
