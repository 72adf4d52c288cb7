#!/bin/sh
# Unpack Debian's bubblewrap binary into .tools/bubblewrap/ (usr/bin/bwrap), where runner.sandbox.isolation looks for
# it, for a machine without bwrap or a package registry (the GPU machine): run this where apt works, then carry
# .tools/ with the repository (the device run's `carry: [".tools"]`, or rsync/scp). Debian bookworm's build needs
# only libc and libselinux/libcap, which the GPU image has. Usage: scripts/fetch_bwrap.sh [DEST]
set -eu
dest=${1:-$(dirname "$0")/../.tools/bubblewrap}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
(cd "$work" && apt-get download bubblewrap >/dev/null)
mkdir -p "$dest"
dpkg -x "$work"/bubblewrap_*.deb "$dest"
"$dest/usr/bin/bwrap" --version
