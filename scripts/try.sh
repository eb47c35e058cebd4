#!/usr/bin/env bash
# `make try`: the guided tour. Makes the development token and its sandbox if missing (a
# development PKI and a merchant it certified), sources the token's environment, and runs
# paywarden-tour, which uses the service at PAYWARDEN_LISTEN (`make run` in another shell) or
# starts one and stops it, and exits non-zero at the first answer that is not the documented one.
#   scripts/try.sh [BIN]: BIN is the directory of the built binaries (default .build/release).
#   BACKEND=nss: the token in NSS softokn instead of SoftHSM.
#   TRY_ISOLATED=1 (`make test`): a fresh PAYWARDEN_HOME in a temporary directory and a free
#   loopback port, removed at the end, so it never meets a developer's token or service.
set -euo pipefail
cd "$(dirname "$0")/.."
BIN=${1:-.build/release}
BACKEND=${BACKEND:-softhsm}

if [ "${TRY_ISOLATED:-0}" = 1 ]; then
  PAYWARDEN_HOME=$(mktemp -d "${TMPDIR:-/tmp}/paywarden-try.XXXXXX")
  trap 'rm -rf "$PAYWARDEN_HOME"' EXIT
  export PAYWARDEN_HOME
  # A loopback port nothing listens on (bash's /dev/tcp fails to connect there), below Linux's
  # ephemeral range (32768 and up), where the sandbox's stand-in ports come from.
  port=""
  for _ in $(seq 1 50); do
    candidate=$((20000 + RANDOM % 12000))
    if ! (exec 3<>"/dev/tcp/127.0.0.1/$candidate") 2>/dev/null; then port=$candidate; break; fi
  done
  [ -n "$port" ] || { echo "try: no free loopback port found between 20000 and 32000"; exit 1; }
  export PAYWARDEN_LISTEN="127.0.0.1:$port"
fi
export PAYWARDEN_HOME=${PAYWARDEN_HOME:-$PWD/Keys}

"$BIN/paywarden" dev-hsm init --backend "$BACKEND" >/dev/null
set -a; . "$PAYWARDEN_HOME/$BACKEND/env"; set +a
"$BIN/paywarden" dev-hsm sandbox --backend "$BACKEND" | sed 's/^/sandbox: /'
set -a; . "$PAYWARDEN_HOME/$BACKEND/env"; set +a
# Not exec: with TRY_ISOLATED the EXIT trap removes the temporary home once the tour ends.
"$BIN/paywarden-tour" --backend "$BACKEND" --paywarden "$BIN/paywarden"
