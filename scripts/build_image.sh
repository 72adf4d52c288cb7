#!/usr/bin/env bash
# Builds the hosted explorer's image (Dockerfile) with podman as $TLX_IMAGE (default localhost/tlx-explorer:latest).
# Base: the public python:3.11-slim where it can be pulled, else the Debian-made stand-in of
# scripts/build_base_image.sh (built once per machine). `--isolation=chroot`: podman's default isolation needs
# cgroups that containers in containers often lack. The host's CA bundle is mounted read-only (with a pip.conf
# naming it) so pip inside the build trusts what the host trusts, e.g. a TLS-intercepting proxy.
# Extra arguments go to `podman build` (e.g. --build-arg TLX_SOURCE=...). Needs root and podman.
set -euo pipefail
cd "$(dirname "$0")/.."
image=${TLX_IMAGE:-localhost/tlx-explorer:latest}
public=docker.io/library/python:3.11-slim
cache=${TLX_IMAGE_CACHE:-/var/cache/tlx-image}
bundle=/etc/ssl/certs/ca-certificates.crt

if podman image exists "$public" || podman pull -q "$public" >/dev/null 2>&1; then
  base=$public
else
  echo "[image] $public cannot be pulled here; using the Debian-made stand-in"
  base=${TLX_BASE_STANDIN:-localhost/tlx-python:3.11-bookworm}
  TLX_BASE_STANDIN=$base bash scripts/build_base_image.sh
fi

mounts=()
if [ -f "$bundle" ]; then
  mkdir -p "$cache"
  printf '[global]\ncert = %s\n' "$bundle" > "$cache/pip.conf"
  mounts=(--volume "$bundle:$bundle:ro" --volume "$cache/pip.conf:/etc/pip.conf:ro")
fi
echo "[image] podman build $image from $base"
podman build --isolation=chroot --build-arg "BASE_IMAGE=$base" "${mounts[@]}" --tag "$image" "$@" .
