#!/usr/bin/env bash
# Node packages for the JavaScript-driven tests (tests/js): Rails' ActionCable client, ws, and
# playwright-core (which drives Debian's Chromium; it downloads no browser of its own).
set -euo pipefail
cd "$(dirname "$0")/../../tests/js"
command -v npm >/dev/null || { echo "npm is required for tests/js" >&2; exit 1; }
if [ ! -d node_modules ] || [ package-lock.json -nt node_modules ]; then
  npm ci --no-audit --no-fund
fi
