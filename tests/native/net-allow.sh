#!/usr/bin/env bash
# Network allow/deny end to end (TAP, root only). Everything happens in namespaces this test
# creates: a "host" namespace where b4box runs, and an "internet" namespace (192.0.2.2, plus a
# fake metadata address 169.254.169.254) joined to it by a veth; no route to a real network.
# Audit H4: a "host" service bound to [::] must be unreachable over IPv6 too (the host veth's
# link-local address, the host's own global address), as it is over IPv4.
# Fast plumbing (issue 13 item 4): nothing is exec'd to make or remove the network (strace
# counts execve of ip/iptables/ip6tables/nft), delete leaves no link and no element behind,
# and an iptables FORWARD policy of DROP (Docker's) does not cut allow mode off.
set -uo pipefail
b4box=$(realpath "$1")
if [ "$(id -u)" -ne 0 ] || ! command -v curl >/dev/null || ! command -v python3 >/dev/null ||
        ! command -v nft >/dev/null || ! command -v iptables >/dev/null ||
        ! command -v strace >/dev/null; then
        echo "1..0 # SKIP needs root, curl, python3, nft, iptables and strace"
        exit 0
fi
if [ -z "${B4_NET_INNER:-}" ]; then
        exec env B4_NET_INNER=1 unshare --net -- "$0" "$@"
fi
dir=$(mktemp -d)
pids=()
cleanup() {
        "$b4box" --state "$dir/st" destroy net-a >/dev/null 2>&1
        "$b4box" --state "$dir/st" destroy net-f >/dev/null 2>&1
        (cd "$dir/deny" && "$b4box" --state "$dir/st" destroy net-d >/dev/null 2>&1)
        for p in "${pids[@]}"; do kill "$p" 2>/dev/null; done
        rm -rf "$dir"
}
trap cleanup EXIT
cd "$dir" || exit 1
ip link set lo up
echo 1 >/proc/sys/net/ipv4/ip_forward
unshare --net -- sleep 600 &
inet=$!
pids+=("$inet")
sleep 0.2
ip link add inet0 type veth peer name inet1
ip link set inet1 netns "$inet"
ip addr add 192.0.2.1/24 dev inet0
ip addr add 2001:db8::1/64 dev inet0 nodad
ip link set inet0 up
ip route add 169.254.169.254/32 via 192.0.2.2
in_inet() { nsenter -t "$inet" -n "$@"; }
in_inet ip link set lo up
in_inet ip addr add 192.0.2.2/24 dev inet1
in_inet ip addr add 169.254.169.254/32 dev inet1
in_inet ip link set inet1 up
in_inet ip route add default via 192.0.2.1
mkdir -p "$dir/www" && echo hello-internet >"$dir/www/hello"
(cd "$dir/www" && exec nsenter -t "$inet" -n python3 -m http.server 8080 --bind 0.0.0.0) \
        >/dev/null 2>&1 &
pids+=($!)
(cd "$dir/www" && exec python3 -m http.server 8081 --bind 0.0.0.0) >/dev/null 2>&1 &
pids+=($!)
(cd "$dir/www" && exec python3 -m http.server 8086 --bind ::) >/dev/null 2>&1 &
pids+=($!)
for _ in $(seq 50); do
        curl -s -m 1 http://192.0.2.2:8080/hello >/dev/null && curl -s -m 1 http://192.0.2.1:8081/hello >/dev/null &&
                curl -s -m 1 -g 'http://[2001:db8::1]:8086/hello' >/dev/null && break
        sleep 0.1
done

# The link-local address a veth gets from its MAC (EUI-64), whether or not it was assigned.
eui64_ll() {
        local a b c d e f
        IFS=: read -r a b c d e f <<<"$1"
        printf 'fe80::%x:%x:%x:%x' $(((0x$a ^ 2) << 8 | 0x$b)) $((0x$c << 8 | 0xff)) \
                $((0xfe << 8 | 0x$d)) $((0x$e << 8 | 0x$f))
}

echo "1..15"
n=0
check() { n=$((n + 1)); if eval "$2"; then echo "ok $n - $1"; else echo "not ok $n - $1"; fi; }
x() { "$b4box" --state "$dir/st" "$@"; }

# the tools the old plumbing ran; the keeper and the sandbox's own commands may exec
plumbing='/(ip|iptables|ip6tables|iptables-nft|ip6tables-nft|nft|xtables-nft-multi)"'
timeout 60 strace -f -b execve -qq -e trace=execve -o "$dir/acquire.strace" "$b4box" --state "$dir/st" exec --thread net-a -- true
check "acquire execs no ip/iptables/nft ($(grep -cE "execve\(\"[^\"]*$plumbing" "$dir/acquire.strace"))" \
        '[ -s "$dir/acquire.strace" ] && ! grep -qE "execve\(\"[^\"]*$plumbing" "$dir/acquire.strace"'
out=$(x exec --thread net-a -- curl -s -m 5 http://192.0.2.2:8080/hello 2>&1)
check "allow: the sandbox reaches the internet through NAT" '[ "$out" = hello-internet ]'
x exec --thread net-a -- curl -s -m 2 http://169.254.169.254:8080/hello >/dev/null 2>&1; rc=$?
check "allow: the metadata address is unreachable" '[ $rc -ne 0 ]'
x exec --thread net-a -- curl -s -m 2 http://192.0.2.1:8081/hello >/dev/null 2>&1; rc=$?
check "allow: the host's own addresses are unreachable" '[ $rc -ne 0 ]'
veth=$(ip -br link | awk '/^b4h/ { sub(/@.*/, "", $1); print $1; exit }')
mac=$(ip -br link show dev "$veth" | awk '{ print $3 }')
targets="$(eui64_ll "$mac") $(ip -6 -o addr show dev "$veth" | awk '{ sub(/\/.*/, "", $4); print $4 }')"
check "H4 allow: no IPv6 on the host veth ($veth: $(ip -6 -o addr show dev "$veth" | awk '{print $4}'))" \
        '[ "$(cat "/proc/sys/net/ipv6/conf/$veth/disable_ipv6")" = 1 ] && [ -z "$(ip -6 -o addr show dev "$veth")" ]'
out=$(x exec --thread net-a -- 'cat /proc/sys/net/ipv6/conf/eth0/disable_ipv6; ip -6 -o addr show dev eth0' 2>&1)
check "H4 allow: no IPv6 on the sandbox's eth0 ($(tr '\n' ' ' <<<"$out"))" '[ "$out" = 1 ]'
cmd=""
for t in $targets; do cmd+="curl -s -m 2 -g 'http://[$t%eth0]:8086/hello'; echo \" $t rc=\$?\"; "; done
cmd+="curl -s -m 2 -g 'http://[2001:db8::1]:8086/hello'; echo ' 2001:db8::1 rc='\$?"
out=$(x exec --thread net-a -- "$cmd" 2>&1)
check "H4 allow: the host's [::] service is unreachable over IPv6 ($(tr '\n' ' ' <<<"$out"))" \
        '! grep -q hello-internet <<<"$out" && ! grep -q " rc=0" <<<"$out" && [ -n "$targets" ]'
ifx=$(ip -o link show dev "$veth" | cut -d: -f1)
key="(\"$veth\"|$ifx)" # nft prints an iface_index by name while the link exists
check "allow: the thread's elements (mode open_mode, src4, masq4; ifindex $ifx)" \
        'grep -qE "$key : goto open_mode" <<<"$(nft list map inet b4box mode)" && grep -qE "$key \. 10\.233\." <<<"$(nft list set inet b4box src4)" && grep -q "10\.233\." <<<"$(nft list set inet b4box masq4)"'
timeout 60 strace -f -b execve -qq -e trace=execve -o "$dir/delete.strace" "$b4box" --state "$dir/st" destroy net-a >/dev/null
check "delete execs no ip/iptables/nft" \
        '[ -s "$dir/delete.strace" ] && ! grep -qE "execve\(\"[^\"]*$plumbing" "$dir/delete.strace"'
no_leftovers() {
        ! grep -q "^b4h" <<<"$(ip -br link)" && ! grep -q " : goto" <<<"$(nft list map inet b4box mode)" && ! grep -q "10\.233\." <<<"$(nft list set inet b4box src4)" &&
                ! grep -q "10\.233\." <<<"$(nft list set inet b4box masq4)"
}
# release deletes the veth (going with the keeper's namespace anyway) and the (inert)
# elements in a detached grandchild: give it up to 2 s
settled() { for _ in $(seq 40); do "$@" && return 0; sleep 0.05; done; return 1; }
check "release removes the veth and every element (no tagged iptables rule either)" \
        'settled no_leftovers && ! iptables -S | grep -q b4box: && ! iptables -t nat -S | grep -q b4box:'
iptables -P FORWARD DROP
out=$(x exec --thread net-f -- curl -s -m 5 http://192.0.2.2:8080/hello 2>&1)
check "FORWARD policy DROP (iptables-nft): allow mode still reaches the internet" '[ "$out" = hello-internet ]'
# the drop is real: without b4box's appended accepts the same flow dies
for h in $(nft -a list chain ip filter FORWARD | awk '/b4box-coexist/ { print $NF }'); do
        nft delete rule ip filter FORWARD handle "$h"
done
x exec --thread net-f -- curl -s -m 2 http://192.0.2.2:8080/hello >/dev/null 2>&1; rc=$?
check "FORWARD policy DROP without b4box's accepts: dropped (rc=$rc)" '[ $rc -ne 0 ]'
row=$(x check 2>&1 | grep "^network forward")
check "FORWARD policy DROP: b4box check reports it ($row)" 'grep -q "policy DROP" <<<"$row"'
x destroy net-f >/dev/null
iptables -P FORWARD ACCEPT
mkdir -p "$dir/deny"
echo '{"sandbox":{"provider":{"type":"native","scope":"net-test"},"network":{"mode":"deny"}}}' \
        >"$dir/deny/b4box.json"
out=$(cd "$dir/deny" && "$b4box" --state "$dir/st" exec --thread net-d -- \
        'curl -s -m 2 http://192.0.2.2:8080/hello; echo rc=$?; ip -br link | cut -d" " -f1 | tr "\n" " "' 2>&1)
check "deny: no route out" 'grep -q "rc=[1-9]" <<<"$out"'
check "deny: only lo" 'grep -q "^rc=[0-9]*$(printf "\n")*lo $" <<<"$out" || [ "$(tail -n1 <<<"$out")" = "lo " ]'
