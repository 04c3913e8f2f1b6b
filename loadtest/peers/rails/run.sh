#!/usr/bin/env bash
# The Rails ActionCable peer for agora's load tests: installs Debian's ruby-rails and puma when
# missing, then runs the app in this folder with puma in the foreground (exec, so the pid of this
# script is puma's).
#
#   PORT=4300 PEER_CPUS=0 loadtest/peers/rails/run.sh &
#   agora-loadtest --peer-url http://127.0.0.1:4300 --peer-pid $! fanout ...
#
# PORT (default 4300), PEER_CPUS (a taskset list, unset: not pinned), PEER_THREADS (puma threads,
# default 8), PEER_CABLE_WORKERS (ActionCable worker pool, default 4). Not part of CI.
set -euo pipefail
cd "$(dirname "$0")"

if ! command -v puma >/dev/null || ! ruby -e 'require "rails"; require "action_cable"' 2>/dev/null; then
  echo "installing ruby-rails and puma from Debian's packages" >&2
  if [ "$(id -u)" -eq 0 ]; then SUDO=""; else SUDO="sudo"; fi
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -q ruby-rails puma >&2
fi

PORT="${PORT:-4300}"
THREADS="${PEER_THREADS:-8}"
# As many files as the process may have: one socket each.
ulimit -n "$(ulimit -Hn)"
export RAILS_ENV=production RACK_ENV=production
PIN=()
if [ -n "${PEER_CPUS:-}" ]; then PIN=(taskset -c "$PEER_CPUS"); fi
exec "${PIN[@]}" puma --bind "tcp://127.0.0.1:${PORT}" --threads "${THREADS}:${THREADS}" --workers 0 \
  --environment production config.ru
