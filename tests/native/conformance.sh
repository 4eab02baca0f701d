#!/usr/bin/env bash
# The provider conformance suite against the native provider (TAP, root only).
set -uo pipefail
b4box=$(realpath "$1")
if [ "$(id -u)" -ne 0 ] || [ ! -d /sys/fs/cgroup ]; then
        echo "1..0 # SKIP needs root and /sys/fs/cgroup"
        exit 0
fi
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
cd "$dir" || exit 1
echo "1..1"
out=$("$b4box" --state "$dir/st" conformance --provider native 2>&1); rc=$?
printf '%s\n' "$out" | sed 's/^/# /'
if [ $rc -eq 0 ] && [ "$(printf '%s\n' "$out" | tail -n1)" = "12 passed, 0 failed" ]; then
        echo "ok 1 - native passes the conformance suite"
else
        echo "not ok 1 - native passes the conformance suite"
fi
