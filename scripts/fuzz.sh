#!/usr/bin/env bash
# `make fuzz`: every libFuzzer target for FUZZ_SECONDS (default 120) each, then per target the
# executions, executions/s, coverage (cov: edges, ft: features), corpus size and crashes.
#
# Targets (FUZZ_TARGETS, default all):
#   token          a payment token's JSON, then its signature, ephemeral key and signed content
#   signature      the BER reader and CMS SignedData, with the certificates and the signer
#   eprotect       an eProtect paypage form, then the token it assembles
#   processor-xml  the XML parser, cnpAPI, MercuryPay and Radial codecs and rewriters
#   key-file       the OpenSSL shim: PEM/DER keys, PKCS#12, OAEP decoding (C, clang)
# The Swift targets are built by SwiftPM with -sanitize=fuzzer,address into .build-fuzz (the
# harnesses exist only under PAYWARDEN_FUZZ=1); key-file by clang with the shim instrumented.
#
# Each run starts from the committed corpus (Fuzz/corpus/TARGET), the crash reproducers
# (Fuzz/regressions/TARGET) and seeds made for the run in .build-fuzz/seeds (ignored by git):
# tokens, signatures and forms forged by `paywarden-bench fuzz-seeds`, keys made by openssl, the
# processor fixtures, and the real vectors' tokens and keys from PAYWARDEN_VECTORS (default
# ../shared/vectors). What the run finds goes to .build-fuzz/work/TARGET; a crash's input to
# .build-fuzz/crashes/TARGET (emptied at the start of each run). An input to be committed under
# Fuzz/regressions/TARGET (FuzzCorpusTests replays it in `make test`) must not come from a real
# vector: re-find the crash with FUZZ_NO_VECTORS=1 or rebuild the input from a forged token.
#
# --update-corpus: runs from forged seeds only (no vectors) and replaces Fuzz/corpus/TARGET with
# the minimised merge (-merge=1) of it, the seeds and what the run found (the key-file seeds are
# throw-away keys openssl made for the run).
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH=/opt/swift/usr/bin:$PATH

SECONDS_PER_TARGET=${FUZZ_SECONDS:-120}
TARGETS=${FUZZ_TARGETS:-"token signature eprotect processor-xml key-file"}
VECTORS=${PAYWARDEN_VECTORS:-$PWD/../shared/vectors}
UPDATE=0
case "${1:-}" in
  "") ;;
  --update-corpus) UPDATE=1 ;;
  *) echo "usage: scripts/fuzz.sh [--update-corpus]" >&2; exit 2 ;;
esac
OUT=.build-fuzz
mkdir -p "$OUT"

swift_product() {
  case "$1" in
    token) echo FuzzToken ;; signature) echo FuzzSignature ;; eprotect) echo FuzzEProtect ;;
    processor-xml) echo FuzzProcessorXML ;; key-file) echo "" ;;
    *) echo "unknown fuzz target $1 (token, signature, eprotect, processor-xml, key-file)" >&2; exit 2 ;;
  esac
}

# --- build
for target in $TARGETS; do
  product=$(swift_product "$target")
  if [ -n "$product" ]; then
    PAYWARDEN_FUZZ=1 swift build -c release --scratch-path "$OUT" --product "$product" \
      -Xswiftc -sanitize=fuzzer,address -Xswiftc -parse-as-library -Xswiftc -g -Xswiftc -use-ld=lld
    cp "$OUT/release/$product" "$OUT/$target"
  else
    # shellcheck disable=SC2046 # pkg-config's flags are meant to split
    clang -fuse-ld=lld -g -O1 -fsanitize=fuzzer,address -Wall -Wno-deprecated-declarations \
      -I CModules/COpenSSLShim/include -I Fuzz/ShimFuzzing/include $(pkg-config --cflags libcrypto) \
      CModules/COpenSSLShim/copenssl_shim.c Fuzz/ShimFuzzing/shim_fuzzing.c Fuzz/Harnesses/key-file/fuzz_key_file.c \
      $(pkg-config --libs libcrypto) -lpthread -o "$OUT/key-file"
  fi
done

# --- seeds
rm -rf "$OUT/seeds"
mkdir -p "$OUT/seeds"
seed_vectors=()
if [ "$UPDATE" = 0 ] && [ -z "${FUZZ_NO_VECTORS:-}" ]; then
  if [ -f "$VECTORS/README.md" ]; then seed_vectors=("$VECTORS"); else echo "NOTE: no vectors at $VECTORS: forged seeds only"; fi
fi
selected() { case " $TARGETS " in *" $1 "*) return 0 ;; *) return 1 ;; esac; }
if selected token || selected signature || selected eprotect; then
  # PAYWARDEN_BENCH: a paywarden-bench already built (the debug one `make test` builds, say).
  bench=${PAYWARDEN_BENCH:-}
  if [ -z "$bench" ]; then
    swift build --product paywarden-bench
    bench=.build/debug/paywarden-bench
  fi
  "$bench" fuzz-seeds "$OUT/seeds" "${seed_vectors[@]}"
fi
mkdir -p "$OUT/seeds/processor-xml" "$OUT/seeds/key-file"
cp Tests/ProcessorMessagesTests/Fixtures/* "$OUT/seeds/processor-xml/"
selected key-file && (
  cd "$OUT/seeds/key-file"
  printf 'fuzz' > pass
  openssl genpkey -algorithm EC -pkeyopt ec_paramgen_curve:P-256 -out ec-pkcs8.pem 2>/dev/null
  openssl pkey -in ec-pkcs8.pem -outform DER -out ec-pkcs8.der
  openssl ec -in ec-pkcs8.pem -out ec-sec1.pem 2>/dev/null
  openssl ec -in ec-pkcs8.pem -outform DER -out ec-sec1.der 2>/dev/null
  openssl ecparam -name prime256v1 > ec-params-and-key.pem && cat ec-sec1.pem >> ec-params-and-key.pem
  openssl genrsa -out rsa-pkcs8.pem 2048 2>/dev/null
  openssl rsa -in rsa-pkcs8.pem -traditional -out rsa-pkcs1.pem 2>/dev/null
  openssl rsa -in rsa-pkcs8.pem -traditional -outform DER -out rsa-pkcs1.der 2>/dev/null
  openssl genpkey -algorithm ED25519 -out ed25519.pem 2>/dev/null
  openssl req -x509 -new -key ec-pkcs8.pem -subj /CN=fuzz -days 1 -out ec-cert.pem 2>/dev/null
  openssl req -x509 -new -key rsa-pkcs8.pem -subj /CN=fuzz -days 1 -out rsa-cert.pem 2>/dev/null
  openssl pkcs12 -export -inkey ec-pkcs8.pem -in ec-cert.pem -passout file:pass -out ec.p12
  openssl pkcs12 -export -inkey rsa-pkcs8.pem -in rsa-cert.pem -passout file:pass -out rsa.p12
  openssl pkcs12 -export -inkey ec-pkcs8.pem -in ec-cert.pem -passout pass: -out ec-empty.p12
  openssl pkcs12 -export -legacy -inkey rsa-pkcs8.pem -in rsa-cert.pem -passout file:pass -out rsa-legacy.p12 2>/dev/null || true
  openssl pkcs12 -export -inkey ec-pkcs8.pem -in ec-cert.pem -nomac -passout file:pass -out ec-nomac.p12
  rm -f pass ec-cert.pem rsa-cert.pem
)
if [ "${#seed_vectors[@]}" -gt 0 ] && selected key-file; then
  n=0
  for file in "$VECTORS"/*/merchant_key.pem "$VECTORS"/*/*.p12; do
    [ -f "$file" ] && cp "$file" "$OUT/seeds/key-file/vector-$((n += 1))"
  done
fi

# --- run
rm -rf "$OUT/logs" && mkdir -p "$OUT/logs"
summary=()
failed=0
for target in $TARGETS; do
  work=$OUT/work/$target
  crashes=$OUT/crashes/$target
  rm -rf "$work" "$crashes" && mkdir -p "$work" "$crashes" "Fuzz/corpus/$target"
  log=$OUT/logs/$target.log
  echo "== $target: ${SECONDS_PER_TARGET} s"
  regressions=()
  [ -d "Fuzz/regressions/$target" ] && regressions=("Fuzz/regressions/$target")
  # No per-input leak check: Swift's runtime and OpenSSL build process-lifetime caches on first
  # use of a path (OpenSSL's: 117 allocations, all "indirect", after any first input, a warm-up
  # input notwithstanding), which LeakSanitizer's per-input check reports as a leak.
  # -rss_limit_mb stops a leak that grows.
  set +e
  ASAN_OPTIONS=detect_leaks=0 "$OUT/$target" -max_total_time="$SECONDS_PER_TARGET" -timeout=10 -rss_limit_mb=2048 \
    -max_len=65536 -print_final_stats=1 -detect_leaks=0 -artifact_prefix="$crashes/" \
    "$work" "Fuzz/corpus/$target" "${regressions[@]}" "$OUT/seeds/$target" >"$log" 2>&1
  status=$?
  set -e
  done_line=$(grep -E '^#[0-9]+[[:space:]]+(DONE|pulse|NEW|REDUCE|INITED)' "$log" | tail -1 || true)
  execs=$(sed -n 's/^stat::number_of_executed_units: //p' "$log" | tail -1)
  rate=$(sed -n 's/^stat::average_exec_per_sec: //p' "$log" | tail -1)
  cov=$(sed -n 's/.* cov: \([0-9]*\).*/\1/p' <<<"$done_line")
  ft=$(sed -n 's/.* ft: \([0-9]*\).*/\1/p' <<<"$done_line")
  corpus=$(sed -n 's/.* corp: \([0-9]*\/[0-9a-zA-Z]*\).*/\1/p' <<<"$done_line")
  found=$(find "$crashes" -type f | wc -l)
  row=$(printf '%-14s %12s %8s %7s %7s %14s %8s' "$target" "${execs:-?}" "${rate:-?}" "${cov:-?}" "${ft:-?}" "${corpus:-?}" "$found")
  summary+=("$row")
  if [ "$status" -ne 0 ] || [ "$found" -ne 0 ]; then
    failed=1
    echo "  $target: exit $status, $found input(s) in $crashes; the log is $log"
    grep -E 'ERROR: |SUMMARY: |Test unit written' "$log" | head -5 | sed 's/^/    /'
  fi
  if [ "$UPDATE" = 1 ] && [ "$status" -eq 0 ]; then
    merged=$OUT/merged/$target
    rm -rf "$merged" && mkdir -p "$merged"
    if ASAN_OPTIONS=detect_leaks=0 "$OUT/$target" -merge=1 -max_len=65536 \
      "$merged" "Fuzz/corpus/$target" "$work" "$OUT/seeds/$target" >>"$log" 2>&1; then
      rm -rf "Fuzz/corpus/$target" && cp -r "$merged" "Fuzz/corpus/$target"
      echo "  corpus: $(find "Fuzz/corpus/$target" -type f | wc -l) inputs in Fuzz/corpus/$target"
    else
      failed=1
      echo "  $target: the merge failed (see $log); Fuzz/corpus/$target is unchanged"
    fi
  fi
done

echo
echo "libFuzzer, ${SECONDS_PER_TARGET} s per target (cov: edges covered; ft: features; corpus: inputs/bytes)"
printf '%-14s %12s %8s %7s %7s %14s %8s\n' target executions exec/s cov ft corpus crashes
printf '%s\n' "${summary[@]}"
exit $failed
