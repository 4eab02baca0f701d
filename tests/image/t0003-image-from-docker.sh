#!/usr/bin/env bash
# b4box image import --from-docker (docs/images.md): the daemon's `docker save` archive of a
# local test image (tests/docker/with-dockerd.sh builds it and sets B4BOX_TEST_DOCKER_*),
# imported with every check of a file import; its identity is the daemon's image Id (both
# are the config digest), its tags are kept, and native runs it.
#   with-dockerd.sh t0003-image-from-docker.sh B4BOX
set -uo pipefail
B4BOX=$1
host=${B4BOX_TEST_DOCKER_HOST:?run under tests/docker/with-dockerd.sh}
image=${B4BOX_TEST_DOCKER_IMAGE:?}
sock=${host#unix://}
tmp=$(mktemp -d "${TMPDIR:-/tmp}/b4box-imgd.XXXXXX")
scope="imgd$$"
b4() { "$B4BOX" -c "$tmp/c.json" --state "$tmp/state" "$@"; }
cleanup() { b4 destroy t1 >/dev/null 2>&1; rm -rf "$tmp"; }
trap cleanup EXIT
n=0 failed=0
ok() { n=$((n + 1)); echo "ok $n - $1"; }
not_ok() { n=$((n + 1)); failed=$((failed + 1)); echo "not ok $n - $1"; }
check() { local name=$1; shift; if "$@"; then ok "$name"; else not_ok "$name"; fi; }

id=$("$B4BOX" --state "$tmp/state" image import --from-docker "$image" --docker-host "$host" 2>&1)
docker_id=$(curl -s --unix-socket "$sock" "http://docker/v1.41/images/$image/json" |
        python3 -c 'import json,sys; print(json.load(sys.stdin)["Id"])')
check "the imported image's identity is the daemon's image Id (the config digest)" \
        test "$id" = "$docker_id"
refs=$("$B4BOX" --state "$tmp/state" image inspect "$image" --json 2>&1)
check "its tag is a reference of the store" bash -c '[[ $1 == *"\"$2\""* ]]' _ "$refs" "$image"
again=$("$B4BOX" --state "$tmp/state" image import --from-docker "$image" --docker-host "$host" \
        --name test/again:1 2>&1)
check "importing it again keeps one copy and adds the name" \
        bash -c '[ "$1" = "$2" ] && [ "$(ls "$3/state/images/roots" | wc -l)" = 1 ] &&
                "$4" --state "$3/state" image inspect test/again:1 >/dev/null' _ "$again" "$id" "$tmp" "$B4BOX"
curl -s --unix-socket "$sock" -o "$tmp/save.tar" "http://docker/v1.41/images/$image/get"
fromfile=$("$B4BOX" --state "$tmp/state2" image import "$tmp/save.tar" 2>&1)
check "the same docker save archive imported as a file gives the same identity" \
        test "$fromfile" = "$id"
out=$("$B4BOX" --state "$tmp/state" image import --from-docker no-such/image:1 --docker-host "$host" 2>&1); rc=$?
check "an image the daemon does not have is refused by name" \
        bash -c '[ "$1" != 0 ] && [[ $2 == *"Docker has no image '"'"'no-such/image:1'"'"'"* ]]' _ "$rc" "$out"
out=$("$B4BOX" --state "$tmp/state" image import --from-docker "$image" --docker-host "unix://$tmp/none.sock" 2>&1); rc=$?
check "an unreachable daemon is an error, and nothing is left behind" \
        bash -c '[ "$1" != 0 ] && [ -z "$(ls -A "$2/state/images/tmp" 2>/dev/null)" ] &&
                 [ -z "$(find "$2/state" -maxdepth 1 -type f)" ]' _ "$rc" "$tmp"
out=$("$B4BOX" --state "$tmp/state" image import --from-docker "$image" 2>&1 some-file); rc=$?
check "FILE and --from-docker are exclusive" test "$rc" != 0
if [ "$(id -u)" = 0 ]; then
        printf '{"sandbox": {"provider": {"type": "native", "scope": "%s", "image": "oci:%s"}, "network": {"mode": "deny"}}}' \
                "$scope" "$image" >"$tmp/c.json"
        out=$(b4 exec --thread t1 -- 'busybox echo from-docker; test -e /etc/shadow && echo host-etc' 2>&1)
        check "native runs the image taken from the daemon" test "$out" = "from-docker"
fi
echo "1..$n"
exit $((failed > 0))
