#!/usr/bin/env bash
# Debian's Chromium, for the headless browser tests.
set -euo pipefail
if command -v chromium >/dev/null; then exit 0; fi
if [ "$(id -u)" = 0 ]; then SUDO=""; else SUDO="sudo"; fi
$SUDO apt-get update -qq
DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq chromium >/dev/null
command -v chromium
