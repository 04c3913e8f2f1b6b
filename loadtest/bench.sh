#!/usr/bin/env bash
# Regenerates BENCHMARKS.md's figures: every scenario RUNS times (default 3) against a fresh agora
# (--spawn), the bare baseline (--spawn-baseline) and the Rails ActionCable peer (restarted for
# each run), with the servers pinned to SERVER_CPUS and the load generator to CLIENT_CPUS; then the
# medians of every figure. About 25 minutes on the 2-core machine (the Rails peer at 5,000 sockets
# is most of it: it delivers a few thousand frames a second).
#
#   bash loadtest/bench.sh                 # everything, 3 runs
#   RUNS=1 ONLY="fanout post" bash loadtest/bench.sh   # parts: post feed signup fanout large sweep mix connections
#
# Results: one JSON summary per run in $OUT (default target/bench-<time>/), and $OUT/summary.md.
# Needs Debian's ruby-rails and puma for the peer (loadtest/peers/rails/run.sh installs them).
set -euo pipefail
cd "$(dirname "$0")/.."

RUNS="${RUNS:-3}"
SERVER_CPUS="${SERVER_CPUS:-1}"
CLIENT_CPUS="${CLIENT_CPUS:-0}"
PEER_PORT="${PEER_PORT:-4300}"
ONLY="${ONLY:-post feed signup fanout large sweep mix connections}"
TARGET_DIR="${CARGO_TARGET_DIR:-target}"
OUT="${OUT:-$TARGET_DIR/bench-$(date -u +%Y%m%dT%H%M%SZ)}"
mkdir -p "$OUT"

cargo build --release -p agora -p agora-loadtest >&2
LT="$TARGET_DIR/release/agora-loadtest"
PIN=(--server-cpus "$SERVER_CPUS" --client-cpus "$CLIENT_CPUS")
ulimit -n "$(ulimit -Hn)"

want() { [[ " $ONLY " == *" $1 "* ]]; }

PEER_PID=""
peer_start() {
  if curl -fsS "http://127.0.0.1:$PEER_PORT/up" >/dev/null 2>&1; then
    echo "something already answers on port $PEER_PORT: stop it, or set PEER_PORT" >&2
    exit 1
  fi
  PORT="$PEER_PORT" PEER_CPUS="$SERVER_CPUS" loadtest/peers/rails/run.sh >>"$OUT/peer.log" 2>&1 &
  PEER_PID=$!
  for _ in $(seq 1 150); do
    if ! kill -0 "$PEER_PID" 2>/dev/null; then break; fi
    if curl -fsS "http://127.0.0.1:$PEER_PORT/up" >/dev/null 2>&1; then return 0; fi
    sleep 0.2
  done
  echo "the Rails peer did not start; see $OUT/peer.log" >&2
  exit 1
}
peer_stop() {
  if [ -n "$PEER_PID" ]; then kill "$PEER_PID" 2>/dev/null || true; wait "$PEER_PID" 2>/dev/null || true; PEER_PID=""; fi
}
trap peer_stop EXIT

# run NAME ARGS...: one run, its JSON summary appended to $OUT/NAME.jsonl, its table to $OUT/NAME.log.
run() {
  local name="$1"; shift
  echo "== $name: $*" >&2
  local status=0
  "$LT" "${PIN[@]}" --json "$OUT/$name.last.json" "$@" >>"$OUT/$name.log" 2>>"$OUT/$name.err" || status=$?
  if [ -f "$OUT/$name.last.json" ]; then cat "$OUT/$name.last.json" >>"$OUT/$name.jsonl"; rm -f "$OUT/$name.last.json"; fi
  if [ "$status" -ne 0 ]; then echo "   $name exited with $status (2: lost, repeated or failed checks; see $OUT/$name.log)" >&2; fi
}

started=$(date +%s)
echo "bench: $RUNS runs, server on CPUs $SERVER_CPUS, load generator on $CLIENT_CPUS; load now: $(cut -d' ' -f1-3 /proc/loadavg); results in $OUT" >&2
for r in $(seq 1 "$RUNS"); do
  echo "=== run $r of $RUNS" >&2
  if want post; then run post --spawn post --posters 32 --channels 32 --seconds 10; fi
  if want feed; then run feed --spawn feed --bots 4 --writers 16 --channels 8 --seconds 10; fi
  if want signup; then run signup --spawn signup; fi
  if want fanout; then
    for s in 1000 5000; do
      peer_start
      run "fanout-$s" --spawn --spawn-baseline --peer-url "http://127.0.0.1:$PEER_PORT" --peer-pid "$PEER_PID" \
        fanout --sockets "$s" --posts 100 --rate 20 --posters 8
      peer_stop
    done
  fi
  if want large; then
    # 10k and 19k sockets at 5 posts a second (50k and 95k deliveries a second): at 20 a second
    # the one core of the load generator, not the server, sets the latency (the baseline shows it).
    run fanout-10000 --spawn --spawn-baseline fanout --sockets 10000 --posts 50 --rate 5 --posters 8
    run fanout-19000 --spawn fanout --sockets 19000 --posts 50 --rate 5 --posters 8
  fi
  if want sweep; then
    # Sockets held at p95 < 500 ms at fanout's 20 posts a second: agora between 1,000 and 5,000,
    # the Rails peer at a few hundred (SWEEP_AGORA, SWEEP_RAILS: the sizes).
    for s in ${SWEEP_AGORA:-4500}; do
      run "fanout-$s" --spawn fanout --sockets "$s" --posts 100 --rate 20 --posters 8
    done
    for s in ${SWEEP_RAILS:-350 500}; do
      peer_start
      run "rails-$s" --no-agora --peer-url "http://127.0.0.1:$PEER_PORT" --peer-pid "$PEER_PID" \
        fanout --sockets "$s" --posts 100 --rate 20 --posters 8
      peer_stop
    done
  fi
  if want mix; then
    # The chat mix: MIX_CLIENTS (default 2,000; the goal's size is 10,000, about 3 minutes a run)
    # clients, each its own bot, in rooms of 10-100, each posting every 10-60 s.
    run "mix-${MIX_CLIENTS:-2000}" --spawn mix --clients "${MIX_CLIENTS:-2000}" --seconds 60
  fi
  if want connections; then
    peer_start
    run connections-10000 --spawn --spawn-baseline --peer-url "http://127.0.0.1:$PEER_PORT" --peer-pid "$PEER_PID" \
      connections --sockets 10000 --concurrency 1000
    peer_stop
  fi
done

"$LT" summarize "$OUT"/*.jsonl >"$OUT/summary.md"
{
  echo
  echo "machine: $(nproc) CPUs, load at the end $(cut -d' ' -f1-3 /proc/loadavg), $(date -u +%FT%TZ), $(( $(date +%s) - started )) s"
} >>"$OUT/summary.md"
cat "$OUT/summary.md"
