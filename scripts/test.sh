#!/usr/bin/env bash
# The project's test command: every unit test and the black-box tests in tests/.
set -euo pipefail
cd "$(dirname "$0")/.."
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$HOME/.cache/agora/target}"
exec cargo test --workspace --locked "$@"
