#!/usr/bin/env bash
# Installs what the test suite needs beyond the Rust toolchain: every script in scripts/install.d,
# in name order. Each is safe to run again and skips what is already there.
set -euo pipefail
cd "$(dirname "$0")/.."
command -v cargo >/dev/null || { echo "cargo is required" >&2; exit 1; }
for step in scripts/install.d/*.sh; do
  [ -e "$step" ] || continue
  echo "--> $step"
  bash "$step"
done
