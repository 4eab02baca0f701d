#!/usr/bin/env bash
# bench/net-acquire.sh [BUILD_DIR] [BEFORE_REF]: native network plumbing (issue 13 item 4).
# For this tree's b4box and for BEFORE_REF's (default main, exported with `git archive` and
# built in a separate build dir under /tmp), 20 cold acquires (`exec --thread NEW -- true`)
# and 20 thread deletes (`destroy`), in network "allow" and, to isolate the plumbing, "deny";
# p50 and min of each, and allow − deny p50 = what the network costs. Everything runs in a
# private network namespace (`unshare --net`, ip_forward on there only): no packet leaves.
# Needs root.
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build}
ref=${2:-main}
runs=${RUNS:-20}
if [ "$(id -u)" -ne 0 ]; then
        echo "bench/net-acquire.sh: needs root" >&2
        exit 1
fi
if [ -z "${B4_BENCH_INNER:-}" ]; then
        ninja -C "$build" src/cli/b4box src/keeper/b4box-keeper src/netd/b4box-netd >/dev/null
        before=/tmp/b4box-net-acquire-$(git rev-parse --short "$ref")
        if [ ! -x "$before/build/src/cli/b4box" ]; then
                mkdir -p "$before/src"
                git archive "$ref" | tar -x -C "$before/src"
                meson setup "$before/build" "$before/src" -Dtests=false >/dev/null
        fi
        ninja -C "$before/build" -j2 src/cli/b4box src/keeper/b4box-keeper \
                src/netd/b4box-netd >/dev/null
        exec env B4_BENCH_INNER=1 unshare --net -- "$0" "$build" "$ref" "$before/build"
fi
before_build=$3
ip link set lo up
echo 1 >/proc/sys/net/ipv4/ip_forward
work=$(mktemp -d /tmp/b4box-net-acquire.XXXXXX)
trap 'rm -rf "$work"' EXIT
mkdir -p "$work/allow" "$work/deny"
echo '{"sandbox":{"provider":{"type":"native","scope":"net-bench"},"network":{"mode":"allow"}}}' \
        >"$work/allow/b4box.json"
echo '{"sandbox":{"provider":{"type":"native","scope":"net-bench"},"network":{"mode":"deny"}}}' \
        >"$work/deny/b4box.json"

now_us() { echo $(($(date +%s%N) / 1000)); }
bin=
# p50 and min (ms, 2 decimals) of the microsecond figures in file $1
stats() {
        sort -n "$1" | awk '{ v[NR] = $1 } END { printf "%7.2f %7.2f", v[int((NR + 1) / 2)] / 1000, v[1] / 1000 }'
}
# one timed b4box call (microseconds appended to file $1) in mode dir $2: $3...
timed() {
        local out=$1 mode=$2 t0
        shift 2
        t0=$(now_us)
        (cd "$work/$mode" && "$bin" --state "$work/st-$mode" "$@" >/dev/null)
        echo $(($(now_us) - t0)) >>"$out"
}
# measure LABEL BUILD: $runs acquires then $runs deletes, deny and allow interleaved (the
# machine's load falls on both alike); prints both modes and keeps the p50s
measure() {
        local label=$1 b mode i
        b=$(realpath "$2")
        bin=$b/src/cli/b4box
        export B4BOX_KEEPER=$b/src/keeper/b4box-keeper B4BOX_NETD=$b/src/netd/b4box-netd
        for mode in deny allow; do
                : >"$work/acq-$mode" && : >"$work/del-$mode"
                timed /dev/null "$mode" exec --thread warm -- true
                timed /dev/null "$mode" destroy warm
        done
        for i in $(seq "$runs"); do
                for mode in deny allow; do timed "$work/acq-$mode" "$mode" exec --thread "n$i" -- true; done
        done
        for i in $(seq "$runs"); do
                for mode in deny allow; do timed "$work/del-$mode" "$mode" destroy "n$i"; done
        done
        for mode in deny allow; do
                read -r acq_p50 acq_min <<<"$(stats "$work/acq-$mode")"
                read -r del_p50 del_min <<<"$(stats "$work/del-$mode")"
                printf '%-8s %-6s %9s %9s %9s %9s\n' "$label" "$mode" "$acq_p50" "$acq_min" "$del_p50" "$del_min"
                eval "${label}_${mode}_acq=$acq_p50 ${label}_${mode}_del=$del_p50"
        done
}
echo "native cold acquire and delete, $runs each, ms (this tree: $build; before: $ref)"
printf '%-8s %-6s %9s %9s %9s %9s\n' binary mode acq-p50 acq-min del-p50 del-min
for side in before after; do
        b=$build
        [ "$side" = before ] && b=$before_build
        measure "$side" "$b"
done
echo "network plumbing (allow p50 - deny p50), ms:"
for side in before after; do
        eval "a=\$${side}_allow_acq d=\$${side}_deny_acq ra=\$${side}_allow_del rd=\$${side}_deny_del"
        awk -v s="$side" -v a="$a" -v d="$d" -v ra="$ra" -v rd="$rd" \
                'BEGIN { printf "%-8s acquire %7.2f   delete %7.2f\n", s, a - d, ra - rd }'
done
