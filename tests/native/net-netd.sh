#!/usr/bin/env bash
# b4box-netd and the `inet b4box` table (src/lib/hostnet/b4box.nft) in a closed topology (TAP,
# root only). Everything happens in namespaces this test creates and kills: a "host"
# namespace (this script, after unshare) holding the table and netd; two sandbox namespaces
# behind veths b4h1/b4h2; an "internet" namespace with a fake upstream DNS (dnsmasq on
# 192.0.2.53, query log), a "foreign resolver" (198.51.100.53, its own log) and TCP servers.
# The internet routes only back to the host namespace, which has no other link: no packet
# leaves the topology. The thread elements are written here the way the provider writes them.
#   net-netd.sh B4BOX-NETD TABLE.nft
set -uo pipefail
netd=$(realpath "$1")
table=$(realpath "$2")
if [ "$(id -u)" -ne 0 ] || ! command -v nft >/dev/null || ! command -v dnsmasq >/dev/null ||
        ! command -v dig >/dev/null || ! command -v python3 >/dev/null ||
        ! command -v curl >/dev/null; then
        echo "1..0 # SKIP needs root, nft, dnsmasq, dig, python3 and curl"
        exit 0
fi
if [ -z "${B4_NET_INNER:-}" ]; then
        exec env B4_NET_INNER=1 unshare --net -- "$0" "$@"
fi
dir=$(mktemp -d)
pids=()
cleanup() {
        for p in "${pids[@]}"; do kill "$p" 2>/dev/null; done
        wait 2>/dev/null
        rm -rf "$dir"
}
trap cleanup EXIT
ip link set lo up
echo 1 >/proc/sys/net/ipv4/ip_forward

spawn_ns() { # a namespace kept by a sleeper; prints its pid
        unshare --net -- sleep 600 >/dev/null 2>&1 &
        echo $!
}
inet=$(spawn_ns)
sbx1=$(spawn_ns)
sbx2=$(spawn_ns)
pids+=("$inet" "$sbx1" "$sbx2")
sleep 0.2
in_inet() { nsenter -t "$inet" -n "$@"; }
in1() { nsenter -t "$sbx1" -n "$@"; }
in2() { nsenter -t "$sbx2" -n "$@"; }

. "$(dirname "$0")/net-internet.sh"
fake_internet_up

sandbox() { # sandbox pid, host veth, n: 10.233.0.(4n+1)/30 gateway, .(4n+2) sandbox
        local pid=$1 veth=$2 n=$3
        ip link add "$veth" type veth peer name "s$veth"
        ip link set "s$veth" netns "$pid"
        ip addr add "10.233.0.$((4 * n + 1))/30" dev "$veth"
        ip link set "$veth" up
        nsenter -t "$pid" -n ip link set lo up
        nsenter -t "$pid" -n ip link set "s$veth" name eth0
        nsenter -t "$pid" -n ip addr add "10.233.0.$((4 * n + 2))/30" dev eth0
        nsenter -t "$pid" -n ip link set eth0 up
        nsenter -t "$pid" -n ip route add default via "10.233.0.$((4 * n + 1))"
        nsenter -t "$pid" -n ip -6 addr add 2001:db8:5::2/64 dev eth0 nodad 2>/dev/null
}
sandbox "$sbx1" b4h1 0
sandbox "$sbx2" b4h2 1
ip -6 addr add 2001:db8:5::1/64 dev b4h1 nodad 2>/dev/null

nft -f "$table" || { echo "Bail out! cannot load $table"; exit 1; }
nft -f "$table" || { echo "Bail out! the table does not load twice"; exit 1; }

start_netd() { # veth gateway mode entries... ; sets port
        local veth=$1 gw=$2 mode=$3 log=$4
        shift 4
        local ifx fifo="$dir/$veth.port"
        ifx=$(ip -o link show dev "$veth" | cut -d: -f1)
        mkfifo "$fifo"
        "$netd" --ifindex "$ifx" --listen "$gw" --mode "$mode" --upstream 192.0.2.53 \
                --pin-floor 1 --pin-cap 3 -- "$@" >"$fifo" 2>"$log" &
        pids+=($!)
        read -r _ port <"$fifo"
        nft -f - <<EOF
add element inet b4box mode { $ifx : goto ${mode}_mode }
add element inet b4box dnsport { $ifx : $port }
add element inet b4box dnsin { $ifx . udp . $port, $ifx . tcp . $port }
add element inet b4box src4 { $ifx . ${gw%.*}.$((${gw##*.} + 1)) }
EOF
}
# thread 1: deny + allowlist (names, a wildcard, a CNAME'd name, a CIDR with a port, a
# private range, metadata only through 169.254.0.0/16 which must not open it)
start_netd b4h1 10.233.0.1 deny "$dir/netd1.log" allowed.test '*.wild.test' alias.test \
        private.test rebind10.test rebind127.test rebindmeta.test 198.51.100.0/24:443
if1=$(ip -o link show dev b4h1 | cut -d: -f1)
nft add element inet b4box cidr4 "{ $if1 . 198.51.100.0/24 . tcp . 443, $if1 . 198.51.100.0/24 . udp . 443 }"
# thread 2: deny + a different allowlist
start_netd b4h2 10.233.0.5 deny "$dir/netd2.log" other.test

echo "1..18"
n=0
check() { n=$((n + 1)); if eval "$2"; then echo "ok $n - $1"; else echo "not ok $n - $1"; fi; }
q() { grep -c "query\[A\] $1" "$2" 2>/dev/null || true; }
dig1() { in1 dig +short +time=2 +tries=1 "$@" 2>&1; }
# whether thread VETH has ADDRESS in pin4 (nft prints the ifindex as a name or a number)
# (grep reads all: with pipefail, an early exit would fail nft with SIGPIPE)
pinned() { nft list set inet b4box pin4 | grep -Ec "(\"$1\"|\b$(ip -o link show dev "$1" | cut -d: -f1)) \. $2 " >/dev/null; }

out=$(dig1 @10.233.0.1 allowed.test)
check "allowed name answered through netd ($out)" '[ "$out" = 192.0.2.10 ]'
check "its address is pinned for thread 1 ($(nft list set inet b4box pin4 | grep -o "elements.*"))" \
        'pinned b4h1 192.0.2.10'
out=$(in1 curl -s -m 3 http://192.0.2.10:8080/hello)
check "the pinned address is reachable" '[ "$out" = hello-internet ]'
before=$(q other.test "$dir/up.log")
out=$(in1 dig +time=2 +tries=1 @10.233.0.1 other.test 2>&1)
check "unlisted name: NXDOMAIN" 'grep -q "status: NXDOMAIN" <<<"$out"'
check "unlisted name: zero upstream queries" '[ "$(q other.test "$dir/up.log")" = "$before" ]'
in1 curl -s -m 2 http://192.0.2.11:8080/hello >/dev/null 2>&1; rc=$?
check "a direct IP never resolved is refused (curl rc $rc)" '[ $rc -ne 0 ]'
fbefore=$(q allowed.test "$dir/foreign.log")
out=$(dig1 @198.51.100.53 allowed.test)
check "DNS to a foreign resolver is intercepted ($out)" \
        '[ "$out" = 192.0.2.10 ] && [ "$(q allowed.test "$dir/foreign.log")" = "$fbefore" ]'
out=$(dig1 +tcp @198.51.100.53 allowed.test)
check "TCP DNS is intercepted and answered ($out)" '[ "$out" = 192.0.2.10 ]'
out=$(in1 dig +tcp +time=2 +tries=1 @198.51.100.53 other.test 2>&1)
check "TCP DNS is filtered" 'grep -q "status: NXDOMAIN" <<<"$out"'
out=$(for h in rebind10.test rebind127.test rebindmeta.test; do
        in1 dig +time=2 +tries=1 @10.233.0.1 "$h" | grep -o "status: [A-Z]*"; done | tr '\n' ' ')
check "rebinding answers refused (10.x, 127.x, metadata: $out)" \
        '[ "$out" = "status: NXDOMAIN status: NXDOMAIN status: NXDOMAIN " ]'
out=$(dig1 @10.233.0.1 alias.test | tr '\n' ' ')
check "CNAME chain answered and its end pinned ($out; $(nft list set inet b4box pin4 | tr -s "\n\t" "  " | grep -o "elements.*"))" \
        '[ "$out" = "target.test. 192.0.2.12 " ] && pinned b4h1 192.0.2.12'
out=$(dig1 @10.233.0.1 b.wild.test; dig1 @10.233.0.1 wild.test | grep -c . )
check "wildcard admits a subdomain, not the apex ($(tr '\n' ' ' <<<"$out"))" \
        '[ "$(head -n1 <<<"$out")" = 192.0.2.13 ] && [ "$(tail -n1 <<<"$out")" = 0 ]'
out=$(dig1 @10.233.0.1 AAAA allowed.test; in1 dig +time=2 +tries=1 @10.233.0.1 AAAA allowed.test | grep -o "status: [A-Z]*")
check "AAAA: NOERROR without records ($out)" '[ "$out" = "status: NOERROR" ]'
in1 curl -s -m 2 -g 'http://[2001:db8:5::1]:8080/' >/dev/null 2>&1; rc=$?
check "IPv6 from a listed sandbox is refused (rc $rc)" '[ $rc -ne 0 ]'
o443=$(in1 curl -s -m 2 http://198.51.100.7:443/hello)
in1 curl -s -m 2 http://198.51.100.7:8080/hello >/dev/null 2>&1; rc80=$?
check "a CIDR:port entry opens that port only (443: $o443; 8080 rc $rc80)" \
        '[ "$o443" = hello-internet ] && [ $rc80 -ne 0 ]'
out=$(in2 dig +short +time=2 +tries=1 @10.233.0.5 allowed.test 2>&1; in2 curl -s -m 2 http://192.0.2.10:8080/hello; echo " rc=$?")
check "thread 2 sees neither thread 1's names nor its pins ($(tr '\n' ' ' <<<"$out"))" \
        '! grep -q hello-internet <<<"$out" && ! grep -q 192.0.2.10 <<<"$out"'
in1 curl -s -m 2 http://10.233.0.1:8080/ >/dev/null 2>&1; rc=$?
check "the host (gateway) is unreachable but for DNS (rc $rc)" '[ $rc -ne 0 ]'
sleep 9 # pin-cap 3 s + 5 s slack
in1 curl -s -m 2 http://192.0.2.10:8080/hello >/dev/null 2>&1; rc=$?
check "a pin expires with its TTL (rc $rc)" \
        '[ $rc -ne 0 ] && ! pinned b4h1 192.0.2.10'
