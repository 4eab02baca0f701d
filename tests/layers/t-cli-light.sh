#!/usr/bin/env bash
# The light b4box loads none of the Docker, HTTP-client and server libraries
# (docs/ARCHITECTURE.md, "A CLI that starts fast"), b4box-full loads them, and a command
# b4box hands over runs in b4box-full: `serve --listen` on a bad address is refused by it.
# Args: B4BOX B4BOX_FULL
set -uo pipefail
b4box=$1 full=$2
heavy='lib(curl|archive|microhttpd)\.so'
echo "1..3"
if ldd "$b4box" | grep -qE "$heavy"; then
        echo "not ok 1 - b4box loads none of libcurl, libarchive, libmicrohttpd"
        ldd "$b4box" | grep -E "$heavy" | sed 's/^/# /'
else
        echo "ok 1 - b4box loads none of libcurl, libarchive, libmicrohttpd"
fi
n=$(ldd "$full" | grep -cE "$heavy")
if [ "$n" = 3 ]; then echo "ok 2 - b4box-full loads all three"; else echo "not ok 2 - b4box-full loads $n of the three"; fi
tmp=$(mktemp -d /tmp/b4box-light.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
err=$("$b4box" --state "$tmp/st" serve --listen not-an-address 2>&1 >/dev/null)
rc=$?
if [ "$rc" = 1 ] && grep -q "listen address 'not-an-address' is not host:port" <<<"$err"; then
        echo "ok 3 - serve is handed to b4box-full, which refuses the address"
else
        echo "not ok 3 - serve is handed to b4box-full, which refuses the address"
        echo "# rc $rc: $err"
fi
