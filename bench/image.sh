#!/usr/bin/env bash
# bench/image.sh [BUILD] [ROUNDS] [HELD]: images on native (docs/images.md, issue 19).
#   1. import time of the Debian 12 root filesystem scripts/install-deps made
#      ($B4BOX_BASE_TAR) as a one-layer OCI layout (tests/image/rootfs-layout.py), 3 imports
#      into fresh state dirs (the page cache warm after the first);
#   2. bench/image-bench.c: cold acquire to the first `true` on that image against the host
#      image, interleaved, and the disk used with HELD threads held on the image.
# Root only (native sandboxes).
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build}
rounds=${2:-30}
held=${3:-100}
base=${B4BOX_BASE_TAR:-/var/cache/b4box-dev/bookworm-base.tar}
[ -s "$base" ] || { echo "bench/image.sh: $base is missing (scripts/install-deps all)" >&2; exit 1; }
ninja -C "$build" src/cli/b4box src/cli/b4box-full src/keeper/b4box-keeper bench/image-bench >/dev/null
tmp=$(mktemp -d /var/tmp/b4box-imgbench.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
tests/image/rootfs-layout.py "$base" "$tmp/lay" bench/debian:12 >/dev/null
mb=$(du -sm "$tmp/lay" | cut -f1)
for i in 1 2 3; do
        t0=$(date +%s%N)
        "$build/src/cli/b4box" --state "$tmp/s$i" image import "$tmp/lay" >/dev/null
        t1=$(date +%s%N)
        echo "import_${mb}MB_run$i $(((t1 - t0) / 1000000)) ms"
done
rm -rf "$tmp/s1" "$tmp/s2"
export B4BOX_KEEPER=${B4BOX_KEEPER:-$PWD/$build/src/keeper/b4box-keeper}
"$build/bench/image-bench" "$tmp/s3" oci:bench/debian:12 "$rounds" "$held"
