#!/usr/bin/env bash
# cargo-fuzz, pinned, for scripts/fuzz.sh. Idempotent: skipped when that version is installed.
set -euo pipefail
VERSION=0.13.2
if cargo fuzz --version 2>/dev/null | grep -q "$VERSION"; then
  echo "cargo-fuzz $VERSION already installed"
  exit 0
fi
cargo install cargo-fuzz --locked --version "$VERSION"
