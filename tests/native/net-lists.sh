#!/usr/bin/env bash
# Network lists end to end through the native provider (TAP, root only): `b4box exec` in
# threads whose b4box.json has an allowlist (mode deny) or a denylist (mode allow), or whose
# thread resolver answers its own narrower allowlist (a wider one is refused), in the
# closed topology of net-netd.sh (a "host" namespace where b4box runs, an "internet"
# namespace with a fake upstream DNS on 192.0.2.53 logging every query, a "foreign resolver"
# on 198.51.100.53 and HTTP servers; no route to any real network). The provider makes the
# veth, the inet b4box elements and the thread's b4box-netd; release removes them.
#   net-lists.sh B4BOX
set -uo pipefail
b4box=$(realpath "$1")
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
        for t in lists-a lists-b lists-d lists-m lists-e lists-n lists-t; do
                (cd "$dir/$t" 2>/dev/null && "$b4box" --state "$dir/st" destroy "$t" >/dev/null 2>&1)
        done
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
pids+=("$inet")
sleep 0.2
in_inet() { nsenter -t "$inet" -n "$@"; }

. "$(dirname "$0")/net-internet.sh"
fake_internet_up
in_inet ip route add 10.233.0.0/16 via 192.0.2.1

config() { # thread mode list-json
        mkdir -p "$dir/$1"
        printf '{"sandbox":{"provider":{"type":"native","scope":"net-lists"},"network":{"mode":"%s","%s":%s,"dns":{"upstream":["192.0.2.53"],"pinFloorSeconds":1,"pinCapSeconds":3}}}}\n' \
                "$2" "$([ "$2" = deny ] && echo allowlist || echo denylist)" "$3" >"$dir/$1/b4box.json"
}
config lists-a deny '["allowed.test","alias.test","rebind10.test","198.51.100.0/24:443","0.0.0.0/0:8081","port.test:443","*.wild.test:8079-8080"]'
config lists-b deny '["other.test"]'
config lists-d allow '["other.test","192.0.2.12/32"]'
config lists-m deny '["169.254.0.0/16"]'
config lists-e deny '["169.254.169.254:8080"]'
mkdir -p "$dir/lists-n" && printf '{"sandbox":{"provider":{"type":"native","scope":"net-lists"},"network":{"mode":"deny"}}}\n' >"$dir/lists-n/b4box.json"
thread_config() { # thread app-allowlist resolver-allowlist: a thread resolver's own list
        mkdir -p "$dir/$1/ws" && echo ws >"$dir/$1/ws/f.txt"
        cat >"$dir/$1/resolve.sh" <<EOF
#!/bin/sh
cat >/dev/null
echo '{"workspace":{"source":{"directory":"ws","include":["f.txt"]}},"policy":{"network":{"mode":"deny","allowlist":$3}}}'
EOF
        chmod +x "$dir/$1/resolve.sh"
        printf '{"sandbox":{"provider":{"type":"native","scope":"net-lists"},"network":{"mode":"deny","allowlist":%s,"dns":{"upstream":["192.0.2.53"],"pinFloorSeconds":1,"pinCapSeconds":3}},"thread":{"command":["./resolve.sh"]}}}\n' \
                "$2" >"$dir/$1/b4box.json"
}
thread_config lists-t '["allowed.test","other.test"]' '["allowed.test"]'
thread_config lists-w '["allowed.test"]' '["allowed.test","other.test"]'
x() { local t=$1; shift; (cd "$dir/$t" && "$b4box" --state "$dir/st" exec --thread "$t" -- "$@" 2>&1); }

echo "1..28"
n=0
check() { n=$((n + 1)); if eval "$2"; then echo "ok $n - $1"; else echo "not ok $n - $1"; fi; }
flat() { tr '\n' ' ' <<<"$1" | sed 's/ *$//'; }
q() { grep -c "query\[A\] $1" "$2" 2>/dev/null || true; }

out=$(x lists-a 'dig +short +time=2 +tries=1 allowed.test; curl -s -m 3 http://allowed.test:8080/hello')
check "allowlist: an allowed name resolves and is reachable ($(tr '\n' ' ' <<<"$out"))" \
        '[ "$(flat "$out")" = "192.0.2.10 hello-internet" ]'
out=$(x lists-a 'cat /etc/resolv.conf')
check "the sandbox's resolv.conf names its gateway ($(grep nameserver <<<"$out"))" \
        'grep -q "^nameserver 10\.233\.[0-9]*\.[0-9]*$" <<<"$out"'
veth=$(ip -br link | awk '/^b4h/ { sub(/@.*/, "", $1); print $1; exit }')
check "a b4box-netd runs for the thread and its elements are in inet b4box" \
        'ls "$dir"/st/native/run/*.netd >/dev/null 2>&1 && [ "$(nft list map inet b4box mode | grep -c "goto deny_mode")" -gt 0 ]'
before=$(q other.test "$dir/up.log")
out=$(x lists-a 'dig +time=2 +tries=1 @198.51.100.53 other.test | grep -o "status: [A-Z]*"')
check "an unlisted name: NXDOMAIN from any resolver, nothing upstream ($out)" \
        '[ "$out" = "status: NXDOMAIN" ] && [ "$(q other.test "$dir/up.log")" = "$before" ] && [ "$(q other.test "$dir/foreign.log")" = 0 ]'
out=$(x lists-a 'curl -s -m 2 http://192.0.2.11:8080/hello; echo rc=$?')
check "a direct IP never resolved is refused ($out)" 'grep -q "rc=[1-9]" <<<"$out"'
out=$(x lists-a 'dig +short +tcp +time=2 +tries=1 @198.51.100.53 allowed.test')
check "TCP DNS to a foreign resolver goes to netd ($out)" '[ "$out" = 192.0.2.10 ]'
out=$(x lists-a 'dig +time=2 +tries=1 rebind10.test | grep -o "status: [A-Z]*"')
check "rebinding (allowed name -> 10.99.0.5) refused ($out)" '[ "$out" = "status: NXDOMAIN" ]'
out=$(x lists-a 'dig +short +time=2 +tries=1 alias.test | tail -n1; curl -s -m 3 http://192.0.2.12:8080/hello')
check "a CNAME chain's address is pinned ($(tr '\n' ' ' <<<"$out"))" '[ "$(flat "$out")" = "192.0.2.12 hello-internet" ]'
out=$(x lists-a 'curl -s -m 2 http://198.51.100.7:443/hello; echo " rc=$?"; curl -s -m 2 http://198.51.100.7:8080/hello; echo " rc=$?"')
check "a CIDR:port entry opens that port only ($(tr '\n' ' ' <<<"$out"))" \
        '[ "$(flat "$out")" = "hello-internet  rc=0  rc=7" ]'
out=$(x lists-a 'curl -s -m 3 http://port.test:443/hello; echo " rc=$?"; curl -s -m 2 http://192.0.2.14:8080/hello; echo " rc=$?"')
# name:port pins go to the thread's own sets (pins_<iif>: one port; pinsr_<iif>: a range),
# never to the shared pin4p
ifx=$(ip -o link show dev "$veth" | cut -d: -f1) # /sys is the outer namespace's
check "a name:port entry pins its addresses for that port only, in pins_$ifx ($(flat "$out"))" \
        '[ "$(flat "$out")" = "hello-internet  rc=0  rc=7" ] && [ "$(nft list set inet b4box "pins_$ifx" | grep -c "192.0.2.14 . tcp . 443")" -gt 0 ] && ! nft list set inet b4box pin4p | grep -q "192.0.2.14"'
out=$(x lists-a 'curl -s -m 3 http://b.wild.test:8080/hello; echo " rc=$?"; curl -s -m 2 http://192.0.2.13:443/hello; echo " rc=$?"')
check "a name:port-port entry pins its addresses for that range only, in pinsr_$ifx ($(flat "$out"))" \
        '[ "$(flat "$out")" = "hello-internet  rc=0  rc=7" ] && [ "$(nft list set inet b4box "pinsr_$ifx" | grep -c "192.0.2.13 . tcp . 8079-8080")" -gt 0 ]'
out=$(x lists-a 'curl -s -m 2 http://169.254.169.254:8081/; echo "rc=$?"; curl -s -m 2 http://10.99.0.5:8081/; echo "rc=$?"')
check "0.0.0.0/0 opens neither metadata nor private ranges ($(tr '\n' ' ' <<<"$out"))" \
        '[ "$(grep -c "rc=[1-9]" <<<"$out")" = 2 ]'
kill "$(cut -d" " -f1 "$(ls "$dir"/st/native/run/*.netd | head -n1)")"
sleep 0.2
[ -n "${B4_NET_DEBUG:-}" ] && { cat "$dir"/st/native/run/*.netd; ps -ef | grep [n]etd; } >&2
out=$(x lists-a 'dig +short +time=2 +tries=1 allowed.test; curl -s -m 3 http://192.0.2.10:8080/hello')
check "a killed netd is restarted on the next exec ($(flat "$out"))" \
        '[ "$(flat "$out")" = "192.0.2.10 hello-internet" ] && [ "$(grep -c "netd: ready" "$dir"/st/native/run/*.netd.log)" = 2 ]'
out=$(x lists-b 'dig +short +time=2 +tries=1 allowed.test; curl -s -m 2 http://192.0.2.10:8080/hello; echo rc=$?')
check "another thread sees neither thread a's names nor its pins ($(tr '\n' ' ' <<<"$out"))" \
        '! grep -q 192.0.2.10 <<<"$out" && ! grep -q hello-internet <<<"$out"'
out=$(x lists-d 'dig +time=2 +tries=1 other.test | grep -o "status: [A-Z]*"; curl -s -m 3 http://192.0.2.12:8080/hello; echo " rc=$?"; dig +short +time=2 +tries=1 allowed.test; curl -s -m 3 http://192.0.2.10:8080/hello')
check "denylist drops what it names and nothing else ($(tr '\n' ' ' <<<"$out"))" \
        '[ "$(flat "$out")" = "status: NXDOMAIN  rc=7 192.0.2.10 hello-internet" ]'
out=$(x lists-d 'curl -s -m 2 http://192.0.2.11:8080/hello; echo "rc=$?"')
check "a denylisted name's address is dropped once it was asked ($out)" 'grep -q "^rc=[1-9]" <<<"$out"'
x lists-a 'curl -s -m 2 http://192.0.2.11:8080/hello' >/dev/null
net() { (cd "$dir/$1" && "$b4box" --state "$dir/st" network "$1" --json 2>&1); }
aq() { python3 -c "import json,sys; d=json.loads(sys.argv[1]); print($2)" "$1" 2>&1; }
a=$(net lists-a)
check "b4box network: enforced, the admitted query, the refused one ($(aq "$a" 'd["enforced"], d.get("reason"), d["dns"]["admitted"], d["dns"]["refused"]'))" \
        '[ "$(aq "$a" "d[\"enforced\"] and d[\"provider\"]==\"native\" and any(e[\"name\"]==\"allowed.test\" and e[\"admitted\"] for e in d[\"dns\"][\"events\"])")" = True ]'
check "b4box network: a destination with bytes, a denial counted ($(aq "$a" '[(x["address"], x["port"], x["bytes"]) for x in d["destinations"]], [(x["address"], x["port"], x["packets"]) for x in d["denials"]]'))" \
        '[ "$(aq "$a" "any(x[\"address\"]==\"192.0.2.10\" and x[\"bytes\"]>0 for x in d[\"destinations\"]) and any(x[\"address\"]==\"192.0.2.11\" and x[\"packets\"]>0 for x in d[\"denials\"])")" = True ]'
a=$(net lists-n)
check "b4box network on a thread without lists: not enforced, with the reason ($(aq "$a" 'd["enforced"], d.get("reason")'))" \
        '[ "$(aq "$a" "d[\"enforced\"] is False and \"network list\" in d[\"reason\"]")" = True ]'
out=$(x lists-d 'curl -s -m 2 http://169.254.169.254:8080/; echo "rc=$?"')
check "allow mode with a denylist: metadata still blocked ($out)" 'grep -q "rc=[1-9]" <<<"$out"'
out=$(x lists-m 'curl -s -m 2 http://169.254.169.254:8080/hello; echo "rc=$?"')
check "169.254.0.0/16 does not open the metadata address ($out)" 'grep -q "^rc=[1-9]" <<<"$out"'
out=$(x lists-e 'curl -s -m 3 http://169.254.169.254:8080/hello; curl -s -m 2 http://169.254.169.254:443/hello; echo "rc=$?"')
check "the metadata address named exactly (with its port) opens it, and only that port ($(flat "$out"))" \
        '[ "$(flat "$out")" = "hello-internet rc=7" ]'
out=$(x lists-n 'dig +time=1 +tries=1 allowed.test >/dev/null 2>&1; echo "rc=$?"; ip -br link | cut -d" " -f1 | tr "\n" " "')
check "deny without lists: no DNS at all, only lo ($(flat "$out"))" '[ "$(flat "$out")" = "rc=9 lo" ]'
out=$(x lists-t 'dig +short +time=2 +tries=1 allowed.test; dig +time=2 +tries=1 other.test | grep -o "status: [A-Z]*"')
check "a resolver's narrower allowlist is the one enforced ($(flat "$out"))" \
        '[ "$(flat "$out")" = "192.0.2.10 status: NXDOMAIN" ]'
out=$(x lists-w 'true'; echo "rc=$?")
check "a resolver's allowlist wider than the app's is refused ($(flat "$out"))" \
        'grep -q "network.allowlist\[1\] \"other.test\" is not inside any entry" <<<"$out" && grep -q "rc=[1-9]" <<<"$out"'
mkdir -p "$dir/lists-u" && printf '{"sandbox":{"provider":{"type":"native","scope":"net-lists"},"network":{"mode":"deny","allowlist":["allowed.test"]}}}\n' >"$dir/lists-u/b4box.json"
: >"$dir/empty.conf"
nveth=$(ip -br link | grep -c "^b4h")
out=$(cd "$dir/lists-u" && unshare -m sh -c 'mount --bind "$1" /etc/resolv.conf && exec "$2" --state "$3" exec --thread lists-u -- true' sh "$dir/empty.conf" "$b4box" "$dir/st" 2>&1; echo "rc=$?")
check "names without any upstream resolver: refused at acquire ($(flat "$out"))" \
        'grep -q "no upstream resolver" <<<"$out" && grep -q "rc=[1-9]" <<<"$out" && [ "$(ip -br link | grep -c "^b4h")" = "$nveth" ]'
for t in lists-a lists-b lists-d lists-m lists-e lists-n lists-t; do (cd "$dir/$t" && "$b4box" --state "$dir/st" destroy "$t" >/dev/null 2>&1); done
# release deletes the veth and the (inert) elements in a detached grandchild: up to 2 s
settled() { for _ in $(seq 40); do "$@" && return 0; sleep 0.05; done; return 1; }
no_veth() { [ -z "$(ip -br link | grep "^b4h")" ]; }
check "release leaves no netd record or log, no veth" \
        '! ls "$dir"/st/native/run/*.netd* >/dev/null 2>&1 && settled no_veth'
no_elements() {
        [ -z "$(nft list map inet b4box mode | grep -o "goto")" ] && [ -z "$(nft list set inet b4box src4 | grep -o "10\.233")" ] &&
                [ -z "$(nft list set inet b4box masq4 | grep -o "10\.233")" ]
}
check "release leaves no thread element in inet b4box" 'settled no_elements'
