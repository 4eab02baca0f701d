#!/usr/bin/env bash
# Run by t0003-deb.sh through tests/docker/with-dockerd.sh (B4BOX_TEST_DOCKER_HOST):
#   docker-image.sh CONTEXT_DIR BASE_TAR
# imports BASE_TAR as the base image, builds CONTEXT_DIR's Dockerfile on it with no network,
# runs the image with a fake-provider config and its socket directory bind-mounted, and asks
# the server for /healthz and a thread over that socket. Removes its image, base and
# container by their own names. Prints "ok - NAME" / "not ok - NAME" lines.
set -uo pipefail
ctx=$1 base_tar=$2
tag="b4box-image-test-$$"
d() { docker -H "$B4BOX_TEST_DOCKER_HOST" "$@"; }
tmp=$(mktemp -d /var/tmp/b4box-img.XXXXXX)
cleanup() {
        d rm -f "$tag" >/dev/null 2>&1
        d rmi -f "$tag:latest" "$tag-base:latest" >/dev/null 2>&1
        rm -rf "$tmp"
}
trap cleanup EXIT
report() { if [ "$2" = 0 ]; then echo "ok - $1"; else echo "not ok - $1"; fi; }

d import "$base_tar" "$tag-base:latest" >/dev/null 2>&1
DOCKER_BUILDKIT=0 d build -q --network none --build-arg "BASE=$tag-base:latest" -t "$tag:latest" \
        "$ctx" >"$tmp/build.log" 2>&1
rc=$?
[ $rc = 0 ] || sed 's/^/# /' "$tmp/build.log" | tail -20
report "the Dockerfile builds an image from the packages, offline" $rc
[ $rc = 0 ] || { echo "not ok - the image's server answers on a bind-mounted socket"; exit 1; }

mkdir -p "$tmp/run"
printf '{"server": {"listen": "unix:/run/b4box/b4box.sock"}, "sandbox": {"provider": {"type": "fake", "scope": "img"}}}' \
        >"$tmp/b4box.json"
d run -d --name "$tag" --network none -v "$tmp/run:/run/b4box" \
        -v "$tmp/b4box.json:/etc/b4box/b4box.json:ro" "$tag:latest" >/dev/null
ok=1
for _ in $(seq 100); do
        [ -S "$tmp/run/b4box.sock" ] && curl -s --unix-socket "$tmp/run/b4box.sock" http://b4/healthz |
                grep -q '"ok":true' && { ok=0; break; }
        sleep 0.1
done
if [ $ok = 0 ]; then
        out=$(curl -s --unix-socket "$tmp/run/b4box.sock" -H 'Content-Type: application/json' \
                -d '{"thread_id": "img1"}' http://b4/threads)
        [[ $out == *'"thread_id":"img1"'* ]] || ok=1
fi
[ $ok = 0 ] || d logs "$tag" 2>&1 | tail -10 | sed 's/^/# /'
report "the image's server answers on a bind-mounted socket" $ok
d stop -t 10 "$tag" >/dev/null 2>&1
exit $ok
