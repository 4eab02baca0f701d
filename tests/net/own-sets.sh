#!/usr/bin/env bash
# A thread's CIDRs in a set and chain of its own (b4box.nft), enforced on real packets (TAP,
# root only). Inside `unshare --net` (the "host"): 48 threads of inert ifindexes with CIDR
# allowlists, and three real sandboxes behind veths b4h1-b4h3 in namespaces of their own:
#   A  deny, allowlist 198.51.100.0/24:443      B  deny, allowlist 198.51.100.0/24:80
#   C  allow, denylist 198.51.100.0/24:80
# and a server namespace on 198.51.100.10 accepting TCP on 80 and 443. Deleting A's
# elements (by its record, as the teardown does) leaves B's and C's enforced and the other
# threads' sets and chains whole; A is closed while it has none; adding it again restores
# it. No packet leaves the namespaces made here.
#   own-sets.sh NFT_THREAD
set -uo pipefail
tool=$(realpath "$1")
if [ "$(id -u)" -ne 0 ] || ! command -v nft >/dev/null || ! command -v python3 >/dev/null; then
        echo "1..0 # SKIP needs root, nft and python3"
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
srv=$(spawn_ns)
pids+=("$srv")
sbx=()
for i in 1 2 3; do
        p=$(spawn_ns)
        pids+=("$p")
        sbx+=("$p")
done
sleep 0.2

ip link add up0 type veth peer name up1
ip link set up1 netns "$srv"
ip addr add 198.51.100.1/24 dev up0
ip link set up0 up
nsenter -t "$srv" -n ip link set lo up
nsenter -t "$srv" -n ip addr add 198.51.100.10/24 dev up1
nsenter -t "$srv" -n ip link set up1 up
cat >"$dir/serve.py" <<'EOF'
import socket, threading
def serve(port):
    s = socket.socket()
    s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    s.bind(("198.51.100.10", port))
    s.listen(64)
    while True:
        c, _ = s.accept()
        c.close()
for p in (80, 443):
    threading.Thread(target=serve, args=(p,), daemon=True).start()
threading.Event().wait()
EOF
(exec nsenter -t "$srv" -n python3 "$dir/serve.py") >/dev/null 2>&1 &
pids+=($!)
listening() { [ "$(nsenter -t "$srv" -n ss -Htln | grep -cE '198\.51\.100\.10:(80|443) ')" = 2 ]; }
for _ in $(seq 100); do listening && break; sleep 0.1; done
listening || { echo "Bail out! the server does not listen"; exit 1; }

for i in 1 2 3; do # sandbox i: b4h<i>, 10.233.0.(4i+1)/30 gateway, .(4i+2) sandbox
        p=${sbx[$((i - 1))]}
        ip link add "b4h$i" type veth peer name "s$i"
        ip link set "s$i" netns "$p"
        ip addr add "10.233.0.$((4 * i + 1))/30" dev "b4h$i"
        ip link set "b4h$i" up
        nsenter -t "$p" -n ip link set lo up
        nsenter -t "$p" -n ip addr add "10.233.0.$((4 * i + 2))/30" dev "s$i"
        nsenter -t "$p" -n ip link set "s$i" up
        nsenter -t "$p" -n ip route add default via "10.233.0.$((4 * i + 1))"
done
ifx() { ip -o link show dev "b4h$1" | cut -d: -f1; }
add() { # sandbox mode entries...: its record in $dir/rec<i>
        local i=$1
        shift
        "$tool" add "$(ifx "$i")" "10.233.0.$((4 * i + 2))" "$@" >"$dir/rec$i"
}
# connects SANDBOX PORT: whether a TCP connect from sandbox i to the server's PORT succeeds
connects() {
        nsenter -t "${sbx[$(($1 - 1))]}" -n timeout 3 bash -c "exec 3<>/dev/tcp/198.51.100.10/$2" \
                2>/dev/null
}
n=0
fails=0
check() { # description command
        n=$((n + 1))
        if eval "$2"; then
                echo "ok $n - $1"
        else
                echo "not ok $n - $1"
                fails=$((fails + 1))
        fi
}
own_chains() { nft list table inet b4box | grep -c "chain thread_"; }
echo "1..12"

"$tool" fill 48 || { echo "Bail out! cannot install 48 threads"; exit 1; }
add 1 deny 198.51.100.0/24:443 && add 2 deny 198.51.100.0/24:80 &&
        add 3 allow 198.51.100.0/24:80 || { echo "Bail out! cannot install the sandboxes"; exit 1; }
check "51 threads, each with a chain of its own ($(own_chains))" '[ "$(own_chains)" = 51 ]'
check "A (allowlist :443) reaches :443 and not :80" 'connects 1 443 && ! connects 1 80'
check "B (allowlist :80) reaches :80 and not :443" 'connects 2 80 && ! connects 2 443'
check "C (denylist :80) reaches :443 and not :80" 'connects 3 443 && ! connects 3 80'

before=$(nft list set inet b4box cidrs_200007)
"$tool" del "$dir/rec1"
check "A's set and chain are gone, the 50 others stay" \
        '[ "$(own_chains)" = 50 ] && ! nft list set inet b4box "cidrs_$(ifx 1)" >/dev/null 2>&1'
check "another thread's set is untouched by A's delete" \
        '[ "$(nft list set inet b4box cidrs_200007)" = "$before" ]'
check "A without elements is closed (neither port)" '! connects 1 443 && ! connects 1 80'
check "B is still enforced after A's delete" 'connects 2 80 && ! connects 2 443'
check "C is still enforced after A's delete" 'connects 3 443 && ! connects 3 80'

add 1 deny 198.51.100.0/24:443
check "A added again reaches :443 and not :80" 'connects 1 443 && ! connects 1 80'
"$tool" del "$dir/rec3"
check "C's delete leaves A and B enforced" \
        'connects 1 443 && ! connects 1 80 && connects 2 80 && ! connects 2 443'
"$tool" del "$dir/rec1"
"$tool" del "$dir/rec2"
check "every real thread deleted: the 48 others' chains stay ($(own_chains))" \
        '[ "$(own_chains)" = 48 ] && ! nft list table inet b4box | grep -Eq "thread_($(ifx 1)|$(ifx 2)|$(ifx 3))\b"'
exit $((fails > 0))
