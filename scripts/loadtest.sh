#!/usr/bin/env bash
# `make loadtest`: the service on a fresh SoftHSM token, loaded through loopback with unique
# forged tokens (replay protection on), next to the raw HSM's ECDH rate from the same run.
#   DATABASE=sqlite (default), postgres or all: the replay ledger's databases, each measured in
#            the same invocation as an in-memory run (memory:), which is the baseline of the ratio;
#            postgres starts a throw-away local cluster (fsync on, as deployed) and stops it.
#   phase 1: per database, on a fresh one, wrk (2 threads, 16 connections) sends LOADTEST_TOKENS
#            tokens as fast as the service takes them: tokens/s, latency, errors, RSS;
#   phase 2: on the last database, an open-loop generator at half its rate, LOADTEST_HALF_RUNS
#            times (the machine is shared and noisy, so the median p99 is the figure).
set -euo pipefail
umask 077   # the work directory holds an API key, a database password and tokens
cd "$(dirname "$0")/.."
TOKENS=${LOADTEST_TOKENS:-300000}
case "${DATABASE:-sqlite}" in
  sqlite) DATABASES="memory sqlite" ;;
  postgres) DATABASES="memory postgres" ;;
  all) DATABASES="memory sqlite postgres" ;;
  *) echo "DATABASE must be sqlite, postgres or all"; exit 2 ;;
esac
HALF_SECONDS=${LOADTEST_HALF_SECONDS:-15}
HALF_RUNS=${LOADTEST_HALF_RUNS:-3}
[ "$HALF_RUNS" -ge 1 ] || { echo "LOADTEST_HALF_RUNS must be at least 1"; exit 2; }
BIN=.build/release
HSM_BENCH=${HSM_BENCH:-.build/hsm-bench/hsm_bench}
WORK=$(mktemp -d "${TMPDIR:-/tmp}/paywarden-loadtest.XXXXXX")
PORT=${LOADTEST_PORT:-18443}
SERVER_PID=""
PG_BIN=""
cleanup() {
  if [ -n "$SERVER_PID" ]; then kill "$SERVER_PID" 2>/dev/null || true; fi
  wait 2>/dev/null || true
  if [ -n "$PG_BIN" ]; then as_postgres "$PG_BIN/pg_ctl" -D "$WORK/pg/data" stop -m fast >/dev/null 2>&1 || true; fi
  rm -rf "$WORK"
}
as_postgres() { if [ "$(id -u)" = 0 ]; then runuser -u postgres -- "$@"; else "$@"; fi; }
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

export PAYWARDEN_API_KEYS="$(cat "$WORK/api-entry")"
export PAYWARDEN_TRUST_ROOTS="$WORK/root.pem"
export PAYWARDEN_SIGNING_TIME_WINDOW=1800   # forging takes minutes; per-token work is unchanged
export PAYWARDEN_LOG_LEVEL=warning
export PAYWARDEN_LISTEN="127.0.0.1:$PORT"
awk -v w="$WORK/tokens-1.jsonl" '{ print > (w "." (NR % 2)) }' "$WORK/tokens-1.jsonl"   # one file per wrk thread

# A local PostgreSQL like a deployed one (fsync on), as the unprivileged postgres user.
start_postgres() {
  PG_BIN=$(ls -d /usr/lib/postgresql/*/bin | sort -V | tail -1)
  mkdir -p "$WORK/pg" && chmod 711 "$WORK"   # the postgres user may pass through, not list or read
  if [ "$(id -u)" = 0 ]; then chown postgres "$WORK/pg"; fi
  head -c 18 /dev/urandom | base64 | tr -d '/+=' > "$WORK/pg-password"
  cp "$WORK/pg-password" "$WORK/pg/pwfile" && { [ "$(id -u)" != 0 ] || chown postgres "$WORK/pg/pwfile"; }
  as_postgres "$PG_BIN/initdb" -D "$WORK/pg/data" -U paywarden --pwfile "$WORK/pg/pwfile" --auth scram-sha-256 >/dev/null
  PG_PORT=$((PORT + 1))
  as_postgres "$PG_BIN/pg_ctl" -D "$WORK/pg/data" -l "$WORK/pg/log" -w start \
    -o "-p $PG_PORT -k $WORK/pg -c listen_addresses=127.0.0.1 -c max_connections=100" >/dev/null
}

# Runs `paywarden serve` on a fresh database of the given kind; waits until it is ready.
start_server() {
  unset PAYWARDEN_DATABASE_PASSWORD_FILE PAYWARDEN_DATABASE_AUTO_MIGRATE
  case "$1" in
    memory) export PAYWARDEN_DATABASE_URL="memory:" ;;
    sqlite) export PAYWARDEN_DATABASE_URL="sqlite:$WORK/db-$RANDOM.sqlite" ;;
    postgres)
      [ -n "$PG_BIN" ] || start_postgres
      local name="loadtest_$RANDOM"
      PGPASSWORD="$(cat "$WORK/pg-password")" "$PG_BIN/createdb" -h 127.0.0.1 -p "$PG_PORT" -U paywarden "$name"
      export PAYWARDEN_DATABASE_URL="postgres://paywarden@127.0.0.1:$PG_PORT/$name?sslmode=disable"
      export PAYWARDEN_DATABASE_PASSWORD_FILE="$WORK/pg-password" PAYWARDEN_DATABASE_AUTO_MIGRATE=true ;;
  esac
  "$BIN/paywarden" serve > "$WORK/server-$1.log" 2>&1 &
  SERVER_PID=$!
  for _ in $(seq 1 100); do curl -sf "http://127.0.0.1:$PORT/readyz" >/dev/null && break; sleep 0.2; done
  curl -sf "http://127.0.0.1:$PORT/readyz" >/dev/null || { cat "$WORK/server-$1.log"; echo "server not ready"; exit 1; }
}
stop_server() { kill "$SERVER_PID" 2>/dev/null || true; wait "$SERVER_PID" 2>/dev/null || true; SERVER_PID=""; }
rss() { awk '/VmRSS/ {print $2}' "/proc/$SERVER_PID/status"; }
metric() { curl -s "http://127.0.0.1:$PORT/metrics" | awk -v m="$1" '$1 == m {printf "%d", $2}' || true; }
answered() { curl -s "http://127.0.0.1:$PORT/metrics" | awk '/^paywarden_decrypt_outcomes_total/ {n += $2} END {print n + 0}'; }

# Phase 1 on one database: prints a LOADTEST line (rate, latency, errors) and RSS.
phase1() {
  echo "== phase 1 ($1): wrk, 2 threads, ${LOADTEST_CONNECTIONS:-16} connections, $TOKENS tokens"
  start_server "$1"
  local rss_before; rss_before=$(rss)
  PAYWARDEN_LOADTEST_TOKENS="$WORK/tokens-1.jsonl" PAYWARDEN_LOADTEST_KEY="$(cat "$WORK/api-key")" \
    wrk -t2 -c${LOADTEST_CONNECTIONS:-16} -d3600s --timeout 10s --latency -s scripts/loadtest.lua "http://127.0.0.1:$PORT" > "$WORK/wrk-$1.txt" 2>&1 &
  local wrk_pid=$!
  [ -n "${LOADTEST_PERF:-}" ] && perf record -F 999 -g -p "$SERVER_PID" -o "$LOADTEST_PERF-$1" -- sleep 5 >/dev/null 2>&1 &
  # wrk runs for its whole duration; stop it (SIGINT: it reports) once every token was answered
  # (wrk takes one line it never sends, so "all answered" is "the count stopped moving").
  local last=-1 still=0 now
  while kill -0 "$wrk_pid" 2>/dev/null && [ "$still" -lt 2 ]; do
    sleep 1
    now=$(answered)
    if [ "$now" -eq "$last" ] && [ "$now" -gt 0 ]; then still=$((still + 1)); else still=0; fi
    last=$now
  done
  kill -INT "$wrk_pid" 2>/dev/null || true
  wait "$wrk_pid" || true
  grep -q LOADTEST "$WORK/wrk-$1.txt" || { cat "$WORK/wrk-$1.txt"; echo "wrk reported nothing"; exit 1; }
  local line; line=$(grep LOADTEST "$WORK/wrk-$1.txt" | sed 's/^LOADTEST //')
  echo "$line"
  echo "RESULT $1 $line rss_before=$rss_before rss_after=$(rss) recycles=$(metric paywarden_hsm_module_recycles_total)" >> "$WORK/results"
  [ "$1" = "${LAST_DB}" ] || stop_server
}

LAST_DB=${DATABASES##* }
for db in $DATABASES; do phase1 "$db"; done
value() { grep "^RESULT $1 " "$WORK/results" | tr ' ' '\n' | sed -n "s/^$2=//p"; }
rate=$(value "$LAST_DB" rate)

HALF=$(awk -v r="$rate" 'BEGIN { printf "%d", r / 2 }')
echo "== phase 2 ($LAST_DB): open loop at $HALF tokens/s (half its maximum), $HALF_RUNS runs of $HALF_SECONDS s"
[ $((HALF * HALF_SECONDS)) -le "$HALF_TOKENS" ] || echo "warning: $HALF_TOKENS tokens per run cover only $((HALF_TOKENS / HALF)) s at $HALF tokens/s"
HALF_LINES=""
for run in $(seq 1 "$HALF_RUNS"); do
  RUN_OUTPUT=$("$BIN/paywarden-bench" loadgen "http://127.0.0.1:$PORT/v1/payment-tokens/decrypt" "$WORK/api-key" \
    "$WORK/tokens-$((run + 1)).jsonl" "$HALF" "$HALF_SECONDS")
  echo "$RUN_OUTPUT"
  HALF_LINES="$HALF_LINES$(echo "$RUN_OUTPUT" | grep "^open loop")"$'\n'
done
stop_server
# The median (of an even count, the mean of the middle two).
HALF_P99=$(echo "$HALF_LINES" | sed -n 's/.*p99 \([0-9.]*\) ms.*/\1/p' | sort -n |
  awk '{ v[NR] = $1 } END { if (NR % 2) print v[(NR + 1) / 2]; else printf "%.2f\n", (v[NR / 2] + v[NR / 2 + 1]) / 2 }')
HALF_ERRORS=$(echo "$HALF_LINES" | sed -n 's/.*errors \([0-9]*\).*/\1/p' | awk '{ n += $1 } END { print n + 0 }')

echo
echo "== Paywarden load test (loopback, load generator on the same 2 cores), $TOKENS tokens per database"
printf "raw HSM ECDH:      %s derives/s (hsm-bench, 2 threads, same run)\n" "$RAW_RATE"
MEMORY_RATE=$(value memory rate)
for db in $DATABASES; do
  awk -v db="$db" -v r="$(value "$db" rate)" -v m="$MEMORY_RATE" -v raw="$RAW_RATE" -v p50="$(value "$db" p50)" \
    -v p99="$(value "$db" p99)" -v e="$(value "$db" errors)" -v a="$(value "$db" rss_before)" -v b="$(value "$db" rss_after)" 'BEGIN {
    target = (db == "sqlite") ? " (target >= 0.85)" : (db == "postgres") ? " (target >= 0.75)" : ""
    printf "%-9s %8.0f tokens/s  p50 %5s ms  p99 %5s ms  errors %s  %.2f of raw ECDH  %.2f of memory%s  RSS %d -> %d kB\n",
      db ":", r, p50, p99, e, r / raw, r / m, target, a, b }'
done
printf "half rate (%s): median p99 %s ms over %s runs of %s s at %s tokens/s (target <= 10 ms), errors %s\n" "$LAST_DB" "$HALF_P99" "$HALF_RUNS" "$HALF_SECONDS" "$HALF" "$HALF_ERRORS"
