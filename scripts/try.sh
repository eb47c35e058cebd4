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
  # A loopback port nothing listens on (bash's /dev/tcp fails to connect there).
  for _ in $(seq 1 50); do
    port=$((20000 + RANDOM % 40000))
    (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null || break
  done
  export PAYWARDEN_LISTEN="127.0.0.1:$port"
fi
export PAYWARDEN_HOME=${PAYWARDEN_HOME:-$PWD/Keys}

"$BIN/paywarden" dev-hsm init --backend "$BACKEND" >/dev/null
set -a; . "$PAYWARDEN_HOME/$BACKEND/env"; set +a
"$BIN/paywarden" dev-hsm sandbox --backend "$BACKEND" | sed 's/^/sandbox: /'
set -a; . "$PAYWARDEN_HOME/$BACKEND/env"; set +a
exec "$BIN/paywarden-tour" --backend "$BACKEND" --paywarden "$BIN/paywarden"
