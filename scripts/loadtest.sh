#!/usr/bin/env bash
# `make loadtest`: the service on a fresh SoftHSM token, loaded through loopback with unique
# forged tokens (replay protection on), next to the raw HSM's ECDH rate from the same run.
#   phase 1: wrk (2 threads, 16 connections) sends LOADTEST_TOKENS tokens as fast as the
#            service takes them: tokens/s, latency, errors, RSS before and after;
#   phase 2: an open-loop generator at half that rate: p50/p90/p99 when not saturated.
set -euo pipefail
cd "$(dirname "$0")/.."
TOKENS=${LOADTEST_TOKENS:-500000}
HALF_SECONDS=${LOADTEST_HALF_SECONDS:-20}
BIN=.build/release
HSM_BENCH=${HSM_BENCH:-.build/hsm-bench/hsm_bench}
WORK=$(mktemp -d "${TMPDIR:-/tmp}/paywarden-loadtest.XXXXXX")
PORT=${LOADTEST_PORT:-18443}
SERVER_PID=""
cleanup() { [ -n "$SERVER_PID" ] && kill "$SERVER_PID" 2>/dev/null; wait 2>/dev/null || true; rm -rf "$WORK"; }
trap cleanup EXIT

export PAYWARDEN_HOME="$WORK/home"
"$BIN/paywarden" dev-hsm init --token-label loadtest >/dev/null
set -a; . "$PAYWARDEN_HOME/softhsm/env"; set +a

echo "== raw HSM (hsm-bench, 5 s, 2 threads) on this machine, same run"
bash ../shared/tools/hsm-bench/setup-token.sh "$WORK/raw" >/dev/null
RAW=$(SOFTHSM2_CONF="$WORK/raw/softhsm2.conf" sh -c "'$HSM_BENCH' keys >/dev/null && '$HSM_BENCH' bench ecdh 5 2")
echo "$RAW"
RAW_RATE=$(echo "$RAW" | sed -n 's/.*=> *\([0-9.]*\) ops\/s wall.*/\1/p')

HALF_TOKENS=$(( 6000 * HALF_SECONDS ))
echo "== forging $TOKENS + $HALF_TOKENS unique EC_v1 tokens"
"$BIN/paywarden-bench" loadtest-setup "$WORK" "$TOKENS" "$HALF_TOKENS"

export PAYWARDEN_LISTEN="127.0.0.1:$PORT"
export PAYWARDEN_API_KEYS="$(cat "$WORK/api-entry")"
export PAYWARDEN_TRUST_ROOTS="$WORK/root.pem"
export PAYWARDEN_SIGNING_TIME_WINDOW=1800   # forging takes minutes; per-token work is unchanged
export PAYWARDEN_LOG_LEVEL=warning
"$BIN/paywarden" serve > "$WORK/server.log" 2>&1 &
SERVER_PID=$!
for _ in $(seq 1 100); do curl -sf "http://127.0.0.1:$PORT/readyz" >/dev/null && break; sleep 0.2; done
curl -sf "http://127.0.0.1:$PORT/readyz" >/dev/null || { cat "$WORK/server.log"; echo "server not ready"; exit 1; }
rss() { awk '/VmRSS/ {print $2}' "/proc/$SERVER_PID/status"; }

echo "== phase 1: wrk, 2 threads, ${LOADTEST_CONNECTIONS:-16} connections, $TOKENS tokens"
# One token file per wrk thread, so no token is sent twice.
awk -v w="$WORK/tokens-1.jsonl" '{ print > (w "." (NR % 2)) }' "$WORK/tokens-1.jsonl"
RSS_BEFORE=$(rss)
PAYWARDEN_LOADTEST_TOKENS="$WORK/tokens-1.jsonl" PAYWARDEN_LOADTEST_KEY="$(cat "$WORK/api-key")" \
  wrk -t2 -c${LOADTEST_CONNECTIONS:-16} -d3600s --timeout 10s --latency -s scripts/loadtest.lua "http://127.0.0.1:$PORT" > "$WORK/wrk.txt" 2>&1 &
WRK_PID=$!
[ -n "${LOADTEST_PERF:-}" ] && perf record -F 999 -g -p "$SERVER_PID" -o "$LOADTEST_PERF" -- sleep 5 >/dev/null 2>&1 &
# wrk runs for its whole duration; stop it (SIGINT: it reports) once every token was answered.
answered() { curl -s "http://127.0.0.1:$PORT/metrics" | awk '/^paywarden_decrypt_outcomes_total/ {n += $2} END {print n + 0}'; }
# (wrk takes one line it never sends, so "all answered" is "the count stopped moving".)
LAST=-1; STILL=0; RSS_WARM=""
while kill -0 "$WRK_PID" 2>/dev/null && [ "$STILL" -lt 2 ]; do
  sleep 1
  NOW=$(answered)
  # RSS once warmed up (allocator pools, caches, connections): a tenth of the run in.
  if [ -z "$RSS_WARM" ] && [ "$NOW" -ge $((TOKENS / 10)) ]; then RSS_WARM=$(rss); WARM_AT=$NOW; fi
  if [ "$NOW" -eq "$LAST" ] && [ "$NOW" -gt 0 ]; then STILL=$((STILL + 1)); else STILL=0; fi
  LAST=$NOW
done
kill -INT "$WRK_PID" 2>/dev/null || true
wait "$WRK_PID" || true
grep -q LOADTEST "$WORK/wrk.txt" || { cat "$WORK/wrk.txt"; echo "wrk reported nothing"; exit 1; }
RSS_AFTER=$(rss)
LINE=$(grep LOADTEST "$WORK/wrk.txt")
eval "$(echo "$LINE" | sed 's/^LOADTEST //')"
RECYCLES=$(curl -s "http://127.0.0.1:$PORT/metrics" | awk '/^paywarden_hsm_module_recycles_total/ {print $2}')
sleep 11  # one key-map refresh, which also updates the replay cache gauge
REPLAY=$(curl -s "http://127.0.0.1:$PORT/metrics" | awk '/^paywarden_replay_cache_entries/ {print $2}')

HALF=$(awk -v r="$rate" 'BEGIN { printf "%d", r / 2 }')
echo "== phase 2: open loop at $HALF tokens/s (half the maximum) for $HALF_SECONDS s"
HALF_LINE=$("$BIN/paywarden-bench" loadgen "http://127.0.0.1:$PORT/v1/payment-tokens/decrypt" "$WORK/api-key" \
  "$WORK/tokens-2.jsonl" "$HALF" "$HALF_SECONDS")

echo
echo "== Paywarden load test (loopback, load generator on the same 2 cores)"
printf "maximum rate:      %s tokens/s over %s decryptions (%s s), errors %s\n" "$rate" "$decrypted" "$seconds" "$errors"
printf "latency at max:    p50 %s ms, p90 %s ms, p99 %s ms\n" "$p50" "$p90" "$p99"
printf "raw HSM ECDH:      %s derives/s (hsm-bench, 2 threads, same run)\n" "$RAW_RATE"
awk -v a="$rate" -v b="$RAW_RATE" 'BEGIN { printf "ratio:             %.2f of the raw 2-thread ECDH rate (target >= 0.5)\n", a / b }'
printf "half rate:         %s\n" "$HALF_LINE"
awk -v a="$RSS_BEFORE" -v w="${RSS_WARM:-$RSS_BEFORE}" -v n="${WARM_AT:-0}" -v b="$RSS_AFTER" -v r="$RECYCLES" 'BEGIN {
  printf "RSS:               %d kB idle, %d kB after %d decryptions (warm), %d kB at the end: %+.1f%% from warm (target <= +10%%), %+.1f%% from idle; module recycles %s\n", a, w, n, b, (b - w) * 100 / w, (b - a) * 100 / a, r }'
printf "replay cache:      %.0f transaction ids remembered at the end (all inside the signing-time window)\n" "$REPLAY"
