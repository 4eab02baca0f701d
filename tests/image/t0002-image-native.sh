#!/usr/bin/env bash
# Native runs an imported image (docs/images.md): image "oci:REF" is the sandbox's root (the
# image's own /etc), its Env the base of the command environment, the identity its config
# digest; a missing image is refused by check before anything runs; rm is refused while a
# thread's sandbox uses the image and works once the thread is gone.
#   t0002-image-native.sh B4BOX
set -uo pipefail
B4BOX=$1
HERE=$(cd "$(dirname "$0")" && pwd)
[ "$(id -u)" = 0 ] || { echo "1..0 # SKIP native sandboxes need root here"; exit 77; }
[ -x /bin/busybox ] || { echo "1..0 # SKIP busybox-static is not installed"; exit 77; }
tmp=$(mktemp -d "${TMPDIR:-/tmp}/b4box-imgn.XXXXXX")
scope="imgn$$"
b4() { "$B4BOX" -c "$tmp/c.json" --state "$tmp/state" "$@"; }
cleanup() { b4 destroy t1 >/dev/null 2>&1; rm -rf "$tmp"; }
trap cleanup EXIT
n=0 failed=0
ok() { n=$((n + 1)); echo "ok $n - $1"; }
not_ok() { n=$((n + 1)); failed=$((failed + 1)); echo "not ok $n - $1"; }
check() { local name=$1; shift; if "$@"; then ok "$name"; else not_ok "$name"; fi; }

printf '{"sandbox": {"provider": {"type": "native", "scope": "%s", "image": "oci:test/busy:1"}, "network": {"mode": "deny"}, "env": {"POLICY_VAR": "p"}}}' \
        "$scope" >"$tmp/c.json"
out=$(b4 check 2>&1)
check "check refuses an image that is not in the store, saying how to import it" \
        bash -c '[[ $1 == *"image '"'"'test/busy:1'"'"' is not in the store (b4box image import"* ]]' _ "$out"
"$HERE/make-layout.py" "$tmp/lay" good >/dev/null
id=$("$B4BOX" --state "$tmp/state" image import "$tmp/lay" --name test/busy:1)
out=$(b4 exec --thread t1 -- 'cat /etc/motd; grep -c "^sandbox:x:1000:1000::/home:/bin/sh$" /etc/passwd; echo "$IMAGE_VAR $POLICY_VAR"; id -u; pwd' 2>&1)
check "the image is the sandbox's root: its files and its own /etc" \
        bash -c '[[ $1 == "hello from layer 2"$'"'"'\n'"'"'1$'"'"'\n'"'"'* ]]' _ "$out"
check "its Env is the base of the environment, the policy's on top" \
        bash -c '[[ $1 == *"1 p"$'"'"'\n'"'"'1000$'"'"'\n'"'"'/workspace* ]]' _ "$out"
out=$("$B4BOX" --state "$tmp/state" image rm "$id" 2>&1)
check "rm is refused while the thread's sandbox uses it" bash -c '[[ $1 == *"used by a thread"* ]]' _ "$out"
b4 destroy t1 >/dev/null
check "after the thread is gone, rm works" bash -c '"$1" --state "$2" image rm "$3" >/dev/null' _ "$B4BOX" "$tmp/state" "$id"
echo "1..$n"
exit $((failed > 0))
