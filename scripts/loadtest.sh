#!/usr/bin/env bash
# `make loadtest`: the service on a fresh SoftHSM token, loaded through loopback with unique
# forged tokens (replay protection on), next to the raw HSM's ECDH rate from the same run.
#   phase 1: wrk (2 threads, 16 connections) sends LOADTEST_TOKENS tokens as fast as the
#            service takes them: tokens/s, latency, errors, RSS before and after;
#   phase 2: an open-loop generator at half that rate, LOADTEST_HALF_RUNS times (the machine is
#            shared and noisy, so the median p99 is the figure): p50/p90/p99 when not saturated.
set -euo pipefail
cd "$(dirname "$0")/.."
TOKENS=${LOADTEST_TOKENS:-500000}
HALF_SECONDS=${LOADTEST_HALF_SECONDS:-15}
HALF_RUNS=${LOADTEST_HALF_RUNS:-3}
[ "$HALF_RUNS" -ge 1 ] || { echo "LOADTEST_HALF_RUNS must be at least 1"; exit 2; }
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

HALF_TOKENS=$(( 5000 * HALF_SECONDS ))
echo "== forging $TOKENS + $HALF_RUNS x $HALF_TOKENS unique EC_v1 tokens"
"$BIN/paywarden-bench" loadtest-setup "$WORK" "$TOKENS" $(for _ in $(seq 1 "$HALF_RUNS"); do echo "$HALF_TOKENS"; done)

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
metric() { curl -s "http://127.0.0.1:$PORT/metrics" | awk -v m="$1" '$1 == m {printf "%d", $2}' || true; }

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
  if [ -z "$RSS_WARM" ] && [ "$NOW" -ge $((TOKENS / 10)) ]; then
    RSS_WARM=$(rss); WARM_AT=$NOW; REPLAY_WARM=$(metric paywarden_replay_cache_bytes)
  fi
  if [ "$NOW" -eq "$LAST" ] && [ "$NOW" -gt 0 ]; then STILL=$((STILL + 1)); else STILL=0; fi
  LAST=$NOW
done
kill -INT "$WRK_PID" 2>/dev/null || true
wait "$WRK_PID" || true
grep -q LOADTEST "$WORK/wrk.txt" || { cat "$WORK/wrk.txt"; echo "wrk reported nothing"; exit 1; }
RSS_AFTER=$(rss)
LINE=$(grep LOADTEST "$WORK/wrk.txt")
eval "$(echo "$LINE" | sed 's/^LOADTEST //')"
RECYCLES=$(metric paywarden_hsm_module_recycles_total)
sleep 1  # the replay cache gauges follow within a quarter of a second
REPLAY=$(metric paywarden_replay_cache_entries)
REPLAY_BYTES=$(metric paywarden_replay_cache_bytes)

HALF=$(awk -v r="$rate" 'BEGIN { printf "%d", r / 2 }')
echo "== phase 2: open loop at $HALF tokens/s (half the maximum), $HALF_RUNS runs of $HALF_SECONDS s"
[ $((HALF * HALF_SECONDS)) -le "$HALF_TOKENS" ] || echo "warning: $HALF_TOKENS tokens per run cover only $((HALF_TOKENS / HALF)) s at $HALF tokens/s"
HALF_LINES=""
for run in $(seq 1 "$HALF_RUNS"); do
  RUN_OUTPUT=$("$BIN/paywarden-bench" loadgen "http://127.0.0.1:$PORT/v1/payment-tokens/decrypt" "$WORK/api-key" \
    "$WORK/tokens-$((run + 1)).jsonl" "$HALF" "$HALF_SECONDS")
  echo "$RUN_OUTPUT"
  HALF_LINES="$HALF_LINES$(echo "$RUN_OUTPUT" | grep "^open loop")"$'\n'
done
# The median (of an even count, the mean of the middle two).
HALF_P99=$(echo "$HALF_LINES" | sed -n 's/.*p99 \([0-9.]*\) ms.*/\1/p' | sort -n |
  awk '{ v[NR] = $1 } END { if (NR % 2) print v[(NR + 1) / 2]; else printf "%.2f\n", (v[NR / 2] + v[NR / 2 + 1]) / 2 }')
HALF_ERRORS=$(echo "$HALF_LINES" | sed -n 's/.*errors \([0-9]*\).*/\1/p' | awk '{ n += $1 } END { print n + 0 }')

echo
echo "== Paywarden load test (loopback, load generator on the same 2 cores)"
printf "maximum rate:      %s tokens/s over %s decryptions (%s s), errors %s\n" "$rate" "$decrypted" "$seconds" "$errors"
printf "latency at max:    p50 %s ms, p90 %s ms, p99 %s ms\n" "$p50" "$p90" "$p99"
printf "raw HSM ECDH:      %s derives/s (hsm-bench, 2 threads, same run)\n" "$RAW_RATE"
awk -v a="$rate" -v b="$RAW_RATE" 'BEGIN { printf "ratio:             %.2f of the raw 2-thread ECDH rate (target >= 0.5)\n", a / b }'
printf "half rate:         median p99 %s ms over %s runs of %s s at %s tokens/s (target <= 10 ms), errors %s\n" "$HALF_P99" "$HALF_RUNS" "$HALF_SECONDS" "$HALF" "$HALF_ERRORS"
awk -v a="$RSS_BEFORE" -v w="${RSS_WARM:-$RSS_BEFORE}" -v n="${WARM_AT:-0}" -v b="$RSS_AFTER" -v r="$RECYCLES" 'BEGIN {
  printf "RSS:               %d kB idle, %d kB after %d decryptions (warm), %d kB at the end: %+.1f%% from warm (target <= +10%%), %+.1f%% from idle; module recycles %s\n", a, w, n, b, (b - w) * 100 / w, (b - a) * 100 / a, r }'
awk -v n="${REPLAY:-0}" -v e="${REPLAY_BYTES:-0}" -v s="${REPLAY_WARM:-0}" -v w="${RSS_WARM:-$RSS_BEFORE}" -v b="$RSS_AFTER" 'BEGIN {
  g = (e - s) / 1024
  printf "replay cache:      %d transaction ids in %d kB at the end (%d kB when warm): every token inside the signing-time window, kept by design\n", n, e / 1024, s / 1024
  printf "RSS, replay cache aside: %+.1f%% from warm (%+d kB of the growth is the replay cache)\n", (b - w - g) * 100 / w, g }'
