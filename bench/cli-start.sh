#!/usr/bin/env bash
# bench/cli-start.sh [BUILD_DIR] [OTHER_B4BOX]: how fast the CLI starts (median wall time,
# bench/spawn-time). `b4box version` 50 times, then a local warm native `b4box exec`: a
# private state dir under /tmp, one exec to start the sandbox, then 30 `exec -- true`.
# Side by side in one run: the light b4box, b4box-full (everything linked, what b4box was
# before the split) and, when given, another b4box binary (e.g. an older build's).
# Needs root for the native exec; without it only `version` is measured.
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build}
other=${2:-}
ninja -C "$build" src/cli/b4box src/cli/b4box-full bench/spawn-time src/keeper/b4box-keeper \
        >/dev/null
st=$build/bench/spawn-time
export B4BOX_KEEPER=$PWD/$build/src/keeper/b4box-keeper
bins=("$build/src/cli/b4box" "$build/src/cli/b4box-full")
[ -n "$other" ] && bins+=("$other")
state=$(mktemp -d /tmp/b4box-cli-start.XXXXXX)
thread=cli-start-$$
cleanup() {
        for b in "${bins[@]}"; do "$b" --state "$state" destroy "$thread" >/dev/null 2>&1 || true; done
        rm -rf "$state"
}
trap cleanup EXIT
printf '%-40s %5s  %s\n' binary libs "wall median, min; cpu median"
for b in "${bins[@]}"; do
        printf '%-40s %5s\n' "$b" "$(ldd "$b" | wc -l)"
        printf '  %-38s %5s  %s\n' "version" "" "$("$st" 50 "$b" version)"
        if [ "$(id -u)" = 0 ]; then
                "$b" --state "$state" exec --thread "$thread" -- true
                printf '  %-38s %5s  %s\n' "warm exec -- true" "" \
                        "$("$st" 30 "$b" --state "$state" exec --thread "$thread" -- true)"
        fi
done
