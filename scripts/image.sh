#!/usr/bin/env bash
# `make image`: an OCI image of the service, built from Debian's packages (no registry needed).
#   scripts/image.sh [BINARY]   BINARY: the release binary (default .build/release/paywarden)
#   IMAGE_NAME (default localhost/paywarden): tagged :<git short hash> and :latest.
#   DEBIAN_MIRROR (default http://deb.debian.org/debian).
#
# The root file system is Debian bookworm's minbase with the packages deploy/image/packages lists, a
# user paywarden (uid and gid 10001) and nothing of apt's lists, caches, docs or locales; it is kept
# under .build/image/ and made again only when that list changes. The image adds the stripped binary
# and the Swift runtime libraries it links (those `ldd` names, from the toolchain), and is committed
# only when one of its inputs changed since the last image of that name. Run as root (debootstrap,
# buildah's vfs storage).
set -euo pipefail
cd "$(dirname "$0")/.."
BINARY=${1:-.build/release/paywarden}
IMAGE_NAME=${IMAGE_NAME:-localhost/paywarden}
DEBIAN_MIRROR=${DEBIAN_MIRROR:-http://deb.debian.org/debian}
SUITE=bookworm
IMAGE_UID=10001
STATE=/var/lib/paywarden
WORK=.build/image
BUILDAH=(buildah --storage-driver vfs)

fail() { echo "image: $*" >&2; exit 1; }
[ "$(id -u)" = 0 ] || fail "run as root (debootstrap and buildah's storage need it)"
[ -x "$BINARY" ] || fail "no binary at $BINARY: build it first (swift build -c release --product paywarden)"
for tool in debootstrap buildah ldd strip sha256sum; do
  command -v "$tool" >/dev/null || fail "$tool is missing (make image installs debootstrap and buildah)"
done
wait_quiet() { while [ -e /tmp/paywarden-quiet ]; do sleep 15; done; }
mkdir -p "$WORK"

# --- The root file system, cached by the package list (and this recipe's version).
packages=$(sed -e 's/#.*//' deploy/image/packages | xargs)
rootfs_key=$( { echo "recipe 1 $SUITE $IMAGE_UID"; echo "$packages"; } | sha256sum | cut -c1-16)
rootfs=$WORK/rootfs-$rootfs_key
if [ ! -d "$rootfs" ]; then
  echo "image: debootstrap $SUITE (minbase) with: $packages"
  rm -rf "$WORK"/rootfs-* "$WORK"/rootfs.tmp
  wait_quiet
  debootstrap --variant=minbase --include="${packages// /,}" "$SUITE" "$WORK/rootfs.tmp" "$DEBIAN_MIRROR" \
    >"$WORK/debootstrap.log" 2>&1 || { tail -20 "$WORK/debootstrap.log" >&2; fail "debootstrap failed (log: $WORK/debootstrap.log)"; }
  r=$WORK/rootfs.tmp
  chroot "$r" groupadd --gid "$IMAGE_UID" paywarden
  chroot "$r" useradd --uid "$IMAGE_UID" --gid "$IMAGE_UID" --home-dir "$STATE" --no-create-home \
    --shell /usr/sbin/nologin paywarden
  install -d -m 0700 -o "$IMAGE_UID" -g "$IMAGE_UID" "$r$STATE"
  # Nothing apt fetched or cached, no documentation but the licences, no locales or logs.
  rm -rf "$r"/var/lib/apt/lists/* "$r"/var/cache/apt/* "$r"/var/cache/debconf/*-old "$r"/var/log/* \
    "$r"/usr/share/man "$r"/usr/share/info "$r"/usr/share/locale "$r"/usr/share/lintian "$r"/tmp/* "$r"/debootstrap
  find "$r"/usr/share/doc -mindepth 1 -not -name copyright -not -type d -delete
  find "$r"/usr/share/doc -mindepth 1 -type d -empty -delete
  mv "$r" "$rootfs"
fi

# --- What the image adds: the stripped binary and the Swift runtime libraries it links.
payload=$WORK/payload
rm -rf "$payload"
install -d "$payload/usr/local/bin" "$payload/usr/lib/swift/linux" "$payload/etc/ld.so.conf.d"
strip -o "$payload/usr/local/bin/paywarden" "$BINARY"
swift_libraries=$(ldd "$BINARY" | awk '$3 ~ /\/usr\/lib\/swift\// {print $3}')
static_note="linked against the toolchain's Swift runtime"
if [ -z "$swift_libraries" ]; then static_note="no Swift runtime library linked (--static-swift-stdlib)"; fi
for library in $swift_libraries; do
  strip --strip-unneeded -o "$payload/usr/lib/swift/linux/$(basename "$library")" "$library"
done
install -m 0644 deploy/image/swift-runtime.conf "$payload/etc/ld.so.conf.d/swift-runtime.conf"
echo "image: binary $(du -h "$payload/usr/local/bin/paywarden" | cut -f1) stripped; $static_note:" \
  "$(echo "$swift_libraries" | xargs -rn1 basename | xargs) ($(du -sh "$payload/usr/lib/swift/linux" | cut -f1))"

# --- Commit only when an input changed: the digest of the root file system's key, the payload and
# this recipe is the image's annotation (an unchanged image keeps the revision annotation of the
# commit that built it, and gets the current one's tag).
inputs=$( { echo "$rootfs_key"; (cd "$payload" && find . -type f | LC_ALL=C sort | xargs sha256sum);
  sha256sum scripts/image.sh deploy/image/*; } | sha256sum | cut -c1-32)
revision=$(git rev-parse --short HEAD 2>/dev/null || echo unknown)
if [ -n "$(git status --porcelain 2>/dev/null)" ]; then revision="$revision-dirty"; fi
current=$("${BUILDAH[@]}" inspect --type image --format '{{index .ImageAnnotations "org.paywarden.image.inputs"}}' \
  "$IMAGE_NAME:latest" 2>/dev/null || true)
if [ "$current" = "$inputs" ]; then
  "${BUILDAH[@]}" tag "$IMAGE_NAME:latest" "$IMAGE_NAME:$revision"
  echo "image: $IMAGE_NAME:latest is up to date (tagged $IMAGE_NAME:$revision too)"
  exit 0
fi

wait_quiet
container=$("${BUILDAH[@]}" from scratch)
trap '"${BUILDAH[@]}" rm "$container" >/dev/null 2>&1 || true' EXIT
mount=$("${BUILDAH[@]}" mount "$container")
cp -a "$rootfs/." "$mount/"
cp -a "$payload/." "$mount/"
ldconfig -r "$mount"
"${BUILDAH[@]}" umount "$container" >/dev/null
"${BUILDAH[@]}" config \
  --user "$IMAGE_UID:$IMAGE_UID" \
  --workingdir "$STATE" \
  --env PAYWARDEN_HOME="$STATE" \
  --env PAYWARDEN_LISTEN=0.0.0.0:8080 \
  --port 8080/tcp \
  --volume "$STATE" \
  --entrypoint '["/usr/local/bin/paywarden"]' \
  --cmd '["serve"]' \
  --stop-signal SIGTERM \
  --annotation org.paywarden.image.inputs="$inputs" \
  --annotation org.opencontainers.image.title=paywarden \
  --annotation org.opencontainers.image.revision="$revision" \
  --annotation org.opencontainers.image.description="Paywarden serve; probes: GET /readyz (readiness), GET /healthz (liveness) on 8080" \
  --label org.opencontainers.image.revision="$revision" \
  "$container"
"${BUILDAH[@]}" commit --quiet --rm "$container" "$IMAGE_NAME:$revision" >/dev/null
trap - EXIT
"${BUILDAH[@]}" tag "$IMAGE_NAME:$revision" "$IMAGE_NAME:latest"
size=$("${BUILDAH[@]}" images --format '{{.Size}}' "$IMAGE_NAME:latest" | awk 'NR == 1')  # awk reads it all: no SIGPIPE
echo "image: $IMAGE_NAME:$revision and :latest, $size"
