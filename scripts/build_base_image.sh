#!/usr/bin/env bash
# A local stand-in for the public python:3.11-slim base image, for machines that cannot pull it: Debian bookworm
# (debootstrap --variant=minbase) with Python 3.11 in a venv at /opt/venv (first on PATH, so `python` and `pip`
# are that venv's, as python:3.11-slim's are /usr/local's), imported into podman as $TLX_BASE_STANDIN.
# Built once per machine: the root filesystem is kept as a tarball under $TLX_IMAGE_CACHE (a few minutes the first
# time; later the import alone, or nothing while podman still holds the image). Needs root, debootstrap, podman.
set -euo pipefail
image=${TLX_BASE_STANDIN:-localhost/tlx-python:3.11-bookworm}
cache=${TLX_IMAGE_CACHE:-/var/cache/tlx-image}
tarball="$cache/bookworm-python3.11.tar"

mkdir -p "$cache"
exec 9>"$cache/.lock"
flock 9  # one builder at a time per machine

if podman image exists "$image"; then
  echo "[base] $image is already in podman's storage"
  exit 0
fi
if [ ! -f "$tarball" ]; then
  root=$(mktemp -d "$cache/rootfs.XXXXXX")
  trap 'rm -rf "$root" "$tarball.part"' EXIT
  echo "[base] debootstrap --variant=minbase bookworm into $root (first build on this machine)"
  debootstrap --variant=minbase --include=python3,python3-venv,passwd,ca-certificates bookworm "$root" \
    http://deb.debian.org/debian
  chroot "$root" python3 -m venv /opt/venv
  rm -rf "$root"/var/cache/apt/archives/*.deb "$root"/var/lib/apt/lists/*
  tar -C "$root" -cf "$tarball.part" .
  mv "$tarball.part" "$tarball"
fi
echo "[base] podman import $tarball as $image"
podman import \
  --change 'ENV PATH=/opt/venv/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin' \
  --change 'ENV LANG=C.UTF-8' \
  --change 'CMD ["python"]' \
  "$tarball" "$image"
