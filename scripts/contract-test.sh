#!/usr/bin/env bash
# `make test`'s contract test: schemathesis generates requests from openapi.json and sends them to
# a real `paywarden serve` (the debug build `swift build --build-tests` made) on a fresh SoftHSM
# token, and fails on any 5xx or any response the document does not describe (status, body
# schema, content type, headers), and on a protected route that answers without credentials. It
# fails as well on schemathesis' "Schema validation mismatch" warning (validation_mismatch, made a
# failure by `warnings.fail-on` below): an operation whose requests, valid by the document, were all
# refused, a tenth or more of the refusals with a 4xx other than 401/403/404/409/429, has a document
# looser than its server (a client that validates against it is still refused). The operations in
# EXEMPT below are left out of that one check: the server refuses their valid requests for reasons
# OpenAPI cannot state, listed there.
#   Every request carries an API key with every scope and an organisation that has a paypage for
#   the certified merchant key, so generated bodies get past authentication to the parsers; the
#   vault routes' {id} and {token} are half of the time live ones (registered below). The relay
#   upstreams are configured, bound to that organisation, at a loopback port nothing listens on,
#   and so is Apple's gateway: a generated relay message or Apple call names no live registration,
#   token or merchant identity, so none gets that far (one that did would be answered 503 and fail
#   the run). Notifications are allowed from loopback. Usage information is on (a public URL), so
#   its documents reach the validator rather than being refused whole.
#   CONTRACT_MAX_EXAMPLES (default 100) cases per operation and phase, CONTRACT_SEED (default 14):
#   the same seed generates the same requests. CONTRACT_BIN: the directory of the built binaries;
#   CONTRACT_DOCUMENT: another document (to see the checks fail); CONTRACT_CHECKS: other checks;
#   CONTRACT_KEEP_REPORT: a path to keep the JUnit report at.
#   schemathesis is installed (pinned) into a virtualenv under .build on first use.
set -euo pipefail
umask 077   # the work directory holds an API key
cd "$(dirname "$0")/.."
SCHEMATHESIS_VERSION=4.32.5
VENV=.build/schemathesis-venv
BIN=${CONTRACT_BIN:-.build/debug}
MAX_EXAMPLES=${CONTRACT_MAX_EXAMPLES:-100}
SEED=${CONTRACT_SEED:-14}
ORGANIZATION=contract
PAYPAGE=contractPaypage

if [ "$("$VENV/bin/schemathesis" --version 2>/dev/null)" != "schemathesis, version $SCHEMATHESIS_VERSION" ]; then
  rm -rf "$VENV"
  # Debian's python3 makes virtualenvs only with python3-venv (ensurepip) installed.
  if ! python3 -m venv "$VENV" >/dev/null 2>&1; then
    rm -rf "$VENV"
    echo "installing Debian packages: python3 python3-venv"
    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq python3 python3-venv >/dev/null
    python3 -m venv "$VENV"
  fi
  "$VENV/bin/pip" install -q --disable-pip-version-check "schemathesis==$SCHEMATHESIS_VERSION"
fi

WORK=$(mktemp -d "${TMPDIR:-/tmp}/paywarden-contract.XXXXXX")
SERVER_PID=""
cleanup() {
  if [ -n "$SERVER_PID" ]; then kill "$SERVER_PID" 2>/dev/null || true; wait "$SERVER_PID" 2>/dev/null || true; fi
  rm -rf "$WORK"
}
trap cleanup EXIT
PYTHON="$VENV/bin/python"
free_port() { "$PYTHON" -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }
ready() { "$PYTHON" -c 'import sys, urllib.request; urllib.request.urlopen(sys.argv[1], timeout=5)' "$1" >/dev/null 2>&1; }

export PAYWARDEN_HOME="$WORK/home"
"$BIN/paywarden" dev-hsm init --token-label contract >/dev/null
set -a; . "$PAYWARDEN_HOME/softhsm/env"; set +a
# A test PKI's root, a certified EC processing key, one forged token (unused here), and LIVE
# forged tokens as eProtect forms for the paypage, registered before the run (below).
LIVE=6
# The database first: the key's record goes where serve reads it.
export PAYWARDEN_DATABASE_URL="sqlite:$WORK/paywarden.sqlite"
"$BIN/paywarden-bench" loadtest-setup "$WORK" 1 --vault "$PAYPAGE" "$ORGANIZATION" "$LIVE" >/dev/null
export PAYWARDEN_TRUST_ROOTS="$WORK/root.pem"
"$BIN/paywarden" paypages create --paypage-id "$PAYPAGE" --organization "$ORGANIZATION" \
  --merchant-id "$(cat "$WORK/merchant-id")" > "$WORK/paypage.log" 2>&1 || { cat "$WORK/paypage.log"; exit 1; }

KEY="pw_$(head -c 32 /dev/urandom | base64 | tr '+/' '-_' | tr -d '=')"
SCOPES=decrypt+redeem+detokenize+session+merchant-tokens+platform
export PAYWARDEN_API_KEYS="contract:$(printf '%s' "$KEY" | sha256sum | cut -d' ' -f1):$SCOPES:$ORGANIZATION"
PORT=$(free_port)
NOBODY=$(free_port)   # nothing listens there: a call to a peer would be upstream_unavailable
export PAYWARDEN_LISTEN="127.0.0.1:$PORT"
export PAYWARDEN_APPLE_PAY_GATEWAY="https://localhost:$NOBODY"
export PAYWARDEN_MERCHANT_VALIDATION_HOSTS="localhost:$NOBODY"
export PAYWARDEN_RELAY_CNP_UPSTREAM="http://127.0.0.1:$NOBODY" PAYWARDEN_RELAY_CNP_MERCHANT_IDS="$ORGANIZATION=01234"
export PAYWARDEN_RELAY_MERCURYPAY_UPSTREAM="http://127.0.0.1:$NOBODY" PAYWARDEN_RELAY_MERCURYPAY_ORGANIZATIONS="$ORGANIZATION"
export PAYWARDEN_RELAY_MERCURYPAY_CRYPTOGRAM_FIELD=Cryptogram PAYWARDEN_RELAY_MERCURYPAY_ECI_FIELD=ECI
export PAYWARDEN_RELAY_RADIAL_UPSTREAM="http://127.0.0.1:$NOBODY" PAYWARDEN_RELAY_RADIAL_STORE_IDS="$ORGANIZATION=store1"
export PAYWARDEN_MERCHANT_TOKEN_ALLOWED_SOURCES="127.0.0.0/8"
export PAYWARDEN_PUBLIC_URL="http://127.0.0.1:$PORT"
# Web merchants: every limit is checked before the missing domain file or identity key refuses.
export PAYWARDEN_PLATFORM_INTEGRATOR_ID=platformintegrator.com.example.contract
export PAYWARDEN_EPROTECT_RATE_PER_PAYPAGE=1000000 PAYWARDEN_EPROTECT_RATE_PER_ADDRESS=1000000
export PAYWARDEN_LOG_LEVEL=warning
# No balancer in front: the server stops at once on SIGTERM, without the drain.
export PAYWARDEN_SHUTDOWN_DRAIN_SECONDS=0
"$BIN/paywarden" serve > "$WORK/server.log" 2>&1 &
SERVER_PID=$!
for _ in $(seq 1 150); do
  ready "http://127.0.0.1:$PORT/readyz" && break
  kill -0 "$SERVER_PID" 2>/dev/null || break
  sleep 0.2
done
ready "http://127.0.0.1:$PORT/readyz" || { cat "$WORK/server.log"; echo "contract test: server not ready"; exit 1; }

# Registers the forms and redeems the first half of the registrations for high-value tokens.
# Where a route takes an {id} or a {token}, schemathesis draws half of the values from these
# lists, so that redemption, detokenization and deletion answer 200 and 204 too (and 410 and 404
# once schemathesis itself has ended or deleted one).
PAYWARDEN_CONTRACT_KEY="$KEY" "$PYTHON" - "http://127.0.0.1:$PORT" "$WORK" <<'PYTHON'
import json, os, sys, urllib.request
base, work = sys.argv[1], sys.argv[2]
def post(path, body=b"", headers={}):
    request = urllib.request.Request(base + path, data=body, headers=headers, method="POST")
    with urllib.request.urlopen(request, timeout=30) as response:
        return json.load(response)
form = {"Content-Type": "application/x-www-form-urlencoded"}
ids = [post("/eProtect/paypage", line.rstrip(b"\n"), form)["paypageRegistrationId"] for line in open(work + "/forms.txt", "rb")]
bearer = {"Authorization": "Bearer " + os.environ["PAYWARDEN_CONTRACT_KEY"]}
tokens = [post("/v1/registrations/%s/redeem" % i, headers=bearer)["highValueToken"]["token"] for i in ids[: len(ids) // 2]]
# Schemathesis reads dictionaries in AFL's format: one quoted string a line.
open(work + "/registrations.txt", "w").write("".join('"%s"\n' % i for i in ids))
open(work + "/tokens.txt", "w").write("".join('"%s"\n' % t for t in tokens))
PYTHON
[ -s "$WORK/tokens.txt" ] || { tail -20 "$WORK/server.log"; echo "contract test: the live registrations failed"; exit 1; }

# Left out of the validation-mismatch failure (by operationId), as the server refuses their valid
# requests for reasons OpenAPI cannot state. decryptPaymentToken, radialDecryptBlob: a token is taken
# only when Apple's signature over its fields verifies, it is encrypted to a key of this service,
# signed within the window and new. radialWalletAuthorization: the same for its wallet; and its
# elements must come in one order, and Amount and PaymentAccountUniqueId carry an attribute beside
# their text, which OpenAPI 3.1's XML Object can state neither of. mercuryPaySaleByRecordNo,
# mercuryPayAuthorizeByRecordNo: the Paywarden-Submerchant header with TokenType OmniToken is refused
# (a stored token has no submerchant cryptograms), and OpenAPI cannot tie a header to a body member.
# publishMerchantTokenUsageInformation: the body's merchantTokenIdentifier must be the path's,
# expirationDate at most a year from now, a file part's filename one of the package's paths, and the
# body within max_body_bytes. Everything else about them is in the document, and checked as before.
EXEMPT=(decryptPaymentToken radialDecryptBlob radialWalletAuthorization mercuryPaySaleByRecordNo
  mercuryPayAuthorizeByRecordNo publishMerchantTokenUsageInformation)
echo "== contract test: schemathesis $SCHEMATHESIS_VERSION, openapi.json against paywarden serve," \
  "$MAX_EXAMPLES examples per operation, seed $SEED; a validation mismatch fails the run (exempt: ${EXEMPT[*]})"
status=0
# The key rides in a header, not argv of a long-lived process the machine's other users can read:
# schemathesis reads it from the environment through its configuration file.
cat > "$WORK/schemathesis.toml" <<TOML
[headers]
Authorization = "Bearer \${PAYWARDEN_CONTRACT_KEY}"

[dictionaries.registrations]
from-file = "$WORK/registrations.txt"

[dictionaries.tokens]
from-file = "$WORK/tokens.txt"

[parameters]
"path.id" = { dictionary = "registrations", probability = 0.5 }
"path.token" = { dictionary = "tokens", probability = 0.5 }

# Requests valid by the document that the server refuses: the document is looser than the server.
[warnings]
fail-on = ["validation_mismatch"]

# schemathesis weighs an operation's refusals only when its own list displays missing_test_data or
# validation_mismatch, so the exempt operations display every warning but those two.
[[operations]]
include-operation-id = [$(printf '"%s", ' "${EXEMPT[@]}" | sed 's/, $//')]
warnings = { display = ["missing_auth", "base_url_mismatch", "missing_deserializer", "unused_openapi_auth", "unsupported_regex", "method_not_allowed", "constants_extraction", "unmatched_filter", "unresolvable_reference", "rate_limited", "dictionary_mismatch", "timeout_units"] }
TOML
DOCUMENT=$(realpath "${CONTRACT_DOCUMENT:-openapi.json}")
VENV=$(realpath "$VENV")
# From the work directory: Hypothesis keeps its state in the current one.
cd "$WORK"
PAYWARDEN_CONTRACT_KEY="$KEY" "$VENV/bin/schemathesis" --config-file "$WORK/schemathesis.toml" run "$DOCUMENT" \
  --url "http://127.0.0.1:$PORT" \
  --checks ${CONTRACT_CHECKS:-not_a_server_error,status_code_conformance,content_type_conformance,response_headers_conformance,response_schema_conformance,ignored_auth} \
  --phases examples,coverage,fuzzing \
  --max-examples "$MAX_EXAMPLES" --seed "$SEED" --no-color \
  --workers 1 --request-timeout 30 --suppress-health-check all --generation-database none \
  --report junit --report-junit-path "$WORK/junit.xml" 2>&1 | tee "$WORK/schemathesis.log" || status=$?
if ! kill -0 "$SERVER_PID" 2>/dev/null; then
  echo "contract test: paywarden serve died"; tail -50 "$WORK/server.log"; exit 1
fi
[ -s "$WORK/junit.xml" ] || { echo "contract test: schemathesis did not run (exit $status)"; exit 1; }
[ -z "${CONTRACT_KEEP_REPORT:-}" ] || cp "$WORK/junit.xml" "$CONTRACT_KEEP_REPORT"
# One line a CI reads: the operations (JUnit test cases) that passed and failed.
"$VENV/bin/python" - "$WORK/junit.xml" <<'PYTHON' || true
import sys, xml.etree.ElementTree as tree
cases = list(tree.parse(sys.argv[1]).getroot().iter("testcase"))
failed = sum(1 for case in cases if case.find("failure") is not None or case.find("error") is not None)
print("contract: %d passed, %d failed" % (len(cases) - failed, failed))
PYTHON
# The warning's block names the operations: "Schema validation mismatch: N operations …", then "  - METHOD PATH".
MISMATCHED=$(awk '/^Schema validation mismatch: /{on=1; next} on && /^  - /{print; n++; next} on && n && /^[^ ]/{exit}' \
  "$WORK/schemathesis.log")
if [ -n "$MISMATCHED" ]; then
  echo "contract test: FAILED: $(basename "$DOCUMENT") allows requests these operations refuse (schemathesis'" \
    "validation_mismatch warning): put the server's rules for them into the document"
  echo "$MISMATCHED"
fi
if [ "$status" -ne 0 ]; then
  # A warning that fails the run makes schemathesis exit 1 as failures do; it says "Warnings fail the run".
  grep -q "Warnings fail the run" "$WORK/schemathesis.log" || echo "contract test: schemathesis reported failures (exit $status)"
  exit "$status"
fi
[ -z "$MISMATCHED" ] || exit 1
