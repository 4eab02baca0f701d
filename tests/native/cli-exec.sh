#!/usr/bin/env bash
# `b4box exec / release / destroy` end to end against the native provider (TAP, root only).
set -uo pipefail
b4box=$(realpath "$1")
if [ "$(id -u)" -ne 0 ] || [ ! -d /sys/fs/cgroup ]; then
        echo "1..0 # SKIP needs root and /sys/fs/cgroup"
        exit 0
fi
dir=$(mktemp -d)
cleanup() { "$b4box" --state "$dir/st" destroy cli-t >/dev/null 2>&1; rm -rf "$dir"; }
trap cleanup EXIT
cd "$dir" || exit 1
echo "1..8"
n=0
check() { n=$((n + 1)); if eval "$2"; then echo "ok $n - $1"; else echo "not ok $n - $1"; fi; }
x() { "$b4box" --state "$dir/st" "$@"; }

out=$(x exec --thread cli-t -- id -u); rc=$?
check "exec runs as uid 1000" '[ $rc -eq 0 ] && [ "$out" = 1000 ]'
x exec --thread cli-t -- 'echo out; echo err >&2; exit 7' >"$dir/o" 2>"$dir/e"; rc=$?
check "exit code and streams pass through" '[ $rc -eq 7 ] && [ "$(cat "$dir/o")" = out ] && [ "$(cat "$dir/e")" = err ]'
x exec --thread cli-t --timeout 500 -- sleep 5 2>"$dir/e"; rc=$?
check "timeout gives 124 and the message" '[ $rc -eq 124 ] && grep -qx "Command timed out after 1s (resources.timeoutMs: 500ms)." "$dir/e"'
want="a b'c \$HOME"
out=$(x exec --thread cli-t -- sh -c 'echo "$1"' sh "$want")
check "several arguments are quoted" '[ "$out" = "$want" ]'
x exec --thread cli-t -- 'echo kept > /workspace/f' && x release cli-t >/dev/null; rc=$?
out=$(x exec --thread cli-t -- cat /workspace/f)
check "release keeps the workspace" '[ $rc -eq 0 ] && [ "$out" = kept ]'
x destroy cli-t >/dev/null; rc=$?
check "destroy removes the workspace" '[ $rc -eq 0 ] && [ -z "$(ls "$dir/st/native/workspaces")" ]'
x exec --thread cli-t >/dev/null 2>"$dir/e"; rc=$?
check "missing command is a usage error" '[ $rc -eq 2 ] && grep -q "^b4box: exec:" "$dir/e"'
x release >/dev/null 2>&1; rc=$?
check "release needs an id" '[ $rc -eq 2 ]'
