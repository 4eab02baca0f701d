#!/usr/bin/env bash
# bench/net-acquire.sh [BUILD_DIR] [BEFORE_REF]: native network plumbing (issue 13 item 4).
# For this tree's b4box and for BEFORE_REF's (default main, exported with `git archive` and
# built in a separate build dir under /tmp), 20 cold acquires (`exec --thread NEW -- true`)
# and 20 thread deletes (`destroy`), in network "allow", "lists" (deny with an allowlist of a
# CIDR:port and a name: the veth, the list's elements and a b4box-netd) and, to isolate the
# plumbing, "deny"; p50 and min of each, and mode − deny p50 = what the network costs. Then
# the same inside `b4box serve` (one server per mode, over loopback HTTP: POST /threads,
# runBash `true` timed as the acquire, DELETE /threads/{id} timed as the delete; curl's
# time_total, so no process start is counted). Everything runs in a private network
# namespace (`unshare --net`, ip_forward on there only): no packet leaves. Needs root.
# The servers run with B4BOX_TRACE_ACQUIRE=1 (a binary without the trace ignores it): for each
# mode the p50 of every acquire phase (docs/native.md "What a cold acquire costs") follows,
# in µs; child.* phases are the clone child's own timeline, alongside net and spawn.wait.
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
        ninja -C "$build" src/cli/b4box src/cli/b4box-full src/keeper/b4box-keeper \
                src/netd/b4box-netd >/dev/null
        before=/tmp/b4box-net-acquire-$(git rev-parse --short "$ref")
        if [ ! -x "$before/build/src/cli/b4box" ]; then
                mkdir -p "$before/src"
                git archive "$ref" | tar -x -C "$before/src"
                meson setup "$before/build" "$before/src" -Dtests=false >/dev/null
        fi
        ninja -C "$before/build" -j2 src/cli/b4box src/cli/b4box-full src/keeper/b4box-keeper \
                src/netd/b4box-netd >/dev/null
        exec env B4_BENCH_INNER=1 unshare --net -- "$0" "$build" "$ref" "$before/build"
fi
before_build=$3
ip link set lo up
echo 1 >/proc/sys/net/ipv4/ip_forward
work=$(mktemp -d /tmp/b4box-net-acquire.XXXXXX)
servers=()
cleanup() {
        for p in "${servers[@]}"; do kill -TERM "$p" 2>/dev/null || true; done
        for p in "${servers[@]}"; do wait "$p" 2>/dev/null || true; done
        rm -rf "$work"
}
trap cleanup EXIT
modes="deny allow lists"
mkdir -p "$work/allow" "$work/deny" "$work/lists"
echo '{"sandbox":{"provider":{"type":"native","scope":"net-bench"},"network":{"mode":"allow"}}}' \
        >"$work/allow/b4box.json"
echo '{"sandbox":{"provider":{"type":"native","scope":"net-bench"},"network":{"mode":"deny"}}}' \
        >"$work/deny/b4box.json"
# the upstream is never asked: nothing resolves during the bench
echo '{"sandbox":{"provider":{"type":"native","scope":"net-bench"},"network":{"mode":"deny",
 "allowlist":["198.51.100.0/24:443","api.example.test"],"dns":{"upstream":["192.0.2.53"]}}}}' \
        >"$work/lists/b4box.json"

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
        for mode in $modes; do
                : >"$work/acq-$mode" && : >"$work/del-$mode"
                timed /dev/null "$mode" exec --thread warm -- true
                timed /dev/null "$mode" destroy warm
        done
        for i in $(seq "$runs"); do
                for mode in $modes; do timed "$work/acq-$mode" "$mode" exec --thread "n$i" -- true; done
        done
        for i in $(seq "$runs"); do
                for mode in $modes; do timed "$work/del-$mode" "$mode" destroy "n$i"; done
        done
        for mode in $modes; do
                read -r acq_p50 acq_min <<<"$(stats "$work/acq-$mode")"
                read -r del_p50 del_min <<<"$(stats "$work/del-$mode")"
                printf '%-8s %-6s %9s %9s %9s %9s\n' "$label" "$mode" "$acq_p50" "$acq_min" "$del_p50" "$del_min"
                eval "${label}_${mode}_acq=$acq_p50 ${label}_${mode}_del=$del_p50"
        done
}
# curl's time_total of one request (microseconds appended to file $1): $2 = method, $3 = path
# on server port $4, $5 = body
req() {
        local t
        t=$(curl -sf -o /dev/null -w '%{time_total}' -X "$2" -H 'Content-Type: application/json' \
                ${5:+-d "$5"} "127.0.0.1:$4$3") || {
                echo "bench/net-acquire.sh: $2 $3 on :$4 failed" >&2
                return 1
        }
        awk -v t="$t" 'BEGIN { printf "%d\n", t * 1e6 }' >>"$1"
}
# measure_serve LABEL BUILD: one `b4box serve` per mode; $runs acquires then $runs deletes,
# the modes interleaved
measure_serve() {
        local label=$1 b mode i port
        b=$(realpath "$2")
        export B4BOX_KEEPER=$b/src/keeper/b4box-keeper B4BOX_NETD=$b/src/netd/b4box-netd
        servers=()
        port=18700
        for mode in $modes; do
                port=$((port + 1))
                eval "port_$mode=$port"
                (cd "$work/$mode" && B4BOX_TRACE_ACQUIRE=1 exec "$b/src/cli/b4box" \
                        --state "$work/sv-$label-$mode" serve --listen "127.0.0.1:$port") \
                        2>"$work/serve-$label-$mode.log" &
                servers+=($!)
                for _ in $(seq 100); do curl -sf "127.0.0.1:$port/healthz" >/dev/null && break; sleep 0.05; done
                : >"$work/sacq-$mode" && : >"$work/sdel-$mode"
        done
        for i in $(seq 0 "$runs"); do
                for mode in $modes; do
                        eval "port=\$port_$mode"
                        req /dev/null POST /threads "$port" "{\"thread_id\":\"s$i\"}"
                        out=$work/sacq-$mode
                        [ "$i" = 0 ] && out=/dev/null # the warm-up
                        req "$out" POST "/threads/s$i/tools/runBash" "$port" '{"command":"true"}'
                done
        done
        for i in $(seq 0 "$runs"); do
                for mode in $modes; do
                        eval "port=\$port_$mode"
                        out=$work/sdel-$mode
                        [ "$i" = 0 ] && out=/dev/null
                        req "$out" DELETE "/threads/s$i" "$port"
                done
        done
        for p in "${servers[@]}"; do kill -TERM "$p"; wait "$p" 2>/dev/null || true; done
        servers=()
        for mode in $modes; do
                read -r acq_p50 acq_min <<<"$(stats "$work/sacq-$mode")"
                read -r del_p50 del_min <<<"$(stats "$work/sdel-$mode")"
                printf '%-8s %-6s %9s %9s %9s %9s\n' "$label" "$mode" "$acq_p50" "$acq_min" "$del_p50" "$del_min"
                eval "s${label}_${mode}_acq=$acq_p50 s${label}_${mode}_del=$del_p50"
        done
}
echo "native cold acquire and delete, $runs each, ms (this tree: $build; before: $ref)"
printf '%-8s %-6s %9s %9s %9s %9s\n' binary mode acq-p50 acq-min del-p50 del-min
for side in before after; do
        b=$build
        [ "$side" = before ] && b=$before_build
        measure "$side" "$b"
done
echo "inside b4box serve, $runs each, ms (HTTP request time)"
printf '%-8s %-6s %9s %9s %9s %9s\n' binary mode acq-p50 acq-min del-p50 del-min
for side in before after; do
        b=$build
        [ "$side" = before ] && b=$before_build
        measure_serve "$side" "$b"
done
# phases LABEL: the p50 of each traced acquire phase per mode (the warm-up's trace left out)
phases() {
        local mode
        for mode in $modes; do
                grep -h '^b4box trace acquire s[1-9][0-9]* ok ' "$work/serve-$1-$mode.log" 2>/dev/null |
                        awk -v m="$mode" -v l="$1" '
                        { for (i = 6; i <= NF; i++) { split($i, kv, "="); if (!(kv[1] in seen)) { seen[kv[1]] = 1; order[++n] = kv[1] }
                                                      v[kv[1], ++c[kv[1]]] = kv[2] } }
                        END { if (!n) exit; printf "%-6s %-6s", l, m
                              for (k = 1; k <= n; k++) { key = order[k]; cnt = c[key]
                                      for (i = 1; i <= cnt; i++) a[i] = v[key, i]
                                      for (i = 2; i <= cnt; i++) for (j = i; j > 1 && a[j - 1] > a[j]; j--) { t = a[j]; a[j] = a[j - 1]; a[j - 1] = t }
                                      printf " %s=%d", key, a[int((cnt + 1) / 2)] }
                              printf "\n" }' || true
        done
}
echo "acquire phases inside b4box serve, p50 us (B4BOX_TRACE_ACQUIRE=1; none: no trace in that binary)"
phases before
phases after
echo "network plumbing (mode p50 - deny p50), ms:"
for pre in "" s; do
        for side in before after; do
                for mode in allow lists; do
                        eval "a=\$${pre}${side}_${mode}_acq d=\$${pre}${side}_deny_acq ra=\$${pre}${side}_${mode}_del rd=\$${pre}${side}_deny_del"
                        awk -v s="$side" -v m="$mode" -v w="${pre:+serve}" -v a="$a" -v d="$d" -v ra="$ra" -v rd="$rd" \
                                'BEGIN { printf "%-8s %-6s %-5s acquire %7.2f   delete %7.2f\n", s, m, w ? w : "cli", a - d, ra - rd }'
                done
        done
done
