#!/usr/bin/env bash
# bench/pause.sh [BUILD_DIR] [ROUNDS]: build bench/pause-bench against the build's libb4box
# and run it as root with a private state dir: native pause and resume p50/p99 (microseconds)
# of a sandbox running four background loops, and `true` on a paused thread (the transparent
# resume) against `true` on a running one.
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build}
[ -f "$build/src/lib/libb4box.a" ] || ninja -C "$build"
cc -O2 -D_GNU_SOURCE -Iinclude -Isrc/lib bench/pause-bench.c "$build/src/lib/libb4box.a" \
        $(pkg-config --libs jansson libcrypto libseccomp sqlite3 libcurl libarchive) -lpthread -lm \
        -o "$build/pause-bench"
state=$(mktemp -d)
trap 'rm -rf "$state"' EXIT
export B4BOX_KEEPER=${B4BOX_KEEPER:-$PWD/$build/src/keeper/b4box-keeper}
"$build/pause-bench" "$state" "${2:-200}" >"$state/out"
printf '%-24s %12s %12s %8s\n' measurement p50_us p99_us n
while read -r name p50 p99 n; do
        printf '%-24s %12s %12s %8s\n' "$name" "$p50" "$p99" "$n"
done <"$state/out"
