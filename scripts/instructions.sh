#!/usr/bin/env bash
# Instructions per EC_v1 decryption in process, every verification step and the SoftHSM derive
# included, counted by callgrind: a figure that, unlike time, does not move with the load of a
# shared machine. Usage: scripts/instructions.sh [BIN] [TOKENS] (defaults .build/release, 2000).
# Forging runs uninstrumented; counting starts when the engine says it is measuring.
set -euo pipefail
cd "$(dirname "$0")/.."
BIN=${1:-.build/release}
TOKENS=${2:-2000}
command -v valgrind >/dev/null || { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq valgrind >/dev/null; }
WORK=$(mktemp -d "${TMPDIR:-/tmp}/paywarden-instructions.XXXXXX")
trap 'rm -rf "$WORK"' EXIT
ENGINE_TOKENS=$TOKENS valgrind --tool=callgrind --instr-atstart=no --callgrind-out-file="$WORK/callgrind.out" \
  "$BIN/paywarden-bench" engine 3600 > "$WORK/out" 2> "$WORK/err" &
PID=$!
until grep -q "measuring" "$WORK/err" 2>/dev/null; do
  kill -0 "$PID" 2>/dev/null || { cat "$WORK/err"; exit 1; }
  sleep 1
done
callgrind_control -i on "$PID" >/dev/null
wait "$PID"
DONE=$(sed -n 's/.* tokens=\([0-9]*\).*/\1/p' "$WORK/out")
TOTAL=$(callgrind_annotate "$WORK/callgrind.out" 2>/dev/null | awk '/PROGRAM TOTALS/ { gsub(",", "", $1); print $1 }')
awk -v t="$TOTAL" -v n="$DONE" 'BEGIN { printf "instructions per EC_v1 decryption: %.0f (%d tokens, callgrind)\n", t / n, n }'
if [ -n "${INSTRUCTIONS_TOP:-}" ]; then
  callgrind_annotate --inclusive=yes "$WORK/callgrind.out" 2>/dev/null | head -n "$INSTRUCTIONS_TOP"
fi
