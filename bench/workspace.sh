#!/usr/bin/env bash
# Managed workspace benchmarks (issue 6). Usage: bench/workspace.sh [BUILD_DIR]
#  1. first admission of a 1,214-file static workspace (capture + record + materialise +
#     acquire) and the warm managed call against a plain one, in-process, on the fake and
#     native providers (bench/workspace-bench.c);
#  2. upload + verify of a 50 MiB bundle through `b4box upload` to a server on a unix socket,
#     with the server's peak RSS (VmHWM) before and after.
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build}
[ -f "$build/src/lib/libb4box.a" ] || ninja -C "$build"
cc -O2 -D_GNU_SOURCE -Iinclude -Isrc/lib bench/workspace-bench.c "$build/src/lib/libb4box.a" \
        $(pkg-config --libs jansson libcrypto libseccomp sqlite3) -lpthread -lm \
        -o "$build/workspace-bench"
work=$(mktemp -d "${TMPDIR:-/tmp}/b4wsbench.XXXXXX")
pid=
cleanup() { [ -n "$pid" ] && kill -TERM "$pid" 2>/dev/null && wait "$pid" 2>/dev/null; rm -rf "$work"; }
trap cleanup EXIT
export B4BOX_KEEPER=${B4BOX_KEEPER:-$PWD/$build/src/keeper/b4box-keeper}

printf '%-28s %-7s %12s %12s %8s\n' measurement provider p50_ms p99_ms n
for provider in fake native; do
        if [ "$provider" = native ] && [ "$(id -u)" != 0 ]; then
                echo "native: skipped (needs root)"; continue
        fi
        mkdir -p "$work/$provider"
        "$build/workspace-bench" "$provider" "$work/$provider" 1214 10 20000 >"$work/$provider.out"
        while read -r name p50 p99 n; do
                printf '%-28s %-7s %12.4f %12.4f %8s\n' "$name" "$provider" \
                        "$(echo "$p50 / 1000" | bc -l)" "$(echo "$p99 / 1000" | bc -l)" "$n"
        done <"$work/$provider.out"
done

# 50 MiB upload: 40 files of 0.94 MiB random bytes -> a ~50 MiB bundle (base64).
mkdir -p "$work/big"
for i in $(seq -w 1 40); do head -c 983040 /dev/urandom >"$work/big/f$i.bin"; done
"$build/src/cli/b4box" bundle create "$work/big" -o "$work/big.json" >/dev/null
size=$(stat -c %s "$work/big.json")
printf '{"sandbox":{"provider":{"type":"fake","scope":"wsbench"},"thread":{"command":["/bin/true"]},
"stagedWorkspaces":true},"threadAccess":{"principals":[{"name":"up","tokenEnv":"BENCH_TOKEN",
"operations":["workspace.source.put"],"threads":"own"}]}}' >"$work/srv.json"
export BENCH_TOKEN=bench-token-0123456789
"$build/src/cli/b4box" -c "$work/srv.json" --state "$work/srv-state" serve --listen "unix:$work/sock" \
        2>"$work/srv.log" &
pid=$!
for _ in $(seq 100); do [ -S "$work/sock" ] && break; sleep 0.05; done
before=$(awk '/VmHWM/ {print $2}' "/proc/$pid/status")
t0=$(date +%s%N)
B4BOX_URL="unix:$work/sock" B4BOX_TOKEN=$BENCH_TOKEN "$build/src/cli/b4box" upload "$work/big.json" >/dev/null
t1=$(date +%s%N)
after=$(awk '/VmHWM/ {print $2}' "/proc/$pid/status")
printf '%-28s %-7s %12.1f %12s %8s\n' "upload_verify_50MiB" server "$(echo "($t1 - $t0) / 1000000" | bc -l)" "" 1
echo "bundle: $size bytes; server peak RSS (VmHWM): $before KiB before, $after KiB after ($(( (after - before) / 1024 )) MiB more, $(echo "scale=1; ($after - $before) * 1024 / $size" | bc)x the body)"
