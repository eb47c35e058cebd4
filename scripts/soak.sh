#!/usr/bin/env bash
# `make soak`: one release `paywarden serve` on a fresh SoftHSM token decrypts SOAK_TOKENS
# (default 1,000,000) unique forged EC_v1 tokens through HTTP on loopback, sent by wrk
# (scripts/loadtest.lua, 2 threads, 16 connections) in batches of SOAK_BATCH (default 100,000).
# After each batch, with the server idle: its RSS (VmRSS of /proc/PID/status), the replay
# ledger's share of it, the module recycles (/metrics) and the errors so far. At the end: the
# growth from the first batch's sample to the last, the ledger's share excluded (target <= 10%).
#   DATABASE=sqlite (default, as deployed): the ledger is a table in the database file; the
#            process holds only SQLite's page cache of it, bounded and full from the first batch
#            on, so its share counts as none.
#   DATABASE=memory: the ledger is a dictionary in the process, one entry per decryption until
#            the token's signing time leaves the window; its share is the decryptions so far times
#            the bytes one entry takes, measured by `paywarden-bench ledger-footprint` (the same
#            in-memory database, filled with as many claims, in a process of its own).
# Only a 200 counts as a decryption; every other answer, and every request left unanswered, is
# an error. The tokens are forged in batches as they are needed (the next while the server
# decrypts the last), so the disk never holds more than two.
set -euo pipefail
umask 077   # the work directory holds an API key and tokens
cd "$(dirname "$0")/.."
TOTAL=${SOAK_TOKENS:-1000000}
BATCH=${SOAK_BATCH:-100000}
DATABASE=${DATABASE:-sqlite}
case "$DATABASE" in sqlite | memory) ;; *) echo "DATABASE must be sqlite or memory"; exit 2 ;; esac
[ "$BATCH" -ge 1 ] && [ "$TOTAL" -ge "$BATCH" ] || { echo "SOAK_TOKENS must be at least SOAK_BATCH (>= 1)"; exit 2; }
BATCHES=$(( (TOTAL + BATCH - 1) / BATCH ))
BIN=${SOAK_BIN:-.build/release}
PORT=${SOAK_PORT:-18453}
CONNECTIONS=${SOAK_CONNECTIONS:-16}
WORK=$(mktemp -d "${TMPDIR:-/tmp}/paywarden-soak.XXXXXX")
SERVER_PID=""
FORGE_PID=""
cleanup() {
  for pid in $SERVER_PID $FORGE_PID; do kill "$pid" 2>/dev/null || true; done
  wait 2>/dev/null || true
  rm -rf "$WORK"
}
trap cleanup EXIT

export PAYWARDEN_HOME="$WORK/home"
# No balancer in front: the server stops at once on SIGTERM, without the drain.
export PAYWARDEN_SHUTDOWN_DRAIN_SECONDS=0
"$BIN/paywarden" dev-hsm init --token-label soak >/dev/null
set -a; . "$PAYWARDEN_HOME/softhsm/env"; set +a
STARTED=$(date +%s)

# The PKI, the certified key and the API key first, then the batches, each forged once the one
# two before it is spent (the driver deletes each batch when wrk is done with it).
echo "== forging $TOTAL unique EC_v1 tokens in $BATCHES batches of $BATCH, as the run needs them"
"$BIN/paywarden-bench" loadtest-setup "$WORK" --batches "$BATCHES" "$BATCH" > "$WORK/forge.log" 2>&1 &
FORGE_PID=$!
wait_for() {
  while [ ! -e "$1" ]; do
    kill -0 "$FORGE_PID" 2>/dev/null || [ -e "$1" ] || { cat "$WORK/forge.log"; echo "the forger stopped"; exit 1; }
    sleep 0.5
  done
}
wait_for "$WORK/api-key"

export PAYWARDEN_API_KEYS="$(cat "$WORK/api-entry")"
export PAYWARDEN_TRUST_ROOTS="$WORK/root.pem"
# A batch may wait for its turn for minutes after it was forged.
export PAYWARDEN_SIGNING_TIME_WINDOW=7200
export PAYWARDEN_LOG_LEVEL=warning
export PAYWARDEN_LISTEN="127.0.0.1:$PORT"
case "$DATABASE" in
  # The home's database, which holds the merchant key's record from the set-up.
  sqlite) export PAYWARDEN_DATABASE_URL="sqlite:$PAYWARDEN_HOME/paywarden.sqlite" ;;
  memory) export PAYWARDEN_DATABASE_URL="memory:" ;;
esac
"$BIN/paywarden" serve > "$WORK/server.log" 2>&1 &
SERVER_PID=$!
for _ in $(seq 1 150); do curl -sf "http://127.0.0.1:$PORT/readyz" >/dev/null 2>&1 && break; sleep 0.2; done
curl -sf "http://127.0.0.1:$PORT/readyz" >/dev/null || { cat "$WORK/server.log"; echo "server not ready"; exit 1; }

rss() { awk '/^VmRSS/ {print $2}' "/proc/$SERVER_PID/status"; }
metric() { curl -s "http://127.0.0.1:$PORT/metrics" | awk -v m="$1" '$1 == m {printf "%d", $2}'; }
# The requests to the route $1 the server answered so far, refusals included.
answered() {
  curl -s "http://127.0.0.1:$PORT/metrics" |
    awk -v r="route=\"$1\"" '/^paywarden_http_requests_total/ && index($0, r) { n += $2 } END { print n + 0 }'
}
# Bytes of RSS one replay-ledger entry takes, per database (sqlite: none in the process).
if [ "$DATABASE" = memory ]; then
  LEDGER_ENTRY_BYTES=$("$BIN/paywarden-bench" ledger-footprint "$BATCH" | sed -n 's/^bytes per entry: //p')
else
  LEDGER_ENTRY_BYTES=0
fi
echo "== paywarden serve (pid $SERVER_PID, database $DATABASE), RSS at start $(rss) kB"

# wrk over one batch (one half per thread) until every line was answered: wrk runs for its whole
# duration, so it is stopped (SIGINT: it reports) once the server's count of answers stops moving.
run_batch() {
  local lines=$1 name=$2
  awk -v w="$lines" '{ print > (w "." (NR % 2)) }' "$lines"
  rm -f "$lines"
  PAYWARDEN_LOADTEST_MODE=decrypt PAYWARDEN_LOADTEST_LINES="$lines" PAYWARDEN_LOADTEST_KEY="$(cat "$WORK/api-key")" \
    wrk -t2 -c"$CONNECTIONS" -d3600s --timeout 10s --latency -s scripts/loadtest.lua "http://127.0.0.1:$PORT" \
    > "$WORK/wrk-$name.txt" 2>&1 &
  local wrk_pid=$! last=-1 still=0 now waited=0
  while kill -0 "$wrk_pid" 2>/dev/null && [ "$still" -lt 2 ]; do
    sleep 1
    now=$(answered /v1/payment-tokens/decrypt)
    if [ "$now" -eq "$last" ]; then still=$((still + 1)); else still=0; fi
    last=$now
    waited=$((waited + 1))
    if [ "$waited" -ge 60 ] && [ "$now" -eq 0 ]; then kill "$wrk_pid"; echo "no answers after 60 s" >&2; exit 1; fi
  done
  kill -INT "$wrk_pid" 2>/dev/null || true
  wait "$wrk_pid" || true
  rm -f "$lines.0" "$lines.1"
  grep FAILED "$WORK/wrk-$name.txt" >&2 || true
  grep -q LOADTEST "$WORK/wrk-$name.txt" || { cat "$WORK/wrk-$name.txt" >&2; echo "wrk reported nothing" >&2; exit 1; }
  grep LOADTEST "$WORK/wrk-$name.txt" | sed 's/^LOADTEST //'
}
field() { echo "$1" | tr ' ' '\n' | sed -n "s/^$2=//p"; }

DECRYPTED=0
ERRORS=0
printf "%11s %10s %10s %10s %12s %9s %8s %9s\n" decryptions "RSS kB" "ledger kB" "other kB" "tokens/s" "p99 ms" recycles errors
for batch in $(seq 1 "$BATCHES"); do
  wait_for "$WORK/tokens-$batch.jsonl"
  line=$(run_batch "$WORK/tokens-$batch.jsonl" "$batch")
  DECRYPTED=$((DECRYPTED + $(field "$line" decrypted)))
  ERRORS=$((ERRORS + $(field "$line" errors)))
  sample=$(rss)
  ledger=$((DECRYPTED * LEDGER_ENTRY_BYTES / 1024))
  other=$((sample - ledger))
  [ "$batch" -gt 1 ] || { FIRST_OTHER=$other; FIRST_RSS=$sample; }
  printf "%11d %10d %10d %10d %12s %9s %8s %9d\n" "$DECRYPTED" "$sample" "$ledger" "$other" "$(field "$line" rate)" \
    "$(field "$line" p99)" "$(metric paywarden_hsm_module_recycles_total)" "$ERRORS"
done
wait "$FORGE_PID" || { cat "$WORK/forge.log"; echo "the forger failed"; exit 1; }
FORGE_PID=""
kill -0 "$SERVER_PID" 2>/dev/null || { tail -50 "$WORK/server.log"; echo "paywarden serve died"; exit 1; }
LAST_RSS=$(rss)
LAST_OTHER=$((LAST_RSS - DECRYPTED * LEDGER_ENTRY_BYTES / 1024))
RECYCLES=$(metric paywarden_hsm_module_recycles_total)
OUTCOMES=$(curl -s "http://127.0.0.1:$PORT/metrics" | awk '/^paywarden_decrypt_outcomes_total/ { printf "%s ", $0 }')

echo
echo "== Paywarden soak ($DATABASE), $DECRYPTED decryptions in $(( $(date +%s) - STARTED )) s (forging included)"
if [ "$DATABASE" = sqlite ]; then
  echo "replay ledger: $(stat -c %s "$PAYWARDEN_HOME/paywarden.sqlite" 2>/dev/null | awk '{ printf "%.0f", $1 / 1048576 }') MB database file" \
    "(+ WAL) on disk; in the process only SQLite's bounded page cache"
else
  echo "replay ledger: $LEDGER_ENTRY_BYTES bytes per entry (paywarden-bench ledger-footprint), $((DECRYPTED * LEDGER_ENTRY_BYTES / 1024)) kB now"
fi
awk -v a="$FIRST_OTHER" -v b="$LAST_OTHER" -v r0="$FIRST_RSS" -v r1="$LAST_RSS" 'BEGIN {
  printf "RSS %d -> %d kB; without the replay ledger %d -> %d kB: growth %+.1f%% (target <= 10%%)\n", r0, r1, a, b, (b - a) * 100 / a }'
echo "module recycles: $RECYCLES; errors: $ERRORS; outcomes: $OUTCOMES"
[ "$DECRYPTED" -ge "$TOTAL" ] || { echo "soak: only $DECRYPTED of $TOTAL tokens were decrypted"; exit 1; }
