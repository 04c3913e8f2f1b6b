#!/usr/bin/env bash
# Schemathesis against each service's OpenAPI document (chat, sign-up, statistics, pages): the
# debug `agora serve` on mem:// storage with all four services on free ports, a staff session for
# the chat API and an admin token for the statistics API, then a bounded number of generated
# requests per operation. A 5xx, or an answer that breaks the documented schema, fails the run.
#
# Knobs: AGORA_SCHEMATHESIS_EXAMPLES (examples per operation, default 15), CARGO_TARGET_DIR.
set -euo pipefail
cd "$(dirname "$0")/.."
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$HOME/.cache/agora/target}"
VENV="${AGORA_SCHEMATHESIS_VENV:-$HOME/.cache/agora/schemathesis-venv}"
ST="$VENV/bin/schemathesis"
EXAMPLES="${AGORA_SCHEMATHESIS_EXAMPLES:-15}"
BIN="$CARGO_TARGET_DIR/debug/agora"

[ -x "$ST" ] || bash scripts/install.d/30-schemathesis.sh
# The tests build the debug binary; build it the same way (same features) when it is missing.
[ -x "$BIN" ] || cargo test --workspace --locked --no-run >/dev/null

work=$(mktemp -d)
server=""
cleanup() {
  [ -n "$server" ] && kill "$server" 2>/dev/null && wait "$server" 2>/dev/null || true
  rm -rf "$work"
}
trap cleanup EXIT

STATS_TOKEN="schemathesis-stats-admin"
"$BIN" --db mem:// --admin-socket "$work/admin.sock" serve \
  --chat-addr 127.0.0.1:0 --pages-addr 127.0.0.1:0 --stats-addr 127.0.0.1:0 --signup-addr 127.0.0.1:0 \
  --stats-admin-token "$STATS_TOKEN" --posts-per-minute 1000000 --reads-per-minute 1000000 \
  >/dev/null 2>"$work/agora.log" &
server=$!

for _ in $(seq 1 300); do
  [ "$(grep -c ' listening' "$work/agora.log" || true)" -ge 4 ] && break
  kill -0 "$server" 2>/dev/null || { cat "$work/agora.log"; echo "agora did not start" >&2; exit 1; }
  sleep 0.1
done
base() { grep ' listening' "$work/agora.log" | grep "service=\"$1\"" | sed -E 's/.* addr=([^ ]+).*/http:\/\/\1/' | head -1; }
CHAT=$(base chat); PAGES=$(base pages); STATS=$(base stats); SIGNUP=$(base signup)
echo "chat $CHAT, pages $PAGES, stats $STATS, signup $SIGNUP"

admin() { "$BIN" --db mem:// --admin-socket "$work/admin.sock" admin "$@"; }
STAFF=$(admin bootstrap --name "Schema Thesis" --handle thesis --email thesis@example.org --json \
  | python3 -c 'import json,sys; print(json.load(sys.stdin)["session_token"])')
admin signup open >/dev/null

run() {
  local name=$1 url=$2; shift 2
  echo "==> schemathesis: $name ($url/openapi.json, $EXAMPLES examples per operation)"
  # From the scratch directory: schemathesis keeps a cache (.schemathesis/) where it runs.
  (cd "$work" && "$ST" run "$url/openapi.json" --url "$url" \
    --checks not_a_server_error,response_schema_conformance \
    --max-examples "$EXAMPLES" --seed 8 --generation-deterministic \
    --request-timeout 10 --no-color "$@")
}

status=0
run chat "$CHAT" -H "Authorization: Bearer $STAFF" || status=1
run signup "$SIGNUP" || status=1
run stats "$STATS" -H "Authorization: Bearer $STATS_TOKEN" || status=1
run pages "$PAGES" || status=1
if [ "$status" -ne 0 ]; then
  echo "schemathesis found answers that break the documents (server log: last lines below)" >&2
  tail -n 40 "$work/agora.log" >&2
fi
exit "$status"
