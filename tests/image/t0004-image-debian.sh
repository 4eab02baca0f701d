#!/usr/bin/env bash
# A real distribution as an image (issue 19 item 5): the Debian 12 root filesystem
# scripts/install-deps made with debootstrap ($B4BOX_BASE_TAR), written as an OCI layout by
# rootfs-layout.py, imported, and run by native: its own /etc and tools, a managed workspace
# materialised and read back, the conformance suite and the tool suite on it.
#   t0004-image-debian.sh B4BOX TOOLS_SUITE
set -uo pipefail
B4BOX=$1
TOOLS_SUITE=$2
HERE=$(cd "$(dirname "$0")" && pwd)
BASE=${B4BOX_BASE_TAR:-/var/cache/b4box-dev/bookworm-base.tar}
[ "$(id -u)" = 0 ] || { echo "1..0 # SKIP native sandboxes need root here"; exit 77; }
[ -s "$BASE" ] || { echo "1..0 # SKIP $BASE is missing (scripts/install-deps all makes it)"; exit 77; }
tmp=$(mktemp -d "${TMPDIR:-/tmp}/b4box-imgdeb.XXXXXX")
scope="imgdeb$$"
b4() { "$B4BOX" -c "$tmp/c.json" --state "$tmp/state" "$@"; }
cleanup() { b4 destroy w1 >/dev/null 2>&1; rm -rf "$tmp"; }
trap cleanup EXIT
n=0 failed=0
ok() { n=$((n + 1)); echo "ok $n - $1"; }
not_ok() { n=$((n + 1)); failed=$((failed + 1)); echo "not ok $n - $1"; }
check() { local name=$1; shift; if "$@"; then ok "$name"; else not_ok "$name"; fi; }

want=$("$HERE/rootfs-layout.py" "$BASE" "$tmp/lay" test/debian:12)
id=$("$B4BOX" --state "$tmp/state" image import "$tmp/lay" 2>&1)
check "the Debian layout imports under its own ref.name, identity = its config digest" \
        bash -c '[ "$1" = "$2" ] && "$3" --state "$4" image inspect test/debian:12 >/dev/null' \
        _ "$id" "$want" "$B4BOX" "$tmp/state"
mkdir -p "$tmp/src" && echo hello >"$tmp/src/a.txt"
printf '{"sandbox": {"provider": {"type": "native", "scope": "%s", "image": "oci:test/debian:12"}, "workspace": {"source": {"directory": "src", "include": ["a.txt"]}}, "network": {"mode": "deny"}}}' \
        "$scope" >"$tmp/c.json"
out=$(b4 exec --thread w1 -- 'cat /etc/debian_version; echo "$IMAGE_FLAVOUR"; apt-get --version | head -1; id -u; cat a.txt; echo more >b.txt' 2>&1)
check "native runs Debian's own userland and /etc, its Env the base" \
        bash -c '[[ $1 == 12.*$'"'"'\n'"'"'debian$'"'"'\n'"'"'apt 2.*$'"'"'\n'"'"'1000$'"'"'\n'"'"'hello ]]' _ "$out"
out=$(b4 read w1 2>&1)
check "the managed workspace is materialised and read back (a.txt, b.txt)" \
        bash -c '[[ $1 == *"2 files"* && $1 == *a.txt* && $1 == *b.txt* ]]' _ "$out"
b4 destroy w1 >/dev/null
printf '{"sandbox": {"provider": {"type": "native", "scope": "%s", "image": "oci:test/debian:12"}, "network": {"mode": "deny"}}}' \
        "${scope}c" >"$tmp/conf.json"
out=$("$B4BOX" -c "$tmp/conf.json" --state "$tmp/state" conformance 2>&1)
check "the conformance suite passes on the image" \
        bash -c '[ "$(printf "%s\n" "$1" | tail -n1)" = "12 passed, 0 failed" ]' _ "$out"
out=$(B4BOX_TEST_NATIVE_IMAGE=oci:test/debian:12 B4BOX_TEST_NATIVE_STATE="$tmp/state" \
        CMOCKA_MESSAGE_OUTPUT=stdout "$TOOLS_SUITE" 2>&1); rc=$?
printf '%s\n' "$out" | grep -E '^# SKIP|PASSED|FAILED' | sed 's/^/# /'
check "the tool suite passes on the image (cases needing python3 are not run: it has none)" \
        bash -c '[ "$1" = 0 ] && [[ $2 == *"PASSED"* && $2 != *"FAILED"* ]]' _ "$rc" "$out"
echo "1..$n"
exit $((failed > 0))
