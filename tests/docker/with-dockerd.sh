#!/usr/bin/env bash
# Run one Docker test program against a real dockerd (tests/docker/meson.build):
#   with-dockerd.sh PROGRAM [ARGS...]
# Uses the daemon at $DOCKER_HOST or /var/run/docker.sock when one answers (unless
# $B4BOX_TEST_PRIVATE_DOCKERD is set); otherwise starts
# a private dockerd (own data root, exec root, pidfile, log and socket under a temp dir, no
# iptables changes) and stops it afterwards. Builds a local test image by importing a rootfs
# made here (busybox-static with its applet links, plus bash and its libraries, and the
# binaries named in $B4BOX_TEST_IMAGE_BINS) through the Engine API's import
# endpoint, runs PROGRAM with
#   B4BOX_TEST_DOCKER_HOST, B4BOX_TEST_DOCKER_IMAGE, B4BOX_TEST_DOCKER_SCOPE
# in its environment (the program must use that scope), then removes every container made
# from the image, every volume labelled b4.sandbox.scope=<that scope>, and every image
# labelled b4box.test=<this run>.
# Where no daemon can run it prints "1..0 # SKIP <reason>" and exits 77 (meson's skip).
set -uo pipefail

prog=("$@")
tmp=$(mktemp -d "${TMPDIR:-/tmp}/b4box-docker.XXXXXX")
run="b4box-test-$$-$RANDOM"
image="$run:latest"
started=""
sock=""
had_bridge=""

skip() {
        echo "1..0 # SKIP $*"
        cleanup
        exit 77
}

api() { # METHOD PATH [curl args...]
        local m=$1 p=$2
        shift 2
        curl -sS --max-time 120 --unix-socket "$sock" -X "$m" "$@" "http://docker/v1.41$p"
}

reachable() {
        [ -S "$1" ] && [ "$(curl -s --max-time 5 --unix-socket "$1" http://docker/_ping)" = "OK" ]
}

start_dockerd() {
        command -v dockerd >/dev/null || skip "dockerd is not installed (scripts/install-deps)"
        [ "$(id -u)" -eq 0 ] || skip "dockerd needs root here and none is running"
        sock="$tmp/docker.sock"
        ip link show docker0 >/dev/null 2>&1 && had_bridge=1
        dockerd --data-root "$tmp/root" --exec-root "$tmp/exec" --pidfile "$tmp/dockerd.pid" \
                -H "unix://$sock" --iptables=false --ip-masq=false \
                >"$tmp/dockerd.log" 2>&1 &
        started=$!
        for _ in $(seq 1 150); do
                reachable "$sock" && return 0
                kill -0 "$started" 2>/dev/null || break
                sleep 0.2
        done
        skip "dockerd could not start: $(tail -n 3 "$tmp/dockerd.log" | tr '\n' ' ')"
}

build_image() {
        local r="$tmp/rootfs" bb lib
        bb=$(command -v busybox) || skip "busybox-static is not installed"
        mkdir -p "$r/bin" "$r/tmp" "$r/run" "$r/workspace" "$r/etc" "$r/proc" "$r/dev" "$r/sys"
        cp "$bb" "$r/bin/busybox"
        for a in $("$r/bin/busybox" --list); do
                [ "$a" = busybox ] || ln -s busybox "$r/bin/$a"
        done
        if [ -x /bin/bash ]; then
                rm -f "$r/bin/bash"
                cp /bin/bash "$r/bin/bash"
                for lib in $(ldd /bin/bash | grep -o '/[^ ]*'); do
                        mkdir -p "$r$(dirname "$lib")"
                        cp -L "$lib" "$r$lib"
                done
        fi
        for b in ${B4BOX_TEST_IMAGE_BINS:-}; do # extra host binaries, with their libraries
                b=$(command -v "$b") || skip "$b is not installed"
                rm -f "$r/bin/${b##*/}"
                cp "$b" "$r/bin/"
                for lib in $(ldd "$b" | grep -o '/[^ ]*'); do
                        mkdir -p "$r$(dirname "$lib")"
                        cp -L "$lib" "$r$lib"
                done
        done
        chmod 1777 "$r/tmp"
        printf 'root:x:0:0::/root:/bin/sh\nuser:x:1000:1000::/workspace:/bin/sh\n' >"$r/etc/passwd"
        printf 'root:x:0:\nuser:x:1000:\n' >"$r/etc/group"
        tar -C "$r" -cf "$tmp/rootfs.tar" . || skip "cannot pack the test rootfs"
        api POST "/images/create?fromSrc=-&repo=$run&tag=latest&changes=LABEL%20b4box.test%3D$run" \
                -H 'Content-Type: application/x-tar' --data-binary @"$tmp/rootfs.tar" \
                >"$tmp/import.log" || skip "docker import failed: $(cat "$tmp/import.log")"
        grep -q '"status":"sha256:' "$tmp/import.log" ||
                skip "docker import failed: $(cat "$tmp/import.log")"
}

remove_ours() {
        local ids id
        [ -n "$sock" ] && reachable "$sock" || return 0
        ids=$(api GET "/containers/json?all=1&filters=%7B%22ancestor%22%3A%5B%22$run%3Alatest%22%5D%7D" |
                grep -o '"Id":"[0-9a-f]*"' | cut -d'"' -f4)
        for id in $ids; do
                api DELETE "/containers/$id?force=1" >/dev/null
        done
        ids=$(api GET "/volumes?filters=%7B%22label%22%3A%5B%22b4.sandbox.scope%3D$run%22%5D%7D" |
                grep -o '"Name":"[^"]*"' | cut -d'"' -f4)
        for id in $ids; do
                api DELETE "/volumes/$id" >/dev/null
        done
        ids=$(api GET "/images/json?filters=%7B%22label%22%3A%5B%22b4box.test%3D$run%22%5D%7D" |
                grep -o '"Id":"sha256:[0-9a-f]*"' | cut -d'"' -f4)
        for id in $ids; do
                api DELETE "/images/$id?force=1" >/dev/null
        done
}

cleanup() {
        remove_ours
        if [ -n "$started" ]; then
                kill -TERM "$started" 2>/dev/null
                for _ in $(seq 1 100); do
                        kill -0 "$started" 2>/dev/null || break
                        sleep 0.2
                done
                if kill -0 "$started" 2>/dev/null; then
                        echo "# dockerd $started did not stop in 20 s: SIGKILL" >&2
                        kill -KILL "$started" 2>/dev/null
                fi
                wait "$started" 2>/dev/null
                # the default bridge dockerd made, unless it was there before
                [ -n "$had_bridge" ] || ip link delete docker0 2>/dev/null
                findmnt -rn -o TARGET | grep "^$tmp" | sort -r | xargs -r -n1 umount -l 2>/dev/null
        fi
        rm -rf "$tmp"
}

trap 'cleanup; exit 143' TERM INT
if [ -n "${B4BOX_TEST_PRIVATE_DOCKERD:-}" ]; then # a test that must own the daemon
        start_dockerd
elif [ -n "${DOCKER_HOST:-}" ] && reachable "${DOCKER_HOST#unix://}"; then
        sock=${DOCKER_HOST#unix://}
elif reachable /var/run/docker.sock; then
        sock=/var/run/docker.sock
else
        start_dockerd
fi
build_image
B4BOX_TEST_DOCKER_HOST="unix://$sock" B4BOX_TEST_DOCKER_IMAGE="$image" \
        B4BOX_TEST_DOCKER_SCOPE="$run" "${prog[@]}"
rc=$?
cleanup
exit $rc
