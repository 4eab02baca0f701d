#!/usr/bin/env bash
# Docker network enforcement end to end (TAP, root only; docs/docker.md §Network): the
# closed topology of tests/native/net-internet.sh (a "host" namespace where b4box and a
# private dockerd run, an "internet" namespace with a fake upstream DNS on 192.0.2.53 that
# logs every query, a "foreign resolver" on 198.51.100.53, HTTP servers and a fake metadata
# address; no route to any real network), and `b4box-full exec` in Docker threads:
#   hostnet  (b4box is root on the daemon's host) allowlist, denylist and allow mode, with
#            the same probes as native; two allow-mode containers cannot reach each other;
#            release leaves no veth, element, netd or subnet claim
#   bridge   (B4BOX_DOCKER_HOSTNET=0) allow mode gets its own network, never the default
#            bridge, and `check` says what is not enforced; release removes the network
#   net-docker.sh B4BOX-FULL WITH-DOCKERD INTERNET
# Every packet stays in namespaces this test made: it runs itself under `unshare --net`, and
# the private dockerd (with-dockerd.sh, --iptables=false) lives in that namespace too.
set -uo pipefail
if [ "$(id -u)" -ne 0 ] || ! command -v nft >/dev/null || ! command -v dnsmasq >/dev/null ||
        ! command -v dig >/dev/null || ! command -v python3 >/dev/null ||
        ! command -v curl >/dev/null || ! command -v jq >/dev/null ||
        ! command -v dockerd >/dev/null; then
        echo "1..0 # SKIP needs root, nft, dnsmasq, dig, python3, curl, jq and dockerd"
        exit 0
fi
if [ -z "${B4_NET_INNER:-}" ]; then
        b4box=$(realpath "$1") internet=$(realpath "$3")
        exec env -u DOCKER_HOST B4_NET_INNER=1 B4BOX_TEST_PRIVATE_DOCKERD=1 \
                B4BOX_TEST_IMAGE_BINS="curl dig" unshare --net -- \
                "$2" "$(realpath "$0")" "$b4box" "$internet"
fi
b4box=$1
sock=${B4BOX_TEST_DOCKER_HOST#unix://}
image=$B4BOX_TEST_DOCKER_IMAGE
scope=$B4BOX_TEST_DOCKER_SCOPE
dir=$(mktemp -d)
pids=()
threads=(d-allow d-deny d-o1 d-o2 d-br d-n)
cleanup() {
        for t in "${threads[@]}"; do
                (cd "$dir/$t" 2>/dev/null && "$b4box" --state "$dir/st" destroy "$t" >/dev/null 2>&1)
        done
        for p in "${pids[@]}"; do kill "$p" 2>/dev/null; done
        wait 2>/dev/null
        rm -rf "$dir"
}
trap cleanup EXIT
mine() { # the hostnet records this run made (the directory is host-wide)
        ls /run/b4box/docker 2>/dev/null | grep -vxF -f "$dir/before" | grep "${1:-.}"
}
ls /run/b4box/docker 2>/dev/null >"$dir/before"
echo >>"$dir/before"
ip link set lo up
echo 1 >/proc/sys/net/ipv4/ip_forward

unshare --net -- sleep 900 >/dev/null 2>&1 &
inet=$!
pids+=("$inet")
sleep 0.2
in_inet() { nsenter -t "$inet" -n "$@"; }
. "$2"
fake_internet_up
in_inet ip route add 10.233.0.0/16 via 192.0.2.1

config() { # thread mode [list-key list-json]
        mkdir -p "$dir/$1"
        local list=""
        [ -n "${3:-}" ] && list=",\"$3\":$4,\"dns\":{\"upstream\":[\"192.0.2.53\"],\"pinFloorSeconds\":1,\"pinCapSeconds\":3}"
        printf '{"sandbox":{"provider":{"type":"docker","scope":"%s","image":"%s","host":"unix://%s"},"network":{"mode":"%s"%s}}}\n' \
                "$scope" "$image" "$sock" "$2" "$list" >"$dir/$1/b4box.json"
}
config d-allow deny allowlist '["allowed.test","rebind10.test","198.51.100.0/24:443"]'
config d-deny allow denylist '["other.test"]'
config d-o1 allow
config d-o2 allow
config d-br allow
config d-n deny
x() { local t=$1; shift; (cd "$dir/$t" && "$b4box" --state "$dir/st" exec --thread "$t" -- "$@" 2>&1); }
api() { curl -s --max-time 30 --unix-socket "$sock" "http://docker/v1.41$1"; }
echo "1..19"
n=0
check() { n=$((n + 1)); if eval "$2"; then echo "ok $n - $1"; else echo "not ok $n - $1"; return 1; fi; }
flat() { tr '\n' ' ' <<<"$1" | sed 's/ *$//'; }
q() { grep -c "query\[A\] $1" "$2" 2>/dev/null || true; }

# ---- hostnet, deny + allowlist ----
out=$(x d-allow 'dig +short +time=2 +tries=1 allowed.test; curl -s -m 3 http://allowed.test:8080/hello')
check "hostnet allowlist: an allowed name resolves and is reachable" '[ "$(flat "$out")" = "192.0.2.10 hello-internet" ]' ||
        echo "# $out"
out=$(cd "$dir/d-allow" && "$b4box" --state "$dir/st" network d-allow --json 2>&1)
check "hostnet allowlist: the audit (b4box network) has the admitted query and the destination with its bytes" \
        'jq -e ".enforced == true and .dns.admitted >= 1 and
                ([.destinations[] | select(.address == \"192.0.2.10\" and .bytes > 0)] | length) >= 1" \
                <<<"$out" >/dev/null' || echo "# $out"

up0=$(q other.test "$dir/up.log")
out=$(x d-allow 'dig +time=2 +tries=1 other.test | grep -o "status: [A-Z]*"')
check "hostnet allowlist: an unlisted name is NXDOMAIN, never asked upstream" \
        '[ "$out" = "status: NXDOMAIN" ] && [ "$(q other.test "$dir/up.log")" = "$up0" ]' || echo "# $out"
out=$(x d-allow 'curl -s -m 3 -o /dev/null -w "%{http_code}" http://192.0.2.11:8080/hello; echo " rc=$?"')
check "hostnet allowlist: a direct address never resolved is dropped" \
        'curl -s -m 3 http://192.0.2.11:8080/hello | grep -q hello-internet && ! grep -q "^200" <<<"$out"' ||
        echo "# $out"
f0=$(q allowed.test "$dir/foreign.log")
out=$(x d-allow 'dig +short +time=2 +tries=1 @198.51.100.53 allowed.test; dig +short +tcp +time=2 +tries=1 @198.51.100.53 allowed.test')
check "hostnet allowlist: a foreign resolver (UDP and TCP) is intercepted by netd" \
        '[ "$(flat "$out")" = "192.0.2.10 192.0.2.10" ] && [ "$(q allowed.test "$dir/foreign.log")" = "$f0" ]' ||
        echo "# $out"
out=$(x d-allow 'curl -s -m 3 -o /dev/null -w "%{http_code}" http://169.254.169.254:8080/hello; echo " rc=$?"')
check "hostnet allowlist: the metadata address is blocked" \
        'curl -s -m 3 http://169.254.169.254:8080/hello | grep -q hello-internet && ! grep -q "^200" <<<"$out"' ||
        echo "# $out"

out=$(x d-allow 'dig +short +time=2 +tries=1 rebind10.test; echo "v6=$(cat /proc/sys/net/ipv6/conf/eth0/disable_ipv6 2>/dev/null)"; ip -6 addr show dev eth0 | grep -c inet6')
check "hostnet allowlist: a rebinding answer (listed name -> 10.x) is refused; eth0 has no IPv6" \
        '[ "$(flat "$out")" = "v6=1 0" ] || [ "$(flat "$out")" = "v6= 0" ]' || echo "# $out"

# ---- hostnet, allow + denylist ----
out=$(x d-deny 'dig +time=2 +tries=1 other.test | grep -o "status: [A-Z]*"; curl -s -m 3 http://allowed.test:8080/hello')
check "hostnet denylist: a listed name is NXDOMAIN, the rest reachable" \
        '[ "$(flat "$out")" = "status: NXDOMAIN hello-internet" ]' || echo "# $out"

# ---- hostnet, allow ----
out=$(x d-o1 'curl -s -m 3 http://192.0.2.10:8080/hello; curl -s -m 3 -o /dev/null -w "%{http_code}" http://169.254.169.254:8080/hello; echo " rc=$?"')
check "hostnet allow: egress works, the metadata address does not" \
        'grep -q "^hello-internet" <<<"$out" && ! grep -q "^200" <<<"$(sed -n 2p <<<"$out")"' || echo "# $out"
ip1=$(x d-o1 'ip -4 -o addr show eth0' | grep -o '10\.233\.[0-9.]*' | head -n1)
pid1=""
for c in $(api '/containers/json' | jq -r '.[].Id'); do
        cfg=$(api "/containers/$c/json")
        p=$(jq -r .State.Pid <<<"$cfg")
        nsenter -t "$p" -n ip -4 -o addr show eth0 2>/dev/null | grep -q "$ip1/" && pid1=$p
done
if [ -n "$pid1" ]; then
        (exec nsenter -t "$pid1" -n python3 -m http.server 9000 --bind "$ip1") >/dev/null 2>&1 &
        pids+=($!)
        for _ in $(seq 30); do
                nsenter -t "$pid1" -n curl -s -m 1 -o /dev/null "http://$ip1:9000/" && break
                sleep 0.1
        done
fi
out=$(x d-o2 "curl -s -m 3 -o /dev/null -w '%{http_code}' http://$ip1:9000/; echo \" rc=\$?\"")
check "hostnet allow: another container's listener is unreachable (its own namespace reaches it)" \
        '[ -n "$ip1" ] && nsenter -t "$pid1" -n curl -s -m 2 -o /dev/null "http://$ip1:9000/" &&
         ! grep -q "^200" <<<"$out"' ||
        echo "# ip1=$ip1 pid1=$pid1 $out"
out=$(x d-o1 'cat /etc/resolv.conf >/dev/null; ip -o link | grep -c "eth0"')
check "hostnet: the keeper has b4box's eth0 and no Docker network" \
        '[ "$out" = 1 ] && [ "$(api /networks | jq "[.[] | select(.Name | startswith(\"b4-net-\"))] | length")" = 0 ]' ||
        echo "# $out"

# figures (not checked): a CLI exec is a cold acquire (a fresh provider replaces the keeper)
cold() { # thread: the median of 3 `exec true`, ms
        for _ in 1 2 3; do
                local t0=$(date +%s%N)
                x "$1" true >/dev/null
                echo $((($(date +%s%N) - t0) / 1000000))
        done | sort -n | sed -n 2p
}
echo "# figure: CLI exec true (cold acquire + replace), median of 3: deny $(cold d-n) ms, hostnet allow $(cold d-o1) ms, hostnet allowlist $(cold d-allow) ms"

# ---- check rows ----
out=$(cd "$dir/d-allow" && "$b4box" --state "$dir/st" check 2>&1)
check "check: hostnet rows say ENFORCED for allow, allowlist, denylist and dns" \
        'grep -qi "^network allow  *enforced" <<<"$out" && grep -qi "^network allowlist  *enforced" <<<"$out" &&
         grep -qi "^network denylist  *enforced" <<<"$out" && grep -qi "^network dns  *enforced" <<<"$out"' ||
        echo "# $(grep '^network' <<<"$out" | tr '\n' '|')"

# ---- teardown ----
hids=$(mine '\.net$' | sed 's/\.net$//')
netds=$(for f in $(mine '\.netd$'); do cut -d' ' -f1 "/run/b4box/docker/$f"; done)
for t in d-allow d-deny d-o1 d-o2; do (cd "$dir/$t" && "$b4box" --state "$dir/st" release "$t" >/dev/null 2>&1); done
sleep 1
alive=0
for p in $netds; do # alive: not gone, not a zombie
        st=$(sed 's/.*) //' "/proc/$p/stat" 2>/dev/null | cut -c1)
        [ -n "$st" ] && [ "$st" != Z ] && alive=$((alive + 1)) && echo "# netd $p: $(tr '\0' ' ' </proc/$p/cmdline)"
done
check "release leaves no veth, no element, no netd" \
        '[ "$(wc -w <<<"$hids")" = 4 ] && ! ip -o link | grep -q " b4h" && [ "$alive" = 0 ] && [ -n "$netds" ] &&
         [ "$(nft -j list map inet b4box mode | jq "[.nftables[].map.elem // [] | .[]] | length")" = 0 ] &&
         [ "$(nft -j list set inet b4box src4 | jq "[.nftables[].set.elem // [] | .[]] | length")" = 0 ]' ||
        echo "# hids=$hids netds=$netds alive=$alive $(ip -o link | grep -o ' b4h[^:]*')"

# ---- bridge path ----
export B4BOX_DOCKER_HOSTNET=0
out=$(x d-br 'curl -s -m 3 http://192.0.2.10:8080/hello >/dev/null; ip -4 -o addr show eth0')
nets=$(api /networks | jq -r '.[] | select(.Name | startswith("b4-net-")) | .Name')
check "bridge: allow mode gets its own b4-net-<id>, not the default bridge" \
        '[ "$(wc -w <<<"$nets")" = 1 ] && ! grep -q "inet 172\.17\." <<<"$out" && grep -q "inet " <<<"$out"' ||
        echo "# $nets $out"
bnet=$(api "/networks/$nets" | jq -r '.Options["com.docker.network.bridge.enable_icc"]')
check "bridge: the network has ICC off" '[ "$bnet" = false ]'
out=$(cd "$dir/d-br" && "$b4box" --state "$dir/st" check 2>&1)
check "check: bridge rows say NOT ENFORCED with the reason" \
        'grep -qi "^network allow  *not enforced  *B4BOX_DOCKER_HOSTNET=0" <<<"$out" &&
         grep -qi "^network allowlist  *not enforced" <<<"$out" && grep -qi "^network dns  *not enforced" <<<"$out"' ||
        echo "# $(grep '^network' <<<"$out" | tr '\n' '|')"
out=$(x d-allow 'curl -s -m 3 -o /dev/null -w "%{http_code}" http://192.0.2.10:8080/hello; echo " rc=$?"')
links=$(x d-allow 'ls /sys/class/net | tr "\n" " "')
check "bridge: an allowlist thread gets no network at all and reaches nothing" \
        '[ "$links" = "lo " ] && ! grep -q "^200" <<<"$out"' || echo "# links=$links $out"
(cd "$dir/d-allow" && "$b4box" --state "$dir/st" release d-allow >/dev/null 2>&1)
echo "# figure: CLI exec true, bridge allow (network recreated), median of 3: $(cold d-br) ms"
(cd "$dir/d-br" && "$b4box" --state "$dir/st" release d-br >/dev/null 2>&1)
check "bridge: release removes the network" \
        '[ -z "$(api /networks | jq -r ".[] | select(.Name | startswith(\"b4-net-\")) | .Name")" ]'
unset B4BOX_DOCKER_HOSTNET

# ---- the claims ----
claims=0
for h in $hids; do grep -lxF "$h" /run/b4box/net-* 2>/dev/null | grep -q . && claims=$((claims + 1)); done
check "no record or subnet claim of this test is left" '[ -z "$(mine)" ] && [ "$claims" = 0 ]' ||
        echo "# $(mine | tr '\n' ' ') claims=$claims"
