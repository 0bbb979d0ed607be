#!/usr/bin/env bash
# Debian's chromium for the browser tests of the HTML report (Playwright drives it; no browser
# download).  Installs it when missing and we are root with apt-get; otherwise says so.
set -euo pipefail
if command -v chromium >/dev/null 2>&1; then
    exit 0
fi
if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
    echo "installing Debian's chromium for the HTML report's browser tests" >&2
    DEBIAN_FRONTEND=noninteractive apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null
else
    echo "chromium missing and cannot be installed here (not root, or no apt-get): browser tests will skip" >&2
fi
