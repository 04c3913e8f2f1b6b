#!/usr/bin/env bash
# Fuzzes each parser of outside input (the targets of fuzz/, over agora-wire) for a bounded time.
# A crashing input (a panic: a broken property) is copied into wire/regressions/<target>/, where
# `cargo test -p agora-wire` replays it from then on, and the script fails.
#
# cargo-fuzz needs nightly features; the stable toolchain is used with RUSTC_BOOTSTRAP=1, without
# a sanitizer (libFuzzer's coverage guidance still works). Knobs: AGORA_FUZZ_SECONDS (per target,
# default 20), AGORA_FUZZ_TARGETS (default: all), AGORA_FUZZ_SEED (default 1: CI walks the same
# path every run, so a red CI means a crash someone can reproduce; set 0 for a fresh random seed).
set -euo pipefail
cd "$(dirname "$0")/.."
SECONDS_EACH="${AGORA_FUZZ_SECONDS:-20}"
export CARGO_TARGET_DIR="${AGORA_FUZZ_TARGET_DIR:-$HOME/.cache/agora/target-fuzz}"
export RUSTC_BOOTSTRAP=1

cargo fuzz --version >/dev/null 2>&1 || bash scripts/install.d/40-cargo-fuzz.sh

targets="${AGORA_FUZZ_TARGETS:-$(cd fuzz && cargo fuzz list)}"
status=0
for t in $targets; do
  echo "==> fuzz $t (${SECONDS_EACH}s)"
  mkdir -p "fuzz/corpus/$t"
  # Start from the saved regressions, so the fuzzer begins at the known edges.
  cp -n wire/regressions/"$t"/* "fuzz/corpus/$t/" 2>/dev/null || true
  if ! (cd fuzz && cargo fuzz run "$t" --sanitizer none -O -- \
      -max_total_time="$SECONDS_EACH" -seed="${AGORA_FUZZ_SEED:-1}" -max_len=4096 -print_final_stats=1 2>&1 | tail -n 25); then
    status=1
  fi
  for crash in fuzz/artifacts/"$t"/*; do
    [ -e "$crash" ] || continue
    mkdir -p "wire/regressions/$t"
    cp "$crash" "wire/regressions/$t/$(basename "$crash")"
    echo "saved $crash as wire/regressions/$t/$(basename "$crash"): commit it, then fix the parser" >&2
    status=1
  done
done
exit "$status"
