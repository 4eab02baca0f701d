#!/usr/bin/env bash
# bench/net-dns.sh [BUILD_DIR] [BEFORE_REF]: DNS answer latency through b4box-netd against the fake
# upstream directly, in one run (issue 13, benchmarks). A closed topology like
# tests/native/net-netd.sh, all inside `unshare --net`: an "internet" namespace with dnsmasq
# on 192.0.2.53 (answers from --address, no cache misses, no recursion), and two sandbox
# namespaces behind veths: b4h1 is a listed thread (deny + allowlist; every :53 packet
# redirected to its netd, which pins each answer before replying), direct2 is no b4h* veth
# (the table does not see it) and asks 192.0.2.53 straight over the same kind of path. A
# Python client in each sends QUERIES UDP queries one after another (blocks of 100,
# alternating between the two so load changes hit both) and times each; prints p50/p90/p99
# and min in µs for: direct, through netd (an admitted name, answered upstream and
# pinned), through netd (an unlisted name: NXDOMAIN locally), and the difference of p50s;
# then 100 reads of netd's audit socket (its ring full).
# With BEFORE_REF (e.g. main), that ref's b4box-netd (exported with `git archive`, built
# under /tmp) serves a third sandbox, b4h3, the same way, in the same alternation.
# Needs root, nft, dnsmasq, python3. No packet leaves the namespaces.
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build}
ref=${2:-}
export QUERIES=${QUERIES:-2000}
if [ "$(id -u)" -ne 0 ]; then
        echo "bench/net-dns.sh: needs root" >&2
        exit 1
fi
if [ -z "${B4_BENCH_INNER:-}" ]; then
        ninja -C "$build" src/netd/b4box-netd >/dev/null
        before=
        if [ -n "$ref" ]; then
                before=/tmp/b4box-net-dns-$(git rev-parse --short "$ref")
                if [ ! -x "$before/build/src/netd/b4box-netd" ]; then
                        mkdir -p "$before/src"
                        git archive "$ref" | tar -x -C "$before/src"
                        meson setup "$before/build" "$before/src" -Dtests=false >/dev/null
                fi
                ninja -C "$before/build" -j2 src/netd/b4box-netd >/dev/null
                before=$before/build/src/netd/b4box-netd
        fi
        exec env B4_BENCH_INNER=1 NETD_BEFORE="$before" unshare --net -- "$0" "$build"
fi
netd=$PWD/$build/src/netd/b4box-netd
table=$PWD/src/lib/hostnet/b4box.nft
dir=$(mktemp -d)
pids=()
cleanup() {
        for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
        wait 2>/dev/null || true
        rm -rf "$dir"
}
trap cleanup EXIT
ip link set lo up
echo 1 >/proc/sys/net/ipv4/ip_forward
spawn_ns() {
        unshare --net -- sleep 600 >/dev/null 2>&1 &
        echo $!
}
inet=$(spawn_ns)
s1=$(spawn_ns)
s2=$(spawn_ns)
s3=$(spawn_ns)
pids+=("$inet" "$s1" "$s2" "$s3")
sleep 0.2
in_inet() { nsenter -t "$inet" -n "$@"; }
ip link add up0 type veth peer name up1
ip link set up1 netns "$inet"
ip addr add 192.0.2.1/24 dev up0
ip link set up0 up
in_inet ip link set lo up
in_inet ip addr add 192.0.2.53/24 dev up1
in_inet ip link set up1 up
in_inet ip route add 10.233.0.0/16 via 192.0.2.1
(exec nsenter -t "$inet" -n dnsmasq --no-daemon --no-resolv --no-hosts --bind-interfaces -u root \
        --cache-size=0 --listen-address=192.0.2.53 --address=/allowed.test/192.0.2.10 \
        --address=/other.test/192.0.2.11) 2>/dev/null &
pids+=($!)
sandbox() { # pid veth n
        ip link add "$2" type veth peer name "s$2"
        ip link set "s$2" netns "$1"
        ip addr add "10.233.0.$((4 * $3 + 1))/30" dev "$2"
        ip link set "$2" up
        nsenter -t "$1" -n ip link set lo up
        nsenter -t "$1" -n ip link set "s$2" name eth0
        nsenter -t "$1" -n ip addr add "10.233.0.$((4 * $3 + 2))/30" dev eth0
        nsenter -t "$1" -n ip link set eth0 up
        nsenter -t "$1" -n ip route add default via "10.233.0.$((4 * $3 + 1))"
}
sandbox "$s1" b4h1 0
sandbox "$s2" direct2 1
sandbox "$s3" b4h3 2
nft -f "$table"
listed() { # veth gateway netd-binary log [netd options]
        local veth=$1 gw=$2 exe=$3 log=$4 ifx port
        shift 4
        ifx=$(ip -o link show dev "$veth" | cut -d: -f1)
        mkfifo "$dir/$veth.port"
        "$exe" --ifindex "$ifx" --listen "$gw" --mode deny --upstream 192.0.2.53 --pin-floor 30 \
                --pin-cap 60 "$@" -- allowed.test >"$dir/$veth.port" 2>"$log" &
        pids+=($!)
        read -r _ port <"$dir/$veth.port"
        nft -f - <<EOF2
add element inet b4box mode { $ifx : goto deny_mode }
add element inet b4box dnsport { $ifx : $port }
add element inet b4box dnsin { $ifx . udp . $port, $ifx . tcp . $port }
add element inet b4box src4 { $ifx . ${gw%.*}.$((${gw##*.} + 1)) }
EOF2
}
listed b4h1 10.233.0.1 "$netd" "$dir/netd.log" --audit "$dir/audit.sock"
[ -n "${NETD_BEFORE:-}" ] && listed b4h3 10.233.0.9 "$NETD_BEFORE" "$dir/before.log"
for _ in $(seq 50); do
        nsenter -t "$s2" -n dig +short +time=1 +tries=1 @192.0.2.53 allowed.test 2>/dev/null | grep -q . && break
        sleep 0.1
done
cat >"$dir/client.py" <<'PY'
# client.py NAME SERVER BLOCK: BLOCK timed queries for NAME to SERVER:53, one at a time;
# prints the latencies in ns, one per line. Each query has a fresh ID; a lost answer is
# retried (counted as its full time) after 1 s.
import os, socket, struct, sys, time
name, server, n = sys.argv[1], sys.argv[2], int(sys.argv[3])
q = b"".join(bytes([len(l)]) + l.encode() for l in name.split(".")) + b"\0" + struct.pack(">HH", 1, 1)
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
s.connect((server, 53))
s.settimeout(1.0)
out = []
for i in range(n):
    qid = (os.getpid() + i) & 0xFFFF
    msg = struct.pack(">6H", qid, 0x0100, 1, 0, 0, 0) + q
    t0 = time.perf_counter_ns()
    while True:
        s.send(msg)
        try:
            while struct.unpack(">H", s.recv(4096)[:2])[0] != qid:
                pass
            break
        except socket.timeout:
            continue
    out.append(time.perf_counter_ns() - t0)
sys.stdout.write("\n".join(map(str, out)) + "\n")
PY
block=100
: >"$dir/direct" && : >"$dir/netd" && : >"$dir/local" && : >"$dir/before"
for _ in $(seq $((QUERIES / block))); do
        nsenter -t "$s2" -n python3 "$dir/client.py" allowed.test 192.0.2.53 $block >>"$dir/direct"
        nsenter -t "$s1" -n python3 "$dir/client.py" allowed.test 192.0.2.53 $block >>"$dir/netd"
        nsenter -t "$s1" -n python3 "$dir/client.py" other.test 192.0.2.53 $block >>"$dir/local"
        if [ -n "${NETD_BEFORE:-}" ]; then
                nsenter -t "$s3" -n python3 "$dir/client.py" allowed.test 192.0.2.53 $block >>"$dir/before"
        fi
done
python3 - "$dir" <<'PY'
import sys
d = sys.argv[1]
def stats(f):
    v = sorted(int(x) / 1000 for x in open(f"{d}/{f}") if x.strip())
    p = lambda q: v[min(len(v) - 1, int(q * len(v)))]
    return len(v), p(0.5), p(0.9), p(0.99), v[0]
import os
rows = [("direct to the upstream", "direct"), ("through netd, admitted and pinned", "netd"),
        ("through netd, unlisted (local NXDOMAIN)", "local")]
if os.path.getsize(f"{d}/before"):
    rows.append(("through BEFORE_REF's netd, admitted", "before"))
res = {}
print(f"{'path':42} {'n':>6} {'p50 µs':>8} {'p90 µs':>8} {'p99 µs':>8} {'min µs':>8}")
for label, f in rows:
    n, p50, p90, p99, mn = res[f] = stats(f)
    print(f"{label:42} {n:6d} {p50:8.1f} {p90:8.1f} {p99:8.1f} {mn:8.1f}")
print(f"netd's hop (admitted p50 - direct p50): {res['netd'][1] - res['direct'][1]:.1f} µs")
PY
grep -c "verdict=answer" "$dir/netd.log" | sed 's/^/netd answers logged: /'
# the audit read (what GET /threads/{id}/network costs netd): 100 reads of its socket
python3 - "$dir/audit.sock" <<'PY'
import socket, sys, time
v, size = [], 0
for _ in range(100):
    t0 = time.perf_counter_ns()
    s = socket.socket(socket.AF_UNIX)
    s.connect(sys.argv[1])
    doc = s.makefile("rb").read()
    v.append((time.perf_counter_ns() - t0) / 1000)
    size = len(doc)
v.sort()
print(f"audit read: p50 {v[50]:.0f} µs, min {v[0]:.0f} µs ({size} bytes: 256 events, the ring full)")
PY
