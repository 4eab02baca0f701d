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
sbx3=$(spawn_ns)
pids+=("$inet" "$sbx1" "$sbx2" "$sbx3")
sleep 0.2
in_inet() { nsenter -t "$inet" -n "$@"; }
in1() { nsenter -t "$sbx1" -n "$@"; }
in2() { nsenter -t "$sbx2" -n "$@"; }
in3() { nsenter -t "$sbx3" -n "$@"; }

. "$(dirname "$0")/net-internet.sh"
fake_internet_up
# a second upstream (tests/net/fake-dns.py): slow.test answered after 1.5 s, large TXT answers
in_inet ip addr add 192.0.2.54/32 dev up1
(exec nsenter -t "$inet" -n python3 "$(dirname "$0")/../net/fake-dns.py" 192.0.2.54 "$dir/fake.log" 1.5) &
pids+=($!)

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
sandbox "$sbx3" b4h3 2
ip -6 addr add 2001:db8:5::1/64 dev b4h1 nodad 2>/dev/null

nft -f "$table" || { echo "Bail out! cannot load $table"; exit 1; }
nft -f "$table" || { echo "Bail out! the table does not load twice"; exit 1; }

start_netd() { # veth gateway mode entries... ; sets port
        local veth=$1 gw=$2 mode=$3 log=$4
        shift 4
        local ifx fifo="$dir/$veth.port"
        ifx=$(ip -o link show dev "$veth" | cut -d: -f1)
        mkfifo "$fifo"
        "$netd" --ifindex "$ifx" --listen "$gw" --mode "$mode" --upstream "${UPSTREAM:-192.0.2.53}" \
                --pin-floor 1 --pin-cap 3 --audit "$dir/$veth.audit" -- "$@" >"$fifo" 2>"$log" &
        pids+=($!)
        eval "netd_$veth=$!"
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
# thread 3: allow + a denylist, through the fake upstream
UPSTREAM=192.0.2.54 start_netd b4h3 10.233.0.9 allow "$dir/netd3.log" other.test

echo "1..35"
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

# ---- hardening ----
check "netd runs under its seccomp filter (Seccomp: $(grep Seccomp: /proc/$netd_b4h1/status | tr -d '\t'))" \
        'grep -q "^Seccomp:.2" /proc/$netd_b4h1/status'
in3 dig +time=3 +tries=1 @10.233.0.9 slow.test >"$dir/slow.out" 2>&1 &
slowpid=$!
sleep 0.2
t0=$(date +%s%N)
out=$(in3 dig +short +time=3 +tries=1 @10.233.0.9 fast.test 2>&1)
ms=$((($(date +%s%N) - t0) / 1000000))
check "a slow upstream does not stall another query ($out in $ms ms)" \
        '[ "$out" = 192.0.2.10 ] && [ $ms -lt 1000 ] && kill -0 $slowpid 2>/dev/null'
wait $slowpid
check "the slow query is answered too ($(grep -c 192.0.2.10 "$dir/slow.out") answer)" \
        'grep -q "^slow.test.*192.0.2.10" "$dir/slow.out"'
bg=()
for i in $(seq 12); do # more than the 8 workers, all waiting on the slow upstream
        in3 dig +time=4 +tries=1 @10.233.0.9 slow.test >/dev/null 2>&1 &
        bg+=($!)
done
sleep 0.3
t0=$(date +%s%N)
out=$(in3 dig +time=3 +tries=1 @10.233.0.9 TXT other.test 2>&1 | grep -o "status: [A-Z]*")
ms=$((($(date +%s%N) - t0) / 1000000))
check "every worker busy upstream: what netd answers itself still comes at once ($out in $ms ms)" \
        '[ "$out" = "status: NXDOMAIN" ] && [ $ms -lt 1000 ]'
wait "${bg[@]}"
flags() { grep -o "flags: [a-z ]*;" | head -n1; }
out=$(in3 dig +ignore +time=2 +tries=1 @10.233.0.9 TXT big.test 2>&1)
check "a large answer over UDP: TC, no records ($(flags <<<"$out") $(grep -o "ANSWER: [0-9]*" <<<"$out"))" \
        'flags <<<"$out" | grep -q " tc" && grep -q "ANSWER: 0" <<<"$out"'
out=$(in3 dig +tcp +time=2 +tries=1 @10.233.0.9 TXT big.test 2>&1)
check "the same answer over TCP is whole ($(grep -o "ANSWER: [0-9]*" <<<"$out"), msg $(grep -o "MSG SIZE.*" <<<"$out"))" \
        'grep -q "ANSWER: 6" <<<"$out" && ! flags <<<"$out" | grep -q " tc"'
out=$(in3 dig +ignore +time=2 +tries=1 @10.233.0.9 TXT mid.test 2>&1)
out0=$(in3 dig +ignore +noedns +time=2 +tries=1 @10.233.0.9 TXT mid.test 2>&1)
check "an ~800 B answer fits EDNS's size over UDP, not 512 ($(grep -o "ANSWER: [0-9]*" <<<"$out"); $(flags <<<"$out0"))" \
        'grep -q "ANSWER: 3" <<<"$out" && flags <<<"$out0" | grep -q " tc"'
in3 curl -s -m 2 http://192.0.2.11:8080/hello >/dev/null 2>&1; rcb=$?
out=$(in3 dig +time=2 +tries=1 @10.233.0.9 other.test 2>&1 | grep -o "status: [A-Z]*")
in3 curl -s -m 2 http://192.0.2.11:8080/hello >/dev/null 2>&1; rca=$?
o10=$(in3 curl -s -m 2 http://192.0.2.10:8080/hello)
check "a denylisted name: $out, its address dropped before the sandbox asked (prefetched at start) and after (curl rc $rcb, $rca; $(grep -c "prefetch name=other.test verdict=denied" "$dir/netd3.log") prefetch)" \
        '[ "$out" = "status: NXDOMAIN" ] && [ $rcb -ne 0 ] && [ $rca -ne 0 ] && grep -q "prefetch name=other.test verdict=denied" "$dir/netd3.log"'
check "... and nothing else is ($o10)" '[ "$o10" = hello-internet ]'

# ---- audit ----
audit() { python3 -c 'import socket,sys; s=socket.socket(socket.AF_UNIX); s.connect(sys.argv[1]); sys.stdout.write(s.makefile().read())' "$dir/$1.audit"; }
in1 curl -s -m 2 http://192.0.2.11:8080/hello >/dev/null 2>&1
a1=$(audit b4h1)
aq() { python3 -c "import json,sys; d=json.loads(sys.argv[1]); print($2)" "$1"; }
check "audit: valid JSON, deny mode ($(aq "$a1" 'd["mode"], d["dns"]["queries"], d["dns"]["admitted"], d["dns"]["refused"]'))" \
        '[ "$(aq "$a1" "d[\"mode\"]")" = deny ]'
check "audit: an admitted query with its answer and pin" \
        '[ "$(aq "$a1" "[e for e in d[\"dns\"][\"events\"] if e[\"name\"]==\"allowed.test\" and e[\"admitted\"] and \"192.0.2.10\" in e[\"answers\"] and e.get(\"pinSeconds\",0)>0] != []")" = True ]'
check "audit: a refused query (other.test: $(aq "$a1" '[e["verdict"] for e in d["dns"]["events"] if e["name"]=="other.test"]'))" \
        '[ "$(aq "$a1" "[e for e in d[\"dns\"][\"events\"] if e[\"name\"]==\"other.test\" and not e[\"admitted\"] and e[\"verdict\"]==\"nxdomain-policy\"] != []")" = True ]'
check "audit: a destination with bytes ($(aq "$a1" '[(x["address"], x["port"], x["packets"], x["bytes"]) for x in d["destinations"]]'))" \
        '[ "$(aq "$a1" "[x for x in d[\"destinations\"] if x[\"address\"]==\"192.0.2.10\" and x[\"port\"]==8080 and x[\"protocol\"]==\"tcp\" and x[\"bytes\"]>0 and x[\"packets\"]>0] != []")" = True ]'
check "audit: denials counted per destination ($(aq "$a1" '[(x["address"], x["port"], x["packets"]) for x in d["denials"]]'))" \
        '[ "$(aq "$a1" "[x for x in d[\"denials\"] if x[\"address\"]==\"192.0.2.11\" and x[\"port\"]==8080 and x[\"packets\"]>=2] != []")" = True ]'
a2=$(audit b4h2)
check "audit: thread 2's is its own: no destination, allowed.test refused ($(aq "$a2" 'd["destinations"], [(e["name"], e["admitted"]) for e in d["dns"]["events"]]'))" \
        '[ "$(aq "$a2" "d[\"destinations\"]==[] and [e for e in d[\"dns\"][\"events\"] if e[\"name\"]==\"allowed.test\" and e[\"admitted\"]]==[] and d[\"denials\"]!=[]")" = True ]'
a3=$(audit b4h3)
check "audit: the denylisted name, denied with its answer ($(aq "$a3" '[(e["verdict"], e["answers"]) for e in d["dns"]["events"] if e["name"]=="other.test"]'))" \
        '[ "$(aq "$a3" "[e for e in d[\"dns\"][\"events\"] if e[\"name\"]==\"other.test\" and e[\"verdict\"]==\"denied\" and e[\"answers\"]==[\"192.0.2.11\"]] != []")" = True ]'
if3=$(ip -o link show dev b4h3 | cut -d: -f1)
kill "$netd_b4h3"
sleep 0.3
check "a stopped netd deletes its thread's audit elements" \
        '! nft list set inet b4box acct4 | grep -Eq "(\"b4h3\"|\b$if3) \." && ! nft list set inet b4box audited | grep -Eq "\"b4h3\"|\b$if3\b"'

sleep 9 # pin-cap 3 s + 5 s slack
in1 curl -s -m 2 http://192.0.2.10:8080/hello >/dev/null 2>&1; rc=$?
check "a pin expires with its TTL (rc $rc)" \
        '[ $rc -ne 0 ] && ! pinned b4h1 192.0.2.10'
