#!/usr/bin/env bash
# `make image-test`: runs the image (`make image`) with podman against a SoftHSM development token and
# a SQLite database in a volume, and checks what an operator would: /readyz answers 200, a decrypt
# answers 200 with card data, the service runs as uid 10001 with nothing of the build toolchain
# beside it, an admin command works in it, SIGTERM stops it with status 0, and the image stays within IMAGE_SIZE_LIMIT_MB.
#   scripts/image-test.sh [BINARY]   BINARY: the release binary on the host (default
#   .build/release/paywarden), which makes the token, its sandbox merchant and a sample token outside
#   the container, as `make run` does.
#   IMAGE (default localhost/paywarden:latest), IMAGE_SIZE_LIMIT_MB (default 230).
# The container and the temporary home are removed at the end; the image is kept.
set -euo pipefail
cd "$(dirname "$0")/.."
BINARY=${1:-.build/release/paywarden}
IMAGE=${IMAGE:-localhost/paywarden:latest}
IMAGE_SIZE_LIMIT_MB=${IMAGE_SIZE_LIMIT_MB:-230}
STATE=/var/lib/paywarden
IMAGE_UID=10001
# This machine refuses raised rlimits and crun's cgroup handling: these flags are for hosts like it,
# not part of the image (a production host runs it with plain `podman run` or under Kubernetes).
PODMAN=(podman --storage-driver vfs --runtime runc --cgroup-manager cgroupfs)
RUN_FLAGS=(--ulimit nofile=1024:4096 --ulimit nproc=1024:4096)

fail() { echo "image-test: FAILED: $*" >&2; exit 1; }
for tool in podman curl python3; do command -v "$tool" >/dev/null || fail "$tool is missing"; done
"${PODMAN[@]}" image exists "$IMAGE" || fail "no image $IMAGE: run make image"

work=$(mktemp -d "${TMPDIR:-/tmp}/paywarden-image-test.XXXXXX")
container=paywarden-image-test-$$
cleanup() {
  if "${PODMAN[@]}" container exists "$container" 2>/dev/null; then
    [ "${keep_logs:-0}" = 1 ] && "${PODMAN[@]}" logs "$container" 2>&1 | tail -30 | sed 's/^/container: /' >&2
    "${PODMAN[@]}" rm -f -t 0 "$container" >/dev/null 2>&1 || true
  fi
  rm -rf "$work"
}
trap cleanup EXIT
keep_logs=1

# The development token and its sandbox merchant, made on the host with the product's own commands.
home=$work/home
export PAYWARDEN_HOME=$home
"$BINARY" dev-hsm init --backend softhsm >/dev/null
set -a; . "$home/softhsm/env"; set +a
"$BINARY" dev-hsm sandbox --backend softhsm >/dev/null
set -a; . "$home/softhsm/env"; set +a

# The container sees the home at its state directory: the same settings with the paths moved there,
# and a SoftHSM configuration whose token directory is the mounted one.
sed "s|$home|$STATE|g" "$home/softhsm/softhsm2.conf" >"$home/softhsm/softhsm2-container.conf"
sed -e 's/^export //' -e "s|$home|$STATE|g" -e "s/^\([A-Z0-9_]*\)='\(.*\)'$/\1=\2/" "$home/softhsm/env" \
  | grep -v -e '^PAYWARDEN_HOME=' -e '^SOFTHSM2_CONF=' >"$work/container.env"
echo "SOFTHSM2_CONF=$STATE/softhsm/softhsm2-container.conf" >>"$work/container.env"

# A sample token for the sandbox merchant, made now: the files are the container user's from here on,
# and the product refuses secret files of another user.
"$BINARY" dev-hsm sample-token --merchant-id merchant.com.example.sandbox >"$work/token.json"
cp "$home/softhsm/dev-api-key.header" "$work/api-key.header"
chown -R "$IMAGE_UID:$IMAGE_UID" "$home"

# A loopback port nothing listens on, published to the container's 8080.
port=""
for _ in $(seq 1 50); do
  candidate=$((20000 + RANDOM % 12000))
  if ! (exec 3<>"/dev/tcp/127.0.0.1/$candidate") 2>/dev/null; then port=$candidate; break; fi
done
[ -n "$port" ] || fail "no free loopback port between 20000 and 32000"

"${PODMAN[@]}" run -d --name "$container" "${RUN_FLAGS[@]}" \
  --env-file "$work/container.env" -v "$home:$STATE" -p "127.0.0.1:$port:8080" "$IMAGE" >/dev/null
base=http://127.0.0.1:$port

started=$(date +%s)
status=000
while [ $(( $(date +%s) - started )) -lt 120 ]; do
  status=$(curl -s -o /dev/null -w '%{http_code}' "$base/readyz" || true)
  [ "$status" = 200 ] && break
  [ "$("${PODMAN[@]}" inspect --format '{{.State.Running}}' "$container")" = true ] || fail "the container stopped before it was ready"
  sleep 1
done
[ "$status" = 200 ] || fail "/readyz answered $status after 120 s"
echo "image-test: ready: /readyz 200 after $(( $(date +%s) - started )) s"

uid=$("${PODMAN[@]}" exec "$container" id -u)
[ "$uid" = "$IMAGE_UID" ] || fail "the service runs as uid $uid, not $IMAGE_UID"
toolchain_probe='for t in gcc cc ld swift swiftc apt-get; do command -v $t >/dev/null && echo $t; done
  find /var/lib/apt/lists /var/cache/apt -type f 2>/dev/null; ls -d /opt/swift 2>/dev/null; true'
"${PODMAN[@]}" exec "$container" /bin/sh -c "$toolchain_probe" >"$work/toolchain" 2>&1
# apt-get stays (a derived image may install a vendor's HSM client); its lists and caches do not.
if grep -v -x apt-get "$work/toolchain" | grep -q .; then fail "found in the image: $(xargs <"$work/toolchain")"; fi
echo "image-test: runs as uid $uid; no compiler, linker, Swift toolchain or apt lists inside"
"${PODMAN[@]}" exec "$container" paywarden keys list >"$work/keys" 2>&1 \
  || fail "keys list in the container: $(head -3 "$work/keys")"
grep -q merchant.com.example.sandbox "$work/keys" || fail "keys list in the container does not show the sandbox merchant"
echo "image-test: paywarden keys list in the container: $(grep -c merchant.com.example.sandbox "$work/keys") keys of the sandbox merchant"

status=$(curl -s -o "$work/decrypt.json" -w '%{http_code}' -H @"$work/api-key.header" \
  -H 'Content-Type: application/json' --data @"$work/token.json" "$base/v1/payment-tokens/decrypt")
[ "$status" = 200 ] || fail "decrypt answered $status: $(head -c 300 "$work/decrypt.json")"
card=$(python3 -c '
import json, sys
d = json.load(open(sys.argv[1]))["paymentData"]
pan, expiry = d["applicationPrimaryAccountNumber"], d["applicationExpirationDate"]
assert pan.isdigit() and 12 <= len(pan) <= 19 and len(expiry) == 6, "no card data"
print("account number ending", pan[-4:] + ",", "expiry", expiry)' "$work/decrypt.json") \
  || fail "decrypt answered 200 without card data"
echo "image-test: decrypt: 200, $card"
[ -s "$home/paywarden.sqlite" ] || fail "no SQLite database in the volume"

stop_started=$(date +%s)
"${PODMAN[@]}" stop -t 60 "$container" >/dev/null
exit_code=$("${PODMAN[@]}" inspect --format '{{.State.ExitCode}}' "$container")
[ "$exit_code" = 0 ] || fail "after SIGTERM the service exited $exit_code"
echo "image-test: SIGTERM: exited 0 after $(( $(date +%s) - stop_started )) s"
keep_logs=0

size=$("${PODMAN[@]}" image inspect --format '{{.Size}}' "$IMAGE")
size_mb=$(( size / 1000000 ))
[ "$size_mb" -le "$IMAGE_SIZE_LIMIT_MB" ] || fail "the image is $size_mb MB, over the $IMAGE_SIZE_LIMIT_MB MB bound"
echo "image-test: image $IMAGE: $size_mb MB ($size bytes), within $IMAGE_SIZE_LIMIT_MB MB"
echo "image-test: passed"
