#!/usr/bin/env bash
# Schemathesis (PyPI), pinned, in a virtual environment under the cache directory: the
# property-based API checks of scripts/schemathesis.sh. Idempotent: a second run only checks the
# version.
set -euo pipefail
VERSION=4.32.5
VENV="${AGORA_SCHEMATHESIS_VENV:-$HOME/.cache/agora/schemathesis-venv}"
if [ -x "$VENV/bin/schemathesis" ] && "$VENV/bin/pip" show schemathesis 2>/dev/null | grep -qx "Version: $VERSION"; then
  echo "schemathesis $VERSION already in $VENV"
  exit 0
fi
PY=$(command -v python3.11 || command -v python3)
"$PY" -m venv "$VENV"
"$VENV/bin/pip" install --quiet --disable-pip-version-check "schemathesis==$VERSION"
"$VENV/bin/schemathesis" --version
