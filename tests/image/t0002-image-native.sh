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
b4t() { "$B4BOX" -c "$tmp/t.json" --state "$tmp/state" "$@"; }
cleanup() {
        [ -n "${KEEP:-}" ] && return
        b4 destroy t1 >/dev/null 2>&1
        for t in pt-busy pt-host pt-other pt-missing; do b4t destroy "$t" >/dev/null 2>&1; done
        rm -rf "$tmp"
}
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
out=$(b4 check 2>&1)
check "check shows that the sandbox sees none of the host's files" \
        bash -c '[[ $1 == *"enforced      oci:$2: its own root and /etc read-only"* ]]' _ "$out" "$id"
out=$(b4 exec --thread t1 -- 'cat /etc/motd; grep -c "^sandbox:x:1000:1000::/home:/bin/sh$" /etc/passwd; echo "$IMAGE_VAR $POLICY_VAR"; id -u; pwd' 2>&1)
check "the image is the sandbox's root: its files and its own /etc" \
        bash -c '[[ $1 == "hello from layer 2"$'"'"'\n'"'"'1$'"'"'\n'"'"'* ]]' _ "$out"
check "its Env is the base of the environment, the policy's on top" \
        bash -c '[[ $1 == *"1 p"$'"'"'\n'"'"'1000$'"'"'\n'"'"'/workspace* ]]' _ "$out"
out=$("$B4BOX" --state "$tmp/state" image rm "$id" 2>&1)
check "rm is refused while the thread's sandbox uses it" bash -c '[[ $1 == *"used by a thread"* ]]' _ "$out"
b4 destroy t1 >/dev/null
check "after the thread is gone, rm works" bash -c '"$1" --state "$2" image rm "$3" >/dev/null' _ "$B4BOX" "$tmp/state" "$id"

# Per-thread images (docs/images.md, "Per-thread images"): a thread resolver picks the image
# by thread id; sandbox.provider.images bounds what it may name; the app's image is host.
id=$("$B4BOX" --state "$tmp/state" image import "$tmp/lay" --name test/busy:1)
mkdir -p "$tmp/src"
cat >"$tmp/resolve.sh" <<'SH'
#!/bin/sh
id=$(sed -n 's/.*"threadId": *"\([^"]*\)".*/\1/p')
case $id in
pt-busy) img='"environment": {"image": "test/busy:1"},' ;;
pt-other) img='"environment": {"image": "evil/busy:1"},' ;;
pt-missing) img='"environment": {"image": "test/absent:1"},' ;;
*) img= ;;
esac
echo "{$img \"workspace\": {\"source\": {\"directory\": \"src\", \"include\": []}}}"
SH
chmod +x "$tmp/resolve.sh"
printf '{"sandbox": {"provider": {"type": "native", "scope": "%s", "images": ["oci:test/*"]}, "thread": {"command": ["%s"]}, "network": {"mode": "deny"}}}' \
        "${scope}t" "$tmp/resolve.sh" >"$tmp/t.json"
out=$(b4t exec --thread pt-busy -- 'cat /etc/motd; echo "$IMAGE_VAR"' 2>&1)
check "a thread's own image (allowed by a pattern) is its root, its Env the base" \
        test "$out" = $'hello from layer 2\n1'
out=$(b4t exec --thread pt-host -- 'test -e /etc/motd && cat /etc/motd; test -x /usr/bin/env && echo host-usr' 2>&1)
check "a thread naming no image runs the app's image (host)" \
        bash -c '[[ $1 != *"hello from layer"* && $1 == *host-usr* ]]' _ "$out"
before=$(ls "$tmp/state/native/workspaces" | wc -l)
out=$(b4t exec --thread pt-other -- true 2>&1); rc=$?
after=$(ls "$tmp/state/native/workspaces" | wc -l)
check "an image no pattern allows is refused before anything runs (no workspace made)" \
        bash -c '[ "$1" != 0 ] && [[ $2 == *"Image evil/busy:1 is not one this provider may run"* ]] && [ "$3" = "$4" ]' \
        _ "$rc" "$out" "$before" "$after"
out=$(b4t exec --thread pt-missing -- true 2>&1); rc=$?
check "an allowed image that is not in the store is refused, naming the import" \
        bash -c '[ "$1" != 0 ] && [[ $2 == *"image '"'"'test/absent:1'"'"' is not in the store"* ]]' _ "$rc" "$out"
out=$("$B4BOX" --state "$tmp/state" image rm "$id" 2>&1)
check "rm is refused while a thread's own image runs" bash -c '[[ $1 == *"used by a thread"* ]]' _ "$out"
out=$(b4t exec --thread pt-busy -- 'cat /etc/motd' 2>&1)
check "the admitted thread keeps its image across runs" bash -c '[[ $1 == "hello from layer 2" ]]' _ "$out"
b4t destroy pt-busy >/dev/null
check "after the thread is gone, rm of its image works" \
        bash -c '"$1" --state "$2" image rm "$3" >/dev/null' _ "$B4BOX" "$tmp/state" "$id"
echo "1..$n"
exit $((failed > 0))
