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
#   vault (LOADTEST_VAULT=0 skips it), on each database but memory: (which lives inside serve,
#            out of reach of `paywarden paypages create`), after its decrypt runs: wrk posts
#            LOADTEST_TOKENS more unique tokens as eProtect registration forms (registrations/s, as
#            a ratio to that database's decrypt rate), then redeems the registration IDs they
#            returned, round-robin, for LOADTEST_REDEEM_SECONDS (default 15); on the last database,
#            redemption at half its rate as in phase 2 (median p99); then a cnpAPI authorization
#            for each of LOADTEST_RELAYS (default 20,000) of those IDs, once, relayed to a stand-in
#            processor upstream (`paywarden-bench upstream`: HTTPS, client certificate required).
#   network: phase 1 on memory: again with every PKCS#11 call 1 ms late (LOADTEST_HSM_LATENCY_US,
#            the fault-injecting module in front of SoftHSM, as an HSM across a network) and
#            LOADTEST_HSM_WORKERS sessions (default 48), and LOADTEST_NETWORK_CONNECTIONS (default
#            128: a token waits 7 ms on the HSM, so 16 connections would bound the rate at about
#            2,000/s); its rate against the memory run's (LOADTEST_NETWORK=0 skips it).
#   tracing: phase 1 on memory: again right after it, with PAYWARDEN_TRACING=on exporting every span
#            to a local collector (`paywarden-bench collector`, OTLP/HTTP on loopback, the stand-in
#            the tracing test uses); its rate against the memory run's (LOADTEST_TRACING=0 skips it).
#   dispatch: the default database's runs (phase 1, registration, redemption, relay) again with
#            PAYWARDEN_HSM_DISPATCH=pool (the HSM's worker threads) beside the default, auto (inline
#            for SoftHSM); LOADTEST_POOL=0 skips them.
#   peer:    phase 1's load against the PyPI `applepay` library behind Starlette on uvicorn (2
#            workers, httptools, uvloop; scripts/applepay_peer.py), its key from the same test PKI,
#            installed into a virtual environment under the work directory (LOADTEST_PEER=0 skips
#            it): its tokens/s, latency and CPU, and Paywarden's rate as a ratio to it.
#   CPU:     the server's utime+stime from /proc over each wrk run, per request answered, beside
#            the engine's process CPU per token in process (`paywarden-bench engine`, same run) and
#            the HTTP floor: the same listener answering a static body of the decrypt response's
#            size (`paywarden-bench http-baseline`, wrk for LOADTEST_BASELINE_SECONDS, default 10).
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
VAULT=${LOADTEST_VAULT:-1}
REDEEM_SECONDS=${LOADTEST_REDEEM_SECONDS:-15}
RELAYS=${LOADTEST_RELAYS:-20000}
PAYPAGE=loadtestPaypage
ORGANIZATION=loadtest
RELAY_MERCHANT=01234
BASELINE_SECONDS=${LOADTEST_BASELINE_SECONDS:-10}
NETWORK=${LOADTEST_NETWORK:-1}
POOL=${LOADTEST_POOL:-1}
PEER=${LOADTEST_PEER:-1}
TRACING=${LOADTEST_TRACING:-1}
NETWORK_LATENCY=${LOADTEST_HSM_LATENCY_US:-1000}
NETWORK_WORKERS=${LOADTEST_HSM_WORKERS:-48}
NETWORK_CONNECTIONS=${LOADTEST_NETWORK_CONNECTIONS:-128}
CLOCK_TICKS=$(getconf CLK_TCK)
BIN=${LOADTEST_BIN:-.build/release}   # .build/debug: a quick check of the script itself, not figures
HSM_BENCH=${HSM_BENCH:-.build/hsm-bench/hsm_bench}
WORK=$(mktemp -d "${TMPDIR:-/tmp}/paywarden-loadtest.XXXXXX")
PORT=${LOADTEST_PORT:-18443}
SERVER_PID=""
UPSTREAM_PID=""
BASELINE_PID=""
PEER_PID=""
PEER_WRK_PID=""
COLLECTOR_PID=""
PG_BIN=""
cleanup() {
  if [ -n "$SERVER_PID" ]; then kill "$SERVER_PID" 2>/dev/null || true; fi
  if [ -n "$UPSTREAM_PID" ]; then kill "$UPSTREAM_PID" 2>/dev/null || true; fi
  if [ -n "$BASELINE_PID" ]; then kill "$BASELINE_PID" 2>/dev/null || true; fi
  if [ -n "$PEER_WRK_PID" ]; then kill "$PEER_WRK_PID" 2>/dev/null || true; fi
  if [ -n "$PEER_PID" ]; then kill "$PEER_PID" 2>/dev/null || true; fi
  if [ -n "$COLLECTOR_PID" ]; then kill "$COLLECTOR_PID" 2>/dev/null || true; fi
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

echo "== decryption engine in process (paywarden-bench engine: EC_v1, 2 workers, 5 s, a token of its own), same run"
ENGINE=$("$BIN/paywarden-bench" engine 5 | grep '^ENGINE ')
echo "$ENGINE"
ENGINE_RATE=$(echo "$ENGINE" | sed -n 's/.* rate=\([0-9.]*\).*/\1/p')
ENGINE_CPU=$(echo "$ENGINE" | sed -n 's/.* cpu_us=\([0-9.]*\).*/\1/p')

HALF_TOKENS=$(( 5000 * HALF_SECONDS ))
# The registration runs need tokens of their own: one database's decrypt runs spent the others.
VAULT_ARGS=()
[ "$PEER" = 0 ] || VAULT_ARGS=(--peer "$TOKENS")
[ "$VAULT" = 0 ] || VAULT_ARGS+=(--vault "$PAYPAGE" "$ORGANIZATION" "$TOKENS")
echo "== forging $TOKENS + $HALF_RUNS x $HALF_TOKENS unique EC_v1 tokens$([ "$PEER" = 0 ] || echo " + $TOKENS for the peer")$(
  [ "$VAULT" = 0 ] || echo " + $TOKENS as eProtect forms")"
"$BIN/paywarden-bench" loadtest-setup "$WORK" "$TOKENS" $(for _ in $(seq 1 "$HALF_RUNS"); do echo "$HALF_TOKENS"; done) "${VAULT_ARGS[@]}"

export PAYWARDEN_API_KEYS="$(cat "$WORK/api-entry")$([ "$VAULT" = 0 ] || echo ",$(cat "$WORK/vault-entry")")"
export PAYWARDEN_TRUST_ROOTS="$WORK/root.pem"
# Forging takes minutes, and with DATABASE=all the last registration run spends tokens forged
# most of an hour before; per-token work is unchanged.
export PAYWARDEN_SIGNING_TIME_WINDOW=7200
export PAYWARDEN_LOG_LEVEL=warning
# No balancer in front: each server stops at once on SIGTERM, without the drain.
export PAYWARDEN_SHUTDOWN_DRAIN_SECONDS=0
export PAYWARDEN_LISTEN="127.0.0.1:$PORT"
# Every registration comes from one address for one paypage: the production limits (20/s per
# address, 200/s per paypage) would measure the rate limiter, not the vault.
export PAYWARDEN_EPROTECT_RATE_PER_PAYPAGE=1000000 PAYWARDEN_EPROTECT_RATE_PER_ADDRESS=1000000
# wrk is one client address with up to LOADTEST_NETWORK_CONNECTIONS connections, reconnecting after
# each PAYWARDEN_MAX_REQUESTS_PER_CONNECTION (kept at its default: the reconnections are part of the cost).
export PAYWARDEN_MAX_CONNECTIONS_PER_CLIENT=100000
# The relay's upstream: a stand-in processor engine on loopback, HTTPS with mutual TLS.
if [ "$VAULT" != 0 ]; then
  "$BIN/paywarden-bench" upstream "$WORK" > "$WORK/upstream.log" 2>&1 &
  UPSTREAM_PID=$!
  for _ in $(seq 1 100); do [ -s "$WORK/upstream-url" ] && break; sleep 0.1; done
  [ -s "$WORK/upstream-url" ] || { cat "$WORK/upstream.log"; echo "the upstream stand-in did not start"; exit 1; }
  export PAYWARDEN_RELAY_CNP_UPSTREAM="$(cat "$WORK/upstream-url")" PAYWARDEN_RELAY_CNP_UPSTREAM_CA="$WORK/upstream-ca.pem"
  export PAYWARDEN_RELAY_CNP_UPSTREAM_CLIENT_CERTIFICATE="$WORK/upstream-client.pem"
  export PAYWARDEN_RELAY_CNP_UPSTREAM_CLIENT_KEY="$WORK/upstream-client.key"
  export PAYWARDEN_RELAY_CNP_MERCHANT_IDS="$ORGANIZATION=$RELAY_MERCHANT"
fi
split_lines() { awk -v w="$1" '{ print > (w "." (NR % 2)) }' "$1"; }   # one file per wrk thread
split_lines "$WORK/tokens-1.jsonl"
[ "$PEER" = 0 ] || split_lines "$WORK/peer-tokens.jsonl"
[ "$VAULT" = 0 ] || split_lines "$WORK/forms.txt"

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
    memory | network | tracing) export PAYWARDEN_DATABASE_URL="memory:" ;;
    # A fresh database, given the merchant key's record, which loadtest-setup wrote to the home's.
    sqlite)
      export PAYWARDEN_DATABASE_URL="sqlite:$WORK/db-$RANDOM.sqlite"
      "$BIN/paywarden-bench" copy-key-records "$PAYWARDEN_HOME/paywarden.sqlite" ;;
    postgres)
      [ -n "$PG_BIN" ] || start_postgres
      local name="loadtest_$RANDOM"
      PGPASSWORD="$(cat "$WORK/pg-password")" "$PG_BIN/createdb" -h 127.0.0.1 -p "$PG_PORT" -U paywarden "$name"
      export PAYWARDEN_DATABASE_URL="postgres://paywarden@127.0.0.1:$PG_PORT/$name?sslmode=disable"
      export PAYWARDEN_DATABASE_PASSWORD_FILE="$WORK/pg-password" PAYWARDEN_DATABASE_AUTO_MIGRATE=true
      "$BIN/paywarden-bench" copy-key-records "$PAYWARDEN_HOME/paywarden.sqlite" ;;
  esac
  # What an admin does before apps post tokens; before serve, which reads the vault keys at start.
  if [ "$VAULT" != 0 ] && [ "$1" != memory ] && [ "$1" != network ] && [ "$1" != tracing ]; then
    "$BIN/paywarden" paypages create --paypage-id "$PAYPAGE" --organization "$ORGANIZATION" \
      --merchant-id "$(cat "$WORK/merchant-id")" > "$WORK/paypage-$1.log" 2>&1 || { cat "$WORK/paypage-$1.log"; exit 1; }
  fi
  "$BIN/paywarden" serve > "$WORK/server-$1.log" 2>&1 &
  SERVER_PID=$!
  for _ in $(seq 1 100); do curl -sf "http://127.0.0.1:$PORT/readyz" >/dev/null && break; sleep 0.2; done
  curl -sf "http://127.0.0.1:$PORT/readyz" >/dev/null || { cat "$WORK/server-$1.log"; echo "server not ready"; exit 1; }
}
# LOADTEST_METRICS=DIR keeps each server's /metrics, as it stops, in DIR (for a closer look).
stop_server() {
  [ -z "${LOADTEST_METRICS:-}" ] || curl -s "http://127.0.0.1:$PORT/metrics" > "$LOADTEST_METRICS/metrics-$SERVER_PID.txt" || true
  kill "$SERVER_PID" 2>/dev/null || true; wait "$SERVER_PID" 2>/dev/null || true; SERVER_PID=""
}
rss() { awk '/VmRSS/ {print $2}' "/proc/$SERVER_PID/status"; }
# A process's CPU so far (utime + stime), in clock ticks.
cpu_ticks() { awk '{ print $14 + $15 }' "/proc/$1/stat"; }
# Microseconds of CPU per request: ticks before, ticks after, requests.
cpu_per_request() {
  awk -v a="$1" -v b="$2" -v n="$3" -v hz="$CLOCK_TICKS" 'BEGIN { printf "%.1f", (b - a) / hz * 1e6 / (n > 0 ? n : 1) }'
}
# The field $2 of the RESULT line named $1.
value() { grep "^RESULT $1 " "$WORK/results" | tr ' ' '\n' | sed -n "s/^$2=//p"; }
# The NAME=VALUE field NAME of a LOADTEST line.
field() { echo "$1" | tr ' ' '\n' | sed -n "s/^$2=//p"; }
metric() { curl -s "http://127.0.0.1:$PORT/metrics" | awk -v m="$1" '$1 == m {printf "%d", $2}' || true; }
# The requests to the route $1 the server answered so far, refusals included.
answered() {
  curl -s "http://127.0.0.1:$PORT/metrics" |
    awk -v r="route=\"$1\"" '/^paywarden_http_requests_total/ && index($0, r) { n += $2 } END { print n + 0 }'
}

# Runs wrk (2 threads, scripts/loadtest.lua in mode $1 over the per-thread halves of $2) into
# $WORK/wrk-$3.txt until every line was answered: wrk runs for its whole duration, so it is
# stopped (SIGINT: it reports) once the server's count of answers on the route $4 stops moving.
# Extra environment for the script comes as further NAME=VALUE arguments. Prints the LOADTEST line.
wrk_all_lines() {
  local mode=$1 lines=$2 name=$3 route=$4
  shift 4
  env PAYWARDEN_LOADTEST_MODE="$mode" PAYWARDEN_LOADTEST_LINES="$lines" "$@" \
    wrk -t2 -c${LOADTEST_CONNECTIONS:-16} -d3600s --timeout 10s --latency -s scripts/loadtest.lua "http://127.0.0.1:$PORT" \
    > "$WORK/wrk-$name.txt" 2>&1 &
  local wrk_pid=$!
  [ -n "${LOADTEST_PERF:-}" ] && perf record -F 999 -g -p "$SERVER_PID" -o "$LOADTEST_PERF-$name" -- sleep 5 >/dev/null 2>&1 &
  local last=-1 still=0 now waited=0
  while kill -0 "$wrk_pid" 2>/dev/null && [ "$still" -lt 2 ]; do
    sleep 1
    now=$(answered "$route")
    if [ "$now" -eq "$last" ] && [ "$now" -gt 0 ]; then still=$((still + 1)); else still=0; fi
    last=$now
    waited=$((waited + 1))
    # Nothing answered for so long is a broken run (or a route the metrics name otherwise), not a slow one.
    if [ "$now" -eq 0 ] && [ "$waited" -ge 60 ]; then kill "$wrk_pid"; echo "no answers on $route after 60 s" >&2; exit 1; fi
  done
  kill -INT "$wrk_pid" 2>/dev/null || true
  wait "$wrk_pid" || true
  loadtest_line "$name"
}
loadtest_line() {
  # On stderr: the callers capture stdout, and failures must show.
  grep FAILED "$WORK/wrk-$1.txt" >&2 || true
  grep -q LOADTEST "$WORK/wrk-$1.txt" || { cat "$WORK/wrk-$1.txt" >&2; echo "wrk reported nothing" >&2; exit 1; }
  grep LOADTEST "$WORK/wrk-$1.txt" | sed 's/^LOADTEST //'
}

# Phase 1 on one database ($1), its results named $2 (default: the database): prints a LOADTEST
# line (rate, latency, errors) and RSS.
phase1() {
  local name=${2:-$1}
  echo "== phase 1 ($name): wrk, 2 threads, ${LOADTEST_CONNECTIONS:-16} connections, $TOKENS tokens"
  start_server "$1"
  local rss_before cpu_before; rss_before=$(rss); cpu_before=$(cpu_ticks "$SERVER_PID")
  local line; line=$(wrk_all_lines decrypt "$WORK/tokens-1.jsonl" "$name" /v1/payment-tokens/decrypt \
    PAYWARDEN_LOADTEST_KEY="$(cat "$WORK/api-key")")
  local cpu; cpu=$(cpu_per_request "$cpu_before" "$(cpu_ticks "$SERVER_PID")" "$(field "$line" decrypted)")
  echo "$line cpu_us=$cpu dispatch=$(dispatch_mode)"
  echo "RESULT $name $line cpu_us=$cpu rss_before=$rss_before rss_after=$(rss) recycles=$(metric paywarden_hsm_module_recycles_total)" \
    "dispatch=$(dispatch_mode)" >> "$WORK/results"
}
# The running server's HSM dispatch, from its metrics.
dispatch_mode() {
  curl -s "http://127.0.0.1:$PORT/metrics" | awk '/^paywarden_hsm_dispatch\{/ && $2 == 1 { sub(/.*mode="/, ""); sub(/".*/, ""); print }'
}

# The peer (scripts/applepay_peer.py) under phase 1's load, on its own tokens: a LOADTEST line
# with the CPU of uvicorn and its workers per request.
peer_run() {
  [ "$PEER" != 0 ] || return 0
  echo "== peer: the PyPI applepay library on uvicorn (2 workers, httptools, uvloop), wrk as in phase 1, $TOKENS tokens"
  if [ ! -x "$WORK/peer-venv/bin/uvicorn" ]; then
    python3 -m venv "$WORK/peer-venv"
    "$WORK/peer-venv/bin/pip" install -q --disable-pip-version-check \
      applepay==0.3.0 cryptography==50.0.2 starlette==1.10.0 uvicorn==0.54.0 httptools==0.9.0 uvloop==0.23.0
  fi
  local port=$((PORT + 3))
  PEER_CERTIFICATE="$WORK/peer-certificate.pem" PEER_KEY="$WORK/peer-key.pem" PEER_ROOT_DER="$WORK/root.der" \
    "$WORK/peer-venv/bin/uvicorn" applepay_peer:app --app-dir scripts --host 127.0.0.1 --port "$port" --workers 2 \
    --http httptools --loop uvloop --log-level warning --no-access-log > "$WORK/peer.log" 2>&1 &
  PEER_PID=$!
  for _ in $(seq 1 100); do curl -sf "http://127.0.0.1:$port/ready" >/dev/null && break; sleep 0.2; done
  curl -sf "http://127.0.0.1:$port/ready" >/dev/null || { cat "$WORK/peer.log"; echo "the peer did not start"; exit 1; }
  local pids; pids="$PEER_PID $( (pgrep -P "$PEER_PID" || true) | tr '\n' ' ')"
  # The peer's CPU: uvicorn and its workers (a process gone meanwhile counts as nothing more).
  peer_ticks() {
    local total=0 pid ticks
    for pid in $pids; do ticks=$(cpu_ticks "$pid" 2>/dev/null || true); total=$((total + ${ticks:-0})); done
    echo "$total"
  }
  local cpu_before; cpu_before=$(peer_ticks)
  PAYWARDEN_LOADTEST_MODE=decrypt PAYWARDEN_LOADTEST_LINES="$WORK/peer-tokens.jsonl" PAYWARDEN_LOADTEST_KEY=none \
    wrk -t2 -c${LOADTEST_CONNECTIONS:-16} -d3600s --timeout 10s --latency -s scripts/loadtest.lua "http://127.0.0.1:$port" \
    > "$WORK/wrk-peer.txt" 2>&1 &
  PEER_WRK_PID=$!
  local wrk_pid=$PEER_WRK_PID
  # Every line is sent once; wrk is stopped once the peer's CPU stops moving (it keeps no count).
  local last=-1 now still=0
  while kill -0 "$wrk_pid" 2>/dev/null && [ "$still" -lt 2 ]; do
    sleep 1
    now=$(peer_ticks)
    if [ $((now - last)) -le 2 ]; then still=$((still + 1)); else still=0; fi
    last=$now
  done
  kill -INT "$wrk_pid" 2>/dev/null || true
  wait "$wrk_pid" || true
  PEER_WRK_PID=""
  local cpu_after; cpu_after=$(peer_ticks)
  kill "$PEER_PID" 2>/dev/null || true; wait "$PEER_PID" 2>/dev/null || true; PEER_PID=""
  local line; line=$(loadtest_line peer)
  local cpu; cpu=$(cpu_per_request "$cpu_before" "$cpu_after" "$(field "$line" decrypted)")
  echo "$line cpu_us=$cpu"
  echo "RESULT peer $line cpu_us=$cpu" >> "$WORK/results"
}

# The HTTP floor: the same listener (`paywarden-bench http-baseline`, the environment serve gets)
# answering the decrypt run's requests with a static body of the decrypt response's size.
baseline_run() {
  local bytes; bytes=$(value "$1" bytes)
  echo "== HTTP floor: the same listener answering a static $bytes-byte body, wrk for $BASELINE_SECONDS s"
  PAYWARDEN_LISTEN="127.0.0.1:$((PORT + 2))" "$BIN/paywarden-bench" http-baseline "$bytes" > "$WORK/baseline.log" 2>&1 &
  BASELINE_PID=$!
  local pid=$BASELINE_PID
  for _ in $(seq 1 100); do curl -sf -o /dev/null -X POST "http://127.0.0.1:$((PORT + 2))/ready" && break; sleep 0.1; done
  curl -sf -o /dev/null -X POST "http://127.0.0.1:$((PORT + 2))/ready" ||
    { cat "$WORK/baseline.log"; echo "the HTTP floor's server did not start"; exit 1; }
  local cpu_before; cpu_before=$(cpu_ticks "$pid")
  PAYWARDEN_LOADTEST_MODE=baseline PAYWARDEN_LOADTEST_LINES="$WORK/tokens-1.jsonl" \
    wrk -t2 -c${LOADTEST_CONNECTIONS:-16} -d${BASELINE_SECONDS}s --timeout 10s --latency -s scripts/loadtest.lua \
    "http://127.0.0.1:$((PORT + 2))" > "$WORK/wrk-baseline.txt" 2>&1 || true
  local cpu_after; cpu_after=$(cpu_ticks "$pid") || { cat "$WORK/baseline.log"; echo "the HTTP floor's server stopped"; exit 1; }
  kill "$pid" 2>/dev/null || true; wait "$pid" 2>/dev/null || true; BASELINE_PID=""
  local line; line=$(loadtest_line baseline)
  local cpu; cpu=$(cpu_per_request "$cpu_before" "$cpu_after" "$(field "$line" answered)")
  echo "$line cpu_us=$cpu"
  echo "RESULT baseline $line cpu_us=$cpu" >> "$WORK/results"
}

# The vault on the running server's database: registrations of fresh tokens, then redemptions of
# the IDs they returned (each thread redeems those it registered).
vault_runs() {
  [ "$VAULT" != 0 ] && [ "$1" != memory ] || return 0
  echo "== registration ($1): wrk, 2 threads, ${LOADTEST_CONNECTIONS:-16} connections, $TOKENS eProtect forms"
  rm -f "$WORK/ids.0" "$WORK/ids.1"
  local cpu_before; cpu_before=$(cpu_ticks "$SERVER_PID")
  local line; line=$(wrk_all_lines register "$WORK/forms.txt" "register-$1" /eProtect/paypage \
    PAYWARDEN_LOADTEST_IDS="$WORK/ids")
  line="$line cpu_us=$(cpu_per_request "$cpu_before" "$(cpu_ticks "$SERVER_PID")" "$(field "$line" registered)")"
  echo "$line"
  echo "RESULT register-$1 $line" >> "$WORK/results"
  cat "$WORK/ids.0" "$WORK/ids.1" > "$WORK/ids"
  [ -s "$WORK/ids.0" ] && [ -s "$WORK/ids.1" ] || { echo "a wrk thread registered nothing"; exit 1; }
  echo "== redemption ($1): wrk, 2 threads, ${LOADTEST_CONNECTIONS:-16} connections," \
    "$(wc -l < "$WORK/ids") IDs round-robin for $REDEEM_SECONDS s"
  [ -n "${LOADTEST_PERF:-}" ] && perf record -F 999 -g -p "$SERVER_PID" -o "$LOADTEST_PERF-redeem-$1" -- sleep 5 >/dev/null 2>&1 &
  cpu_before=$(cpu_ticks "$SERVER_PID")
  PAYWARDEN_LOADTEST_MODE=redeem PAYWARDEN_LOADTEST_LINES="$WORK/ids" PAYWARDEN_LOADTEST_KEY="$(cat "$WORK/vault-key")" \
    wrk -t2 -c${LOADTEST_CONNECTIONS:-16} -d${REDEEM_SECONDS}s --timeout 10s --latency -s scripts/loadtest.lua \
    "http://127.0.0.1:$PORT" > "$WORK/wrk-redeem-$1.txt" 2>&1 || true
  line=$(loadtest_line "redeem-$1")
  line="$line cpu_us=$(cpu_per_request "$cpu_before" "$(cpu_ticks "$SERVER_PID")" "$(field "$line" redeemed)")"
  echo "$line"
  echo "RESULT redeem-$1 $line" >> "$WORK/results"
}

# The relay on the running server: a cnpAPI authorization for each of the first LOADTEST_RELAYS
# registration IDs, once (a relayed registration is ended, so this comes after the redemptions).
relay_run() {
  [ "$VAULT" != 0 ] && [ "$1" != memory ] || return 0
  local half=$((RELAYS / 2))
  head -n "$half" "$WORK/ids.0" > "$WORK/relay-ids.0"
  head -n "$half" "$WORK/ids.1" > "$WORK/relay-ids.1"
  echo "== relay ($1): wrk, 2 threads, ${LOADTEST_CONNECTIONS:-16} connections, a cnpAPI authorization for each of" \
    "$(cat "$WORK/relay-ids.0" "$WORK/relay-ids.1" | wc -l) registration IDs, once, to the stand-in upstream (mutual TLS)"
  local cpu_before; cpu_before=$(cpu_ticks "$SERVER_PID")
  local upstream_before; upstream_before=$(cpu_ticks "$UPSTREAM_PID")
  local line; line=$(wrk_all_lines relay "$WORK/relay-ids" "relay-$1" /vap/communicator/online \
    PAYWARDEN_LOADTEST_KEY="$(cat "$WORK/vault-key")" PAYWARDEN_LOADTEST_USER=loadtest-vault PAYWARDEN_LOADTEST_MERCHANT="$RELAY_MERCHANT")
  local cpu; cpu=$(cpu_per_request "$cpu_before" "$(cpu_ticks "$SERVER_PID")" "$(field "$line" relayed)")
  # The stand-in upstream runs on the same two cores: its share bounds the relay's rate too.
  local upstream_cpu; upstream_cpu=$(cpu_per_request "$upstream_before" "$(cpu_ticks "$UPSTREAM_PID")" "$(field "$line" relayed)")
  echo "$line cpu_us=$cpu upstream_cpu_us=$upstream_cpu"
  echo "RESULT relay-$1 $line cpu_us=$cpu upstream_cpu_us=$upstream_cpu" >> "$WORK/results"
}

# The network HSM: the module is the fault-injecting one, forwarding to SoftHSM with the latency.
if [ "$NETWORK" != 0 ]; then
  echo "== network HSM: every PKCS#11 call ${NETWORK_LATENCY} µs late, $NETWORK_WORKERS HSM workers, memory:"
  PWFAULT_TARGET="$PAYWARDEN_PKCS11_MODULE" PAYWARDEN_PKCS11_MODULE="$BIN/libPaywardenFaultInjectingPKCS11.so" \
    PWFAULT_FAULTS="*=latency:$NETWORK_LATENCY" PAYWARDEN_HSM_WORKERS="$NETWORK_WORKERS" \
    LOADTEST_CONNECTIONS="$NETWORK_CONNECTIONS" phase1 network
  stop_server
fi
# Tracing on, every request sampled, exporting to a local collector: right after the memory run,
# its baseline, so that both see the same machine.
tracing_run() {
  [ "$TRACING" != 0 ] || return 0
  "$BIN/paywarden-bench" collector "$WORK" > "$WORK/collector.log" 2>&1 &
  COLLECTOR_PID=$!
  for _ in $(seq 1 100); do [ -s "$WORK/collector-url" ] && break; sleep 0.1; done
  [ -s "$WORK/collector-url" ] || { cat "$WORK/collector.log"; echo "the collector stand-in did not start"; exit 1; }
  PAYWARDEN_TRACING=on OTEL_EXPORTER_OTLP_TRACES_ENDPOINT="$(cat "$WORK/collector-url")" OTEL_TRACES_SAMPLER=always_on \
    phase1 tracing
  stop_server
  kill "$COLLECTOR_PID" 2>/dev/null || true; wait "$COLLECTOR_PID" 2>/dev/null || true; COLLECTOR_PID=""
  cat "$WORK/collector.log"
}
LAST_DB=${DATABASES##* }
for db in $DATABASES; do
  phase1 "$db"
  if [ "$db" = memory ]; then stop_server; tracing_run; continue; fi
  # The last database keeps its server for phase 2, which comes before its vault runs so that the
  # decrypt figures are measured on the same database as without them.
  if [ "$db" != "$LAST_DB" ]; then vault_runs "$db"; relay_run "$db"; stop_server; fi
done
baseline_run "${DATABASES%% *}"
peer_run
rate=$(value "$LAST_DB" rate)

HALF=$(awk -v r="$rate" 'BEGIN { printf "%d", r / 2 }')
echo "== phase 2 ($LAST_DB): open loop at $HALF tokens/s (half its maximum), $HALF_RUNS runs of $HALF_SECONDS s"
[ $((HALF * HALF_SECONDS)) -le "$HALF_TOKENS" ] ||
  echo "warning: $HALF_TOKENS tokens per run cover only $((HALF_TOKENS / HALF)) s at $HALF tokens/s"
HALF_LINES=""
for run in $(seq 1 "$HALF_RUNS"); do
  RUN_OUTPUT=$("$BIN/paywarden-bench" loadgen "http://127.0.0.1:$PORT/v1/payment-tokens/decrypt" "$WORK/api-key" \
    "$WORK/tokens-$((run + 1)).jsonl" "$HALF" "$HALF_SECONDS")
  echo "$RUN_OUTPUT"
  HALF_LINES="$HALF_LINES$(echo "$RUN_OUTPUT" | grep "^open loop")"$'\n'
done
# The median p99 of open-loop lines (of an even count, the mean of the middle two), and their errors.
median_p99() {
  echo "$1" | sed -n 's/.*p99 \([0-9.]*\) ms.*/\1/p' | sort -n |
    awk '{ v[NR] = $1 } END { if (NR % 2) print v[(NR + 1) / 2]; else printf "%.2f\n", (v[NR / 2] + v[NR / 2 + 1]) / 2 }'
}
errors_of() { echo "$1" | sed -n 's/.*errors \([0-9]*\).*/\1/p' | awk '{ n += $1 } END { print n + 0 }'; }
HALF_P99=$(median_p99 "$HALF_LINES")
HALF_ERRORS=$(errors_of "$HALF_LINES")

vault_runs "$LAST_DB"
if [ "$VAULT" != 0 ]; then
  REDEEM_HALF=$(awk -v r="$(value "redeem-$LAST_DB" rate)" 'BEGIN { printf "%d", r / 2 }')
  echo "== redemption half rate ($LAST_DB): open loop at $REDEEM_HALF redemptions/s, $HALF_RUNS runs of $HALF_SECONDS s"
  REDEEM_LINES=""
  for run in $(seq 1 "$HALF_RUNS"); do
    RUN_OUTPUT=$("$BIN/paywarden-bench" loadgen "http://127.0.0.1:$PORT/v1/registrations/{line}/redeem" "$WORK/vault-key" \
      "$WORK/ids" "$REDEEM_HALF" "$HALF_SECONDS")
    echo "$RUN_OUTPUT"
    REDEEM_LINES="$REDEEM_LINES$(echo "$RUN_OUTPUT" | grep "^open loop")"$'\n'
  done
  REDEEM_P99=$(median_p99 "$REDEEM_LINES")
  REDEEM_ERRORS=$(errors_of "$REDEEM_LINES")
  relay_run "$LAST_DB"
fi
stop_server
# The default database again with every HSM call on the worker threads (the dispatch before inline).
RUNS="$DATABASES"
if [ "$POOL" != 0 ]; then
  PAYWARDEN_HSM_DISPATCH=pool phase1 "$LAST_DB" "$LAST_DB-pool"
  vault_runs "$LAST_DB-pool"
  relay_run "$LAST_DB-pool"
  stop_server
  RUNS="$RUNS $LAST_DB-pool"
fi

echo
echo "== Paywarden load test (loopback, load generator on the same 2 cores), $TOKENS tokens per database"
printf "raw HSM ECDH:      %s derives/s (hsm-bench, 2 threads, same run)\n" "$RAW_RATE"
printf "engine:            %s tokens/s, %s µs CPU per token (EC_v1 in process, 2 workers, same run)\n" "$ENGINE_RATE" "$ENGINE_CPU"
MEMORY_RATE=$(value memory rate)
PEER_RATE=$(value peer rate 2>/dev/null || true)
if [ -n "$PEER_RATE" ]; then
  awk -v r="$PEER_RATE" -v p50="$(value peer p50)" -v p99="$(value peer p99)" -v e="$(value peer errors)" \
    -v c="$(value peer cpu_us)" 'BEGIN {
    printf "peer:         %6.0f tokens/s  p50 %5s ms  p99 %5s ms  errors %s  %.1f µs CPU per request", r, p50, p99, e, c
    printf " (PyPI applepay 0.3.0, uvicorn 2 workers: software key, no signature check, no replay ledger)\n" }'
fi
for db in $RUNS; do
  awk -v db="$db" -v r="$(value "$db" rate)" -v m="$MEMORY_RATE" -v raw="$RAW_RATE" -v p50="$(value "$db" p50)" \
    -v p99="$(value "$db" p99)" -v e="$(value "$db" errors)" -v a="$(value "$db" rss_before)" -v b="$(value "$db" rss_after)" \
    -v peer="${PEER_RATE:-0}" -v d="$(value "$db" dispatch)" -v mp99="$(value memory p99)" 'BEGIN {
    target = (db == "sqlite") ? " (target >= 0.50)" : ""
    mtarget = (db == "sqlite") ? " (target >= 0.85)" : (db == "postgres") ? " (target >= 0.70)" : ""
    printf "%-12s %6.0f tokens/s  p50 %5s ms  p99 %5s ms (%.1f x memory%s)  errors %s  %.2f of raw ECDH%s  %.2f of memory%s", \
      db ":", r, p50, p99, p99 / mp99, (db == "sqlite") ? ", target <= 2" : "", e, r / raw, target, r / m, mtarget
    if (peer > 0) printf "  %.2f of the peer%s", r / peer, (db == "sqlite") ? " (target >= 0.60)" : ""
    printf "  %s dispatch  RSS %d -> %d kB\n", d, a, b }'
done
if [ "$TRACING" != 0 ]; then
  awk -v r="$(value tracing rate)" -v m="$MEMORY_RATE" -v p50="$(value tracing p50)" -v p99="$(value tracing p99)" \
    -v e="$(value tracing errors)" -v c="$(value tracing cpu_us)" -v mc="$(value memory cpu_us)" 'BEGIN {
    printf "tracing: %8.0f tokens/s  p50 %5s ms  p99 %5s ms  errors %s  %.2f of memory (target >= 0.90; every request", \
      r, p50, p99, e, r / m
    printf " sampled, exported to a local collector), %.1f µs CPU per request, %.1f over tracing off\n", c, c - mc }'
fi
if [ "$NETWORK" != 0 ]; then
  awk -v r="$(value network rate)" -v m="$MEMORY_RATE" -v p50="$(value network p50)" -v p99="$(value network p99)" \
    -v e="$(value network errors)" -v w="$NETWORK_WORKERS" -v l="$NETWORK_LATENCY" -v c="$NETWORK_CONNECTIONS" 'BEGIN {
    f = "network: %8.0f tokens/s  p50 %5s ms  p99 %5s ms  errors %s  %.2f of memory (target >= 0.80; %d workers,"
    printf f " %d µs a call, %d connections)\n", r, p50, p99, e, r / m, w, l, c }'
fi
echo "== HTTP against the engine (server CPU from /proc over each run, per request)"
awk -v b="$(value baseline rate)" -v bc="$(value baseline cpu_us)" -v bytes="$(value baseline bytes)" 'BEGIN {
  printf "HTTP floor:        %8.0f requests/s  %6.1f µs CPU per request (static %d-byte body, same listener)\n", b, bc, bytes }'
for db in $RUNS; do
  awk -v db="$db" -v r="$(value "$db" rate)" -v c="$(value "$db" cpu_us)" -v er="$ENGINE_RATE" -v ec="$ENGINE_CPU" \
    -v bc="$(value baseline cpu_us)" -v mc="$(value memory cpu_us)" 'BEGIN {
    printf "%-12s %6.0f tokens/s = %.2f of the engine  %6.1f µs CPU per request, %.1f over the engine", \
      db ":", r, r / er, c, c - ec
    if (db == "memory") printf " (HTTP floor %.1f)", bc
    else printf ", %.1f over memory (the durable claim%s)", c - mc, (db == "sqlite") ? ", target <= 40" : ""
    printf "\n" }'
done
printf "half rate (%s): median p99 %s ms over %s runs of %s s at %s tokens/s (target <= 10 ms), errors %s\n" \
  "$LAST_DB" "$HALF_P99" "$HALF_RUNS" "$HALF_SECONDS" "$HALF" "$HALF_ERRORS"
[ "$VAULT" != 0 ] || exit 0
echo "== vault (eProtect registration of $TOKENS fresh tokens, then redemption of their IDs for $REDEEM_SECONDS s)"
for db in $RUNS; do
  [ "$db" != memory ] || continue
  awk -v db="$db" -v r="$(value "register-$db" rate)" -v d="$(value "$db" rate)" -v p50="$(value "register-$db" p50)" \
    -v p99="$(value "register-$db" p99)" -v e="$(value "register-$db" errors)" -v c="$(value "register-$db" cpu_us)" 'BEGIN {
    target = (db == "sqlite") ? " (target >= 0.80)" : ""
    printf "%-12s %6.0f registrations/s  p50 %5s ms  p99 %5s ms  errors %s  %.2f of decrypt%s  %.1f µs CPU per request\n",
      db ":", r, p50, p99, e, r / d, target, c }'
  awk -v db="$db" -v r="$(value "redeem-$db" rate)" -v d="$(value "$db" rate)" -v p50="$(value "redeem-$db" p50)" \
    -v p99="$(value "redeem-$db" p99)" -v e="$(value "redeem-$db" errors)" -v c="$(value "redeem-$db" cpu_us)" 'BEGIN {
    target = (db == "sqlite") ? " (target >= 0.80)" : ""
    printf "%-12s %6.0f redemptions/s    p50 %5s ms  p99 %5s ms  errors %s  %.2f of decrypt%s  %.1f µs CPU per request\n",
      db ":", r, p50, p99, e, r / d, target, c }'
  awk -v db="$db" -v r="$(value "relay-$db" rate)" -v d="$(value "$db" rate)" -v p50="$(value "relay-$db" p50)" \
    -v p99="$(value "relay-$db" p99)" -v e="$(value "relay-$db" errors)" -v c="$(value "relay-$db" cpu_us)" \
    -v u="$(value "relay-$db" upstream_cpu_us)" 'BEGIN {
    printf "%-12s %6.0f relayed auths/s  p50 %5s ms  p99 %5s ms  errors %s  %.2f of decrypt  %.1f µs CPU per request", \
      db ":", r, p50, p99, e, r / d, c
    printf " (+ %.1f µs in the stand-in upstream)\n", u }'
done
printf "half rate redemption (%s): median p99 %s ms over %s runs of %s s at %s redemptions/s (target <= 5 ms), errors %s\n" \
  "$LAST_DB" "$REDEEM_P99" "$HALF_RUNS" "$HALF_SECONDS" "$REDEEM_HALF" "$REDEEM_ERRORS"
