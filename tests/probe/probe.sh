#!/usr/bin/env bash
# b4box probe end to end (TAP): probe.sh B4BOX MODE
#   native-deny   native provider, network deny (run inside tests/native/in-netns.sh)
#   native-allow  native provider, network allow, in a network namespace made here with a
#                 dummy "host" interface (192.0.2.1, 2001:db8:b4::1, 169.254.169.254) and
#                 no route anywhere else
#   docker        docker provider, network deny (run under tests/docker/with-dockerd.sh)
#   fake          the fake provider isolates nothing and runs no commands: the probe must
#                 report failures (proof that it can fail) and still count and clean up
# Each real provider must end with "N passed, 0 failed", exit 0, a consistent --json
# document, and no thread left behind, also after SIGINT.
set -uo pipefail
b4box=$(realpath "$1")
mode=$2
case $mode in
native-*)
        if [ "$(id -u)" -ne 0 ] || [ ! -d /sys/fs/cgroup ]; then
                echo "1..0 # SKIP needs root and /sys/fs/cgroup"
                exit 0
        fi ;;
esac
if ! command -v python3 >/dev/null; then
        echo "1..0 # SKIP needs python3"
        exit 0
fi
if [ "$mode" = native-allow ] && [ -z "${B4_PROBE_NETNS:-}" ]; then
        exec env B4_PROBE_NETNS=1 unshare --net -- "$0" "$@"
fi
dir=$(mktemp -d "${TMPDIR:-/tmp}/b4probe.XXXXXX")
cleanup() {
        [ -n "${pid:-}" ] && kill "$pid" 2>/dev/null
        rm -rf "$dir"
}
trap cleanup EXIT
cd "$dir" || exit 1

net=deny provider=native extra=""
case $mode in
native-allow)
        net=allow
        ip link set lo up
        echo 1 >/proc/sys/net/ipv4/ip_forward
        ip link add b4ptest0 type veth peer name b4ptest1
        ip link set b4ptest1 up
        ip addr add 192.0.2.1/24 dev b4ptest0
        ip addr add 169.254.169.254/32 dev b4ptest0
        ip -6 addr add 2001:db8:b4::1/64 dev b4ptest0 nodad
        ip link set b4ptest0 up ;;
docker)
        provider=docker
        extra=",\"host\":\"$B4BOX_TEST_DOCKER_HOST\",\"image\":\"$B4BOX_TEST_DOCKER_IMAGE\"" ;;
fake) provider=fake ;;
esac
scope=${B4BOX_TEST_DOCKER_SCOPE:-probe-test-$$}
printf '{"sandbox":{"provider":{"type":"%s","scope":"%s"%s},"network":{"mode":"%s"}}}\n' \
        "$provider" "$scope" "$extra" "$net" >b4box.json

n=0 bad=0
check() { n=$((n + 1)); if eval "$2"; then echo "ok $n - $1"; else echo "not ok $n - $1"; bad=1; fi; }
x() { "$b4box" --state "$dir/st" "$@"; }
# no thread of the probe left: native workspaces / docker workspace volumes of this scope
leftovers() {
        case $provider in
        native) ls "$dir/st/native/workspaces" 2>/dev/null ;;
        docker) curl -s --unix-socket "${B4BOX_TEST_DOCKER_HOST#unix://}" \
                "http://docker/v1.41/volumes?filters=%7B%22label%22%3A%5B%22b4.sandbox.scope%3D$scope%22%5D%7D" |
                grep -o '"Name":"[^"]*"' ;;
        esac
}
count() { grep -c "^$1 " "$dir/out"; }

echo "1..8"
x probe >"$dir/out" 2>"$dir/err"; rc=$?
sed 's/^/# /' "$dir/out"
sed 's/^/# stderr: /' "$dir/err"
last=$(tail -n1 "$dir/out")
check "the closing line counts the rows (a SKIP is neither)" \
        '[ "$last" = "$(count PASS) passed, $(count FAIL) failed" ]'
if [ "$mode" = fake ]; then
        check "the fake provider fails the probe (exit 1)" '[ $rc -eq 1 ] && [ "$(count FAIL)" -ge 20 ]'
        check "no probe passes without the helper" \
                '! grep -E "^PASS (helper|sys:|net:|bomb:|cross-thread|jail-race)" "$dir/out"'
else
        check "no probe fails (exit 0)" '[ $rc -eq 0 ] && [[ $last =~ ^[0-9]+\ passed,\ 0\ failed$ ]]'
        check "the helper ran and the syscall probes passed" \
                'grep -q "^PASS helper" "$dir/out" && [ "$(grep -c "^PASS sys:" "$dir/out")" -ge 15 ]'
fi
check "the thread is destroyed" '[ -z "$(leftovers)" ]'

x probe --json >"$dir/json" 2>/dev/null; jrc=$?
check "--json: same verdict and consistent counts" 'python3 - "$dir/json" $jrc <<"PY"
import json, sys
d = json.load(open(sys.argv[1])); rc = int(sys.argv[2])
res = [p["result"] for p in d["probes"]]
assert d["passed"] == res.count("PASS") and d["failed"] == res.count("FAIL")
assert d["skipped"] == res.count("SKIP") and len(res) == d["passed"] + d["failed"] + d["skipped"]
assert (rc == 1) == (d["failed"] > 0), rc
assert d["thread"].startswith("probe-") and d["provider"]
PY'
check "the thread is destroyed after --json" '[ -z "$(leftovers)" ]'

if [ "$mode" = fake ]; then
        echo "ok 7 - SIGINT # SKIP the fake provider finishes before a signal can land"
        echo "ok 8 - SIGINT cleanup # SKIP as above"
else
        "$b4box" --state "$dir/st" probe >"$dir/int" 2>"$dir/int.err" &
        pid=$!
        for _ in $(seq 200); do [ -n "$(leftovers)" ] && break; sleep 0.05; done
        sleep 0.5
        kill -INT "$pid"
        wait "$pid"; irc=$?
        pid=""
        grep -v "^PASS" "$dir/int" | cat - "$dir/int.err" | sed "s/^/# after SIGINT: /"
        check "SIGINT: exit 1 with an 'interrupted' FAIL row" \
                '[ $irc -eq 1 ] && grep -q "^FAIL interrupted" "$dir/int" && grep -qE "^[0-9]+ passed, [0-9]+ failed$" "$dir/int"'
        check "SIGINT: the thread is destroyed" '[ -z "$(leftovers)" ]'
fi
exit $bad
