#!/usr/bin/env bash
# bench/net-rules.sh [BUILD_DIR] [ROUNDS] [CONNS]: the data path and the element costs of the
# inet b4box table (issue 13 benchmarks). A closed topology of namespaces made here (nothing
# leaves it): one server namespace, and for each configuration its own "host" namespace (its
# own nftables ruleset, forwarding on) with its own sandbox namespace behind a veth:
#   sandbox eth0 10.233.0.2/30 ── b4hbench00000 10.233.0.1/30  host<c>  up0<c> <net<c>>.1/24
#   ── up1<c> <net<c>>.10/24 server (one process listening on :443 of every address)
# Configurations: "none" (no table at all), "nat only" (a table that only masquerades the
# sandbox: conntrack and NAT, what any NAT'd sandbox pays), "1 thread" (the table and the one
# thread's elements: deny mode, allowlist <net>/24:443, so every new flow runs listed_out,
# deny_mode, the map own and the thread's own chain and set), "1000 threads" (the same plus
# 1,000 other threads' elements with 20 pins each). All four are installed once and stay, so
# rounds interleave them: ROUNDS (default 15) rounds, each running the four in a fresh random
# order, each run CONNS (default 1000) new TCP connections after 100 warm ones (connect()
# time: the round's p50 and p90) and a 1 s stream (Gbit/s). Reported per configuration: the
# median over rounds of the per-round p50, its IQR (p25-p75 of the per-round p50s), the
# median of the per-round ratio to "none" and to "nat only" (paired: the same round) with a
# distribution-free 95 % confidence interval of each median (order statistics of the
# binomial; at least 6 rounds), and the stream's median and ratio; then the paired ratio of
# 1,000 threads to 1 thread. B4_BENCH_PIN=1 pins every client to CPU 0 and the server to
# CPU 1 (taskset). Then the element costs (bench/net-bench nft): one pin of each kind
# (b4box-netd's code: pin4, and a name:port pin in the thread's own pins_<iif>, or for a
# name:port-port entry pinsr_<iif>), one thread's elements added and deleted, with 0 and
# 1,000 other threads installed, for a CIDR allowlist (the thread's own set and chain), one
# of names only, one name:port and one name:port-port (the population: 20 pin4 pins a
# thread, and 2 name:port pins in each thread's own set; the pins timed are new ones, the
# name:port ones 20 of them). Needs
# root, python3 (the summary).
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build}
rounds=${2:-15}
conns=${3:-1000}
nb=$(realpath "$build/bench/net-bench")
if [ "$(id -u)" -ne 0 ]; then
        echo "bench/net-rules.sh: needs root" >&2
        exit 1
fi
if [ -z "${B4_BENCH_INNER:-}" ]; then
        ninja -C "$build" bench/net-bench >/dev/null
        exec env B4_BENCH_INNER=1 unshare --net -- "$0" "$@"
fi
dir=$(mktemp -d)
pids=()
cleanup() {
        for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
        rm -rf "$dir"
}
trap cleanup EXIT
ip link set lo up
configs="none nat one thousand"
declare -A net=([none]=198.51.100 [nat]=203.0.113 [one]=192.0.2 [thousand]=198.18.0)
declare -A host sbx
hold() { # a namespace kept by a sleeper; its pid into $held
        unshare --net -- sleep 3600 &
        held=$!
        pids+=("$held")
}
hold
srv=$held
for c in $configs; do
        hold
        host[$c]=$held
        hold
        sbx[$c]=$held
done
sleep 0.2
pin_client=()
pin_server=()
if [ -n "${B4_BENCH_PIN:-}" ]; then
        pin_client=(taskset -c 0)
        pin_server=(taskset -c 1)
fi
in_srv() { nsenter -t "$srv" -n "$@"; }
nsenter -t "$srv" -n ip link set lo up
i=0
for c in $configs; do
        h=${host[$c]}
        s=${sbx[$c]}
        n=${net[$c]}
        in_h() { nsenter -t "$h" -n "$@"; }
        in_s() { nsenter -t "$s" -n "$@"; }
        in_h ip link set lo up
        echo 1 | in_h tee /proc/sys/net/ipv4/ip_forward >/dev/null
        in_h ip link add b4hbench00000 type veth peer name eth0 netns "$s"
        in_h ip addr add 10.233.0.1/30 dev b4hbench00000
        in_h ip link set b4hbench00000 up
        in_s ip link set lo up
        in_s ip addr add 10.233.0.2/30 dev eth0
        in_s ip link set eth0 up
        in_s ip route add default via 10.233.0.1
        in_h ip link add "up0$i" type veth peer name "up1$i" netns "$srv"
        in_h ip addr add "$n.1/24" dev "up0$i"
        in_h ip link set "up0$i" up
        in_srv ip addr add "$n.10/24" dev "up1$i"
        in_srv ip link set "up1$i" up
        # replies to the sandbox's own address ("none", where nothing masquerades)
        in_srv ip route add 10.233.0.0/30 via "$n.1" dev "up1$i" table $((100 + i))
        in_srv ip rule add from "$n.10" table $((100 + i))
        ifx=$(in_h ip -o link show dev b4hbench00000 | cut -d: -f1)
        case $c in
        none) ;;
        nat)
                in_h nft -f - <<-'EOF'
			table inet b4box {
				chain nat_out { type nat hook postrouting priority srcnat - 10; policy accept;
					oifname != "b4h*" ip saddr 10.233.0.0/16 masquerade
				}
			}
		EOF
                ;;
        one) in_h "$nb" install "$ifx" 10.233.0.2 0 0 "$n.0/24:443" ;;
        thousand) in_h "$nb" install "$ifx" 10.233.0.2 1000 20 "$n.0/24:443" ;;
        esac
        i=$((i + 1))
done
"${pin_server[@]}" nsenter -t "$srv" -n "$nb" serve 443 >/dev/null 2>&1 & # nsenter execs
pids+=($!)
for c in $configs; do
        for _ in $(seq 50); do
                nsenter -t "${sbx[$c]}" -n "$nb" connect "${net[$c]}.10" 443 1 >/dev/null 2>&1 && break
                sleep 0.1
        done
done

raw=$dir/rounds
: >"$raw"
for r in $(seq "$rounds"); do
        for c in $(shuf -e $configs); do
                s=${sbx[$c]}
                a=${net[$c]}.10
                nsenter -t "$s" -n "${pin_client[@]}" "$nb" connect "$a" 443 100 >/dev/null # warm
                conn=$(nsenter -t "$s" -n "${pin_client[@]}" "$nb" connect "$a" 443 "$conns")
                gbit=$(nsenter -t "$s" -n "${pin_client[@]}" "$nb" stream "$a" 443 1)
                echo "$r $c $(awk '{ print $3, $5 }' <<<"$conn") $(awk '{ print $2 }' <<<"$gbit")" >>"$raw"
        done
done
echo "new connections and throughput through the rules: $rounds interleaved rounds of $conns" \
        "connections${B4_BENCH_PIN:+ (client on CPU 0, server on CPU 1)}"
/usr/bin/python3 - "$raw" <<'EOF'
import math, statistics, sys
rows = [l.split() for l in open(sys.argv[1])]
by = {}
for r, c, p50, p90, g in rows:
    by.setdefault(c, {})[int(r)] = (float(p50), float(p90), float(g))
def q(v, f):
    v = sorted(v)
    k = (len(v) - 1) * f
    lo, hi = math.floor(k), math.ceil(k)
    return v[lo] + (v[hi] - v[lo]) * (k - lo)
def ci(v):
    # distribution-free 95 % interval of the median: order statistics k and n-k+1, k the
    # largest with P(Binomial(n, 1/2) < k) <= 2.5 %
    v, n = sorted(v), len(v)
    cdf, k = 0.0, 0
    for i in range(n + 1):
        p = math.comb(n, i) / 2 ** n
        if cdf + p > 0.025:
            break
        cdf += p
        k = i + 1
    return (v[k - 1], v[n - k]) if k >= 1 else (float("nan"), float("nan"))
labels = {"none": "none", "nat": "nat only", "one": "1 thread", "thousand": "1000 threads"}
print("%-13s %8s %13s %8s %7s %13s %7s %13s %7s %6s" % ("config", "p50-us", "IQR-us",
      "p90-us", "/none", "95%-CI", "/nat", "95%-CI", "gbit", "/none"))
base, nat = by["none"], by["nat"]
for c in ("none", "nat", "one", "thousand"):
    d = by[c]
    p50 = [d[r][0] for r in d]
    ratio = [d[r][0] / base[r][0] for r in d if r in base]
    rnat = [d[r][0] / nat[r][0] for r in d if r in nat]
    gr = [d[r][2] / base[r][2] for r in d if r in base and base[r][2] > 0]
    lo, hi = ci(ratio)
    nlo, nhi = ci(rnat)
    print("%-13s %8.1f %6.1f-%-6.1f %8.1f %7.3f %6.3f-%-6.3f %7.3f %6.3f-%-6.3f %7.2f %6.2f" % (
          labels[c], statistics.median(p50), q(p50, .25), q(p50, .75),
          statistics.median(d[r][1] for r in d), statistics.median(ratio), lo, hi,
          statistics.median(rnat), nlo, nhi, statistics.median(d[r][2] for r in d),
          statistics.median(gr)))
one, many = by["one"], by["thousand"]
r1k = [many[r][0] / one[r][0] for r in many if r in one]
lo, hi = ci(r1k)
print("1000 threads / 1 thread (what the other threads cost): %.3f, 95%% CI %.3f-%.3f" % (
      statistics.median(r1k), lo, hi))
EOF
echo "element costs (microseconds; 200 runs each, after the population is installed)"
printf '%-48s %9s %9s %9s %9s\n' case pin-p50 port-p50 add-p50 delete-p50
for threads in 0 1000; do
        for list in "198.51.100.0/24:443" "api.example.test" "api.example.test:443" \
                "api.example.test:8000-8100"; do
                out=$(unshare --net -- "$nb" nft "$threads" 20 200 "$list")
                pin=$(awk '$1 == "pin_us" { print $3 }' <<<"$out")
                pinp=$(awk '$1 == "port_pin_us" { print $2 == "none" ? "-" : $3 }' <<<"$out")
                add=$(awk '$1 == "thread_add_us" { print $3 }' <<<"$out")
                del=$(awk '$1 == "thread_delete_us" { print $3 }' <<<"$out")
                printf '%-48s %9s %9s %9s %9s\n' "$threads others, allowlist $list" "$pin" "$pinp" \
                        "$add" "$del"
        done
done
