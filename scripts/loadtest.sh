#!/usr/bin/env bash
# `make loadtest`, as docs/testing.md "Load test" describes: the service on a fresh SoftHSM token, loaded through
# loopback with unique forged tokens, beside the raw HSM, the engine in process, the HTTP floor and a peer, same run.
# This script sets up and starts processes; paywarden-bench measures (loadtest-raw, engine, loadtest-wrk, loadgen),
# records each run in WORK/results.json and reports the figures, their ratios and the goals (loadtest-report).
# Settings: DATABASE=sqlite|postgres|all and the LOADTEST_ variables below and in docs/testing.md; LOADTEST_BIN
# .build/debug checks this script, not figures; LOADTEST_METRICS=DIR keeps each server's /metrics, LOADTEST_RESULTS=FILE
# the runs' figures (JSON), LOADTEST_PERF=PREFIX a perf profile of each run.
set -euo pipefail
umask 077   # the work directory holds an API key, a database password and tokens
cd "$(dirname "$0")/.."
TOKENS=${LOADTEST_TOKENS:-300000}
DATABASE=${DATABASE:-sqlite}
case "$DATABASE" in sqlite | postgres) DATABASES="memory $DATABASE" ;; all) DATABASES="memory sqlite postgres" ;;
  *) echo "DATABASE must be sqlite, postgres or all"; exit 2 ;; esac
LAST_DB=${DATABASES##* }
HALF_SECONDS=${LOADTEST_HALF_SECONDS:-15} HALF_RUNS=${LOADTEST_HALF_RUNS:-3}   # the open-loop runs at half the maximum
[ "$HALF_RUNS" -ge 1 ] || { echo "LOADTEST_HALF_RUNS must be at least 1"; exit 2; }
VAULT=${LOADTEST_VAULT:-1} NETWORK=${LOADTEST_NETWORK:-1} POOL=${LOADTEST_POOL:-1} PEER=${LOADTEST_PEER:-1} TRACING=${LOADTEST_TRACING:-1}
PAYPAGE=loadtestPaypage ORGANIZATION=loadtest RELAY_MERCHANT=01234
BIN=${LOADTEST_BIN:-.build/release}
export HSM_BENCH=${HSM_BENCH:-.build/hsm-bench/hsm_bench}
WORK=$(mktemp -d "${TMPDIR:-/tmp}/paywarden-loadtest.XXXXXX")
PORT=${LOADTEST_PORT:-18443}; URL="http://127.0.0.1:$PORT"
SERVER_PID="" UPSTREAM_PID="" PG_BIN=""
cleanup() {   # the processes still running (jobs -p: never one stopped and reaped, whose PID may be another's now)
  for pid in $(jobs -p); do kill "$pid" 2>/dev/null || true; done; wait 2>/dev/null || true
  if [ -n "$PG_BIN" ]; then as_postgres "$PG_BIN/pg_ctl" -D "$WORK/pg/data" stop -m fast >/dev/null 2>&1 || true; fi
  rm -rf "$WORK"
}
as_postgres() { if [ "$(id -u)" = 0 ]; then runuser -u postgres -- "$@"; else "$@"; fi; }
trap cleanup EXIT
bench() { "$BIN/paywarden-bench" "$@"; }
# start NAME READY COMMAND…: COMMAND in the background (output in WORK/NAME.log) until READY succeeds; its PID in STARTED_PID.
start() {
  local name=$1 ready=$2; shift 2
  "$@" > "$WORK/$name.log" 2>&1 &
  STARTED_PID=$!
  for _ in $(seq 1 150); do eval "$ready" >/dev/null 2>&1 && return 0; sleep 0.2; done
  cat "$WORK/$name.log"; echo "$name did not start"; exit 1
}
stop() { kill "$1" 2>/dev/null || true; wait "$1" 2>/dev/null || true; }

export PAYWARDEN_HOME="$WORK/home"
"$BIN/paywarden" dev-hsm init --token-label loadtest >/dev/null
set -a; . "$PAYWARDEN_HOME/softhsm/env"; set +a
echo "== raw HSM (hsm-bench ECDH, 5 s, 2 threads), same run"
bash ../shared/tools/hsm-bench/setup-token.sh "$WORK/raw" >/dev/null
SOFTHSM2_CONF="$WORK/raw/softhsm2.conf" bench loadtest-raw "$WORK"
echo "== decryption engine in process (EC_v1, 2 workers, 5 s, a token of its own), same run"
bench engine 5 --record "$WORK" | grep '^ENGINE '
bench loadtest-note "$WORK" settings tokens="$TOKENS"

HALF_TOKENS=$(( 5000 * HALF_SECONDS ))
SETUP_ARGS=()   # the registrations need tokens of their own: the decrypt runs spent the others
[ "$PEER" = 0 ] || SETUP_ARGS=(--peer "$TOKENS")
[ "$VAULT" = 0 ] || SETUP_ARGS+=(--vault "$PAYPAGE" "$ORGANIZATION" "$TOKENS")
echo "== forging $TOKENS + $HALF_RUNS x $HALF_TOKENS unique EC_v1 tokens (and as many for the peer and as eProtect forms)"
bench loadtest-setup "$WORK" "$TOKENS" $(for _ in $(seq 1 "$HALF_RUNS"); do echo "$HALF_TOKENS"; done) "${SETUP_ARGS[@]}"
for lines in tokens-1.jsonl peer-tokens.jsonl forms.txt; do   # one file per wrk thread
  [ ! -f "$WORK/$lines" ] || awk -v w="$WORK/$lines" '{ print > (w "." (NR % 2)) }' "$WORK/$lines"; done

export PAYWARDEN_API_KEYS="$(cat "$WORK/api-entry")$([ "$VAULT" = 0 ] || echo ",$(cat "$WORK/vault-entry")")"
export PAYWARDEN_TRUST_ROOTS="$WORK/root.pem" PAYWARDEN_LOG_LEVEL=warning PAYWARDEN_LISTEN="127.0.0.1:$PORT"
# Forging takes minutes; with DATABASE=all the last registrations spend tokens forged most of an hour before.
export PAYWARDEN_SIGNING_TIME_WINDOW=7200
# No balancer in front: each server stops at once on SIGTERM, without the drain.
export PAYWARDEN_SHUTDOWN_DRAIN_SECONDS=0
# One client address for one paypage: the production limits would measure the rate limiter, not the vault.
export PAYWARDEN_EPROTECT_RATE_PER_PAYPAGE=1000000 PAYWARDEN_EPROTECT_RATE_PER_ADDRESS=1000000
export PAYWARDEN_MAX_CONNECTIONS_PER_CLIENT=100000
if [ "$VAULT" != 0 ]; then   # the relay's upstream: a stand-in processor engine, HTTPS with mutual TLS
  start upstream '[ -s "$WORK/upstream-url" ]' "$BIN/paywarden-bench" upstream "$WORK"
  UPSTREAM_PID=$STARTED_PID
  export PAYWARDEN_RELAY_CNP_UPSTREAM="$(cat "$WORK/upstream-url")" PAYWARDEN_RELAY_CNP_UPSTREAM_CA="$WORK/upstream-ca.pem"
  export PAYWARDEN_RELAY_CNP_UPSTREAM_CLIENT_CERTIFICATE="$WORK/upstream-client.pem"
  export PAYWARDEN_RELAY_CNP_UPSTREAM_CLIENT_KEY="$WORK/upstream-client.key"
  export PAYWARDEN_RELAY_CNP_MERCHANT_IDS="$ORGANIZATION=$RELAY_MERCHANT"
fi

# A local PostgreSQL like a deployed one (fsync on), as the unprivileged postgres user.
start_postgres() {
  PG_BIN=$(ls -d /usr/lib/postgresql/*/bin | sort -V | tail -1) PG_PORT=$((PORT + 1))
  mkdir -p "$WORK/pg" && chmod 711 "$WORK"   # the postgres user may pass through, not list or read
  head -c 18 /dev/urandom | base64 | tr -d '/+=' > "$WORK/pg-password"
  cp "$WORK/pg-password" "$WORK/pg/pwfile"
  if [ "$(id -u)" = 0 ]; then chown -R postgres "$WORK/pg"; fi
  as_postgres "$PG_BIN/initdb" -D "$WORK/pg/data" -U paywarden --pwfile "$WORK/pg/pwfile" --auth scram-sha-256 >/dev/null
  as_postgres "$PG_BIN/pg_ctl" -D "$WORK/pg/data" -l "$WORK/pg/log" -w start \
    -o "-p $PG_PORT -k $WORK/pg -c listen_addresses=127.0.0.1 -c max_connections=100" >/dev/null
}
# `paywarden serve` on a fresh database of the kind $1 (memory, sqlite or postgres), once ready; its log WORK/server-$2.log.
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
  if [ "$1" != memory ]; then   # the merchant key's record (loadtest-setup wrote it to the home's database)
    bench copy-key-records "$PAYWARDEN_HOME/paywarden.sqlite"
    # What an admin does before apps post tokens; before serve, which reads the vault keys at start.
    [ "$VAULT" = 0 ] || "$BIN/paywarden" paypages create --paypage-id "$PAYPAGE" --organization "$ORGANIZATION" \
      --merchant-id "$(cat "$WORK/merchant-id")" > "$WORK/paypage.log" 2>&1 || { cat "$WORK/paypage.log"; exit 1; }
  fi
  start "server-${2:-$1}" 'curl -sf "$URL/readyz"' "$BIN/paywarden" serve
  SERVER_PID=$STARTED_PID
}
stop_server() {
  [ -z "${LOADTEST_METRICS:-}" ] || curl -s "$URL/metrics" > "$LOADTEST_METRICS/metrics-$SERVER_PID.txt" || true
  stop "$SERVER_PID"
}
# measure RUN MODE LINES ARGUMENTS…: one wrk run against the server (paywarden-bench loadtest-wrk).
measure() {
  echo "== $1: wrk, 2 threads, ${LOADTEST_CONNECTIONS:-16} connections, $2"
  bench loadtest-wrk "$WORK" "$1" "$URL" "$2" "$3" --pid "$SERVER_PID" --server "${@:4}"
}
# Decrypts on a fresh database of the kind $1, the run named $2 (default $1).
decrypts() {
  start_server "$1" "${2:-$1}"
  measure "${2:-$1}" decrypt "$WORK/tokens-1.jsonl" --route /v1/payment-tokens/decrypt PAYWARDEN_LOADTEST_KEY="$(cat "$WORK/api-key")"
}
# The vault on the running server ($1 names the runs): registrations of fresh tokens, redemptions of
# the IDs they returned, round-robin; then a cnpAPI authorization for each of LOADTEST_RELAYS of them, once.
vault_runs() {
  [ "$VAULT" != 0 ] || return 0
  rm -f "$WORK/ids.0" "$WORK/ids.1"
  measure "register-$1" register "$WORK/forms.txt" --route /eProtect/paypage PAYWARDEN_LOADTEST_IDS="$WORK/ids"
  [ -s "$WORK/ids.0" ] && [ -s "$WORK/ids.1" ] || { echo "a wrk thread registered nothing"; exit 1; }
  cat "$WORK/ids.0" "$WORK/ids.1" > "$WORK/ids"
  measure "redeem-$1" redeem "$WORK/ids" --seconds "${LOADTEST_REDEEM_SECONDS:-15}" PAYWARDEN_LOADTEST_KEY="$(cat "$WORK/vault-key")"
  [ "$1" != "$LAST_DB" ] || half_rate redeem-half "redeem-$1" "$URL/v1/registrations/{line}/redeem" "$WORK/vault-key" "$WORK/ids"
  for half in 0 1; do head -n "$(( ${LOADTEST_RELAYS:-20000} / 2 ))" "$WORK/ids.$half" > "$WORK/relay-ids.$half"; done
  measure "relay-$1" relay "$WORK/relay-ids" --route /vap/communicator/online --upstream-pid "$UPSTREAM_PID" \
    PAYWARDEN_LOADTEST_KEY="$(cat "$WORK/vault-key")" PAYWARDEN_LOADTEST_USER=loadtest-vault PAYWARDEN_LOADTEST_MERCHANT="$RELAY_MERCHANT"
}
# half_rate RUN BASELINE URL KEYFILE LINES: the open-loop generator at half the run BASELINE's rate, LOADTEST_HALF_RUNS
# times (LINES' {run} is the run's number + 1: tokens-2.jsonl…, forged for these runs).
half_rate() {
  local rate; rate=$(( $(bench loadtest-value "$WORK" "$2" rate) / 2 ))
  echo "== $1 ($LAST_DB): open loop at $rate/s (half the maximum), $HALF_RUNS runs of $HALF_SECONDS s"
  for run in $(seq 1 "$HALF_RUNS"); do
    bench loadgen "$3" "$4" "${5/\{run\}/$((run + 1))}" "$rate" "$HALF_SECONDS" --record "$WORK" "$1-$run"
  done
}

if [ "$NETWORK" != 0 ]; then   # an HSM across a network: the fault-injecting module in front of SoftHSM
  PWFAULT_TARGET="$PAYWARDEN_PKCS11_MODULE" PAYWARDEN_PKCS11_MODULE="$BIN/libPaywardenFaultInjectingPKCS11.so" \
    PWFAULT_FAULTS="*=latency:${LOADTEST_HSM_LATENCY_US:-1000}" PAYWARDEN_HSM_WORKERS="${LOADTEST_HSM_WORKERS:-48}" \
    LOADTEST_CONNECTIONS="${LOADTEST_NETWORK_CONNECTIONS:-128}" decrypts memory network
  bench loadtest-note "$WORK" network latency_us="${LOADTEST_HSM_LATENCY_US:-1000}" workers="${LOADTEST_HSM_WORKERS:-48}" \
    connections="${LOADTEST_NETWORK_CONNECTIONS:-128}"
  stop_server
fi
for db in $DATABASES; do
  decrypts "$db"
  [ "$db" != "$LAST_DB" ] || break   # the last keeps its server for the half-rate runs
  [ "$db" = memory ] || vault_runs "$db"
  stop_server
  if [ "$db" = memory ] && [ "$TRACING" != 0 ]; then   # right after its baseline, every span to a local collector
    start collector '[ -s "$WORK/collector-url" ]' "$BIN/paywarden-bench" collector "$WORK"; COLLECTOR_PID=$STARTED_PID
    PAYWARDEN_TRACING=on OTEL_EXPORTER_OTLP_TRACES_ENDPOINT="$(cat "$WORK/collector-url")" OTEL_TRACES_SAMPLER=always_on \
      decrypts memory tracing
    stop_server; stop "$COLLECTOR_PID"; cat "$WORK/collector.log"
  fi
done
echo "== HTTP floor: the same listener answering a static body of the decrypt response's size"   # the last server idle
start baseline 'curl -sf -o /dev/null -X POST "http://127.0.0.1:$((PORT + 2))/ready"' \
  env PAYWARDEN_LISTEN="127.0.0.1:$((PORT + 2))" "$BIN/paywarden-bench" http-baseline "$(bench loadtest-value "$WORK" memory bytes)"
bench loadtest-wrk "$WORK" baseline "http://127.0.0.1:$((PORT + 2))" baseline "$WORK/tokens-1.jsonl" \
  --seconds "${LOADTEST_BASELINE_SECONDS:-10}" --pid "$STARTED_PID"
stop "$STARTED_PID"
if [ "$PEER" != 0 ]; then   # the PyPI applepay library behind Starlette on uvicorn, on its own tokens
  echo "== peer: the PyPI applepay library on uvicorn (2 workers, httptools, uvloop), wrk as for decrypts"
  python3 -m venv "$WORK/peer-venv"; "$WORK/peer-venv/bin/pip" install -q --disable-pip-version-check \
    applepay==0.3.0 cryptography==50.0.2 starlette==1.10.0 uvicorn==0.54.0 httptools==0.9.0 uvloop==0.23.0
  start peer 'curl -sf "http://127.0.0.1:$((PORT + 3))/ready"' env PEER_CERTIFICATE="$WORK/peer-certificate.pem" \
    PEER_KEY="$WORK/peer-key.pem" PEER_ROOT_DER="$WORK/root.der" "$WORK/peer-venv/bin/uvicorn" applepay_peer:app \
    --app-dir scripts --host 127.0.0.1 --port $((PORT + 3)) --workers 2 --http httptools --loop uvloop --log-level warning --no-access-log
  bench loadtest-wrk "$WORK" peer "http://127.0.0.1:$((PORT + 3))" decrypt "$WORK/peer-tokens.jsonl" --idle --pid "$STARTED_PID" \
    PAYWARDEN_LOADTEST_KEY=none
  stop "$STARTED_PID"
fi
half_rate half "$LAST_DB" "$URL/v1/payment-tokens/decrypt" "$WORK/api-key" "$WORK/tokens-{run}.jsonl"
vault_runs "$LAST_DB"
stop_server
if [ "$POOL" != 0 ]; then   # every HSM call on the worker threads, the dispatch before inline
  PAYWARDEN_HSM_DISPATCH=pool decrypts "$LAST_DB" "$LAST_DB-pool"
  vault_runs "$LAST_DB-pool"
  stop_server
fi
bench loadtest-report "$WORK"
[ -z "${LOADTEST_RESULTS:-}" ] || cp "$WORK/results.json" "$LOADTEST_RESULTS"
