#!/usr/bin/env bash
# bench/net-rules.sh [BUILD_DIR] [ROUNDS]: the data path and the element costs of the inet b4box
# table (issue 13 benchmarks). In a closed topology of namespaces made here (nothing leaves it):
#   sandbox ns  eth0 10.233.0.2/30 ── b4hbench00000 10.233.0.1/30  "host" ns (this script,
#               forwarding, the table) up0 198.51.100.1/24 ── 198.51.100.10/24 server ns
# a client in the sandbox ns makes 2,000 new TCP connections to the server's port 443 (connect
# time, p50/p90) and one 3 s stream (Gbit/s), with: no table at all ("none"); a table that only
# masquerades the sandbox (conntrack and NAT, what any NAT'd sandbox pays: "nat only"); the table and the
# one thread's elements ("1 thread": deny mode, allowlist 198.51.100.0/24:443, so every new
# flow runs listed_out, deny_mode and the cidr4 lookup); the same plus 1,000 other threads'
# elements with 20 pins each ("1000 threads"). The three are measured in turn, ROUNDS times
# (default 3), and the median of the rounds is reported with the ratio to "none". Then the
# element costs (bench/net-bench nft): one pin (b4box-netd's code), one thread's elements
# added and deleted, with 0 and 1,000 other threads installed, for the same allowlist and for
# one of names only (no interval set). Needs root.
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build}
rounds=${2:-3}
nb=$(realpath "$build/bench/net-bench")
if [ "$(id -u)" -ne 0 ]; then
        echo "bench/net-rules.sh: needs root" >&2
        exit 1
fi
if [ -z "${B4_BENCH_INNER:-}" ]; then
        ninja -C "$build" bench/net-bench >/dev/null
        exec env B4_BENCH_INNER=1 unshare --net -- "$0" "$@"
fi
pids=()
cleanup() { for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done; }
trap cleanup EXIT
ip link set lo up
echo 1 >/proc/sys/net/ipv4/ip_forward
unshare --net -- sleep 3600 &
sbx=$!
pids+=("$sbx")
unshare --net -- sleep 3600 &
srv=$!
pids+=("$srv")
sleep 0.2
in_sbx() { nsenter -t "$sbx" -n "$@"; }
in_srv() { nsenter -t "$srv" -n "$@"; }
ip link add b4hbench00000 type veth peer name eth0 netns "$sbx"
ip addr add 10.233.0.1/30 dev b4hbench00000
ip link set b4hbench00000 up
in_sbx ip link set lo up
in_sbx ip addr add 10.233.0.2/30 dev eth0
in_sbx ip link set eth0 up
in_sbx ip route add default via 10.233.0.1
ip link add up0 type veth peer name up1 netns "$srv"
ip addr add 198.51.100.1/24 dev up0
ip link set up0 up
in_srv ip link set lo up
in_srv ip addr add 198.51.100.10/24 dev up1
in_srv ip link set up1 up
in_srv ip route add default via 198.51.100.1
nsenter -t "$srv" -n "$nb" serve 443 >/dev/null 2>&1 & # nsenter execs: $! is the server
pids+=($!)
for _ in $(seq 50); do in_sbx "$nb" connect 198.51.100.10 443 1 >/dev/null 2>&1 && break; sleep 0.1; done
ifx=$(ip -o link show dev b4hbench00000 | cut -d: -f1) # (/sys is the host namespace's)

# state NAME: the table as configuration NAME wants it
state() {
        nft delete table inet b4box 2>/dev/null || true
        case $1 in
        none) ;;
        nat)
                nft -f - <<-'EOF'
			table inet b4box {
				chain nat_out { type nat hook postrouting priority srcnat - 10; policy accept;
					oifname != "b4h*" ip saddr 10.233.0.0/16 masquerade
				}
			}
		EOF
                ;;
        one) "$nb" install "$ifx" 10.233.0.2 0 0 ;;
        thousand) "$nb" install "$ifx" 10.233.0.2 1000 20 ;;
        esac
        conntrack -F >/dev/null 2>&1 || true
}
configs="none nat one thousand"
for c in $configs; do : >"/tmp/b4-net-rules-$$-$c"; done
for r in $(seq "$rounds"); do
        for c in $configs; do
                state "$c"
                in_sbx "$nb" connect 198.51.100.10 443 200 >/dev/null # warm
                conn=$(in_sbx "$nb" connect 198.51.100.10 443 2000)
                gbit=$(in_sbx "$nb" stream 198.51.100.10 443 3)
                echo "$(awk '{ print $3, $5 }' <<<"$conn") $(awk '{ print $2 }' <<<"$gbit")" >>"/tmp/b4-net-rules-$$-$c"
        done
done
state none
echo "new connections and throughput through the rules, median of $rounds rounds"
printf '%-14s %10s %10s %8s %10s %8s\n' config conn-p50us conn-p90us ratio stream-gbit ratio
med() { sort -n | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'; }
base_p50=
base_gbit=
for c in $configs; do
        f=/tmp/b4-net-rules-$$-$c
        p50=$(awk '{ print $1 }' "$f" | med)
        p90=$(awk '{ print $2 }' "$f" | med)
        gbit=$(awk '{ print $3 }' "$f" | med)
        [ -z "$base_p50" ] && base_p50=$p50 && base_gbit=$gbit
        label=$c
        [ "$c" = nat ] && label="nat only"
        [ "$c" = one ] && label="1 thread"
        [ "$c" = thousand ] && label="1000 threads"
        awk -v l="$label" -v a="$p50" -v b="$p90" -v g="$gbit" -v ba="$base_p50" -v bg="$base_gbit" \
                'BEGIN { printf "%-14s %10.1f %10.1f %8.2f %10.2f %8.2f\n", l, a, b, a / ba, g, g / bg }'
        rm -f "$f"
done
echo "element costs (microseconds; 200 runs each, after the population is installed)"
printf '%-34s %9s %9s %9s\n' case pin-p50 add-p50 delete-p50
for threads in 0 1000; do
        for list in "198.51.100.0/24:443" "api.example.test"; do
                out=$(unshare --net -- "$nb" nft "$threads" 20 200 "$list")
                pin=$(awk '$1 == "pin_us" { print $3 }' <<<"$out")
                add=$(awk '$1 == "thread_add_us" { print $3 }' <<<"$out")
                del=$(awk '$1 == "thread_delete_us" { print $3 }' <<<"$out")
                printf '%-34s %9s %9s %9s\n' "$threads others, allowlist $list" "$pin" "$add" "$del"
        done
done
