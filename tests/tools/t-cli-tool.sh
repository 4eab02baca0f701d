#!/usr/bin/env bash
# b4box tool over the fake provider: result documents on stdout, exit codes 0 / 1 / 2.
set -uo pipefail
B4BOX=${1:?usage: t-cli-tool.sh B4BOX}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
n=0
fail=0
echo "1..8"
check() { # name want-rc want-stdout cmd...
        local name=$1 rc=$2 want=$3
        shift 3
        local out got
        out=$("$@" 2>"$tmp/err")
        got=$?
        n=$((n + 1))
        if [ "$got" = "$rc" ] && [ "$out" = "$want" ]; then
                echo "ok $n - $name"
        else
                echo "not ok $n - $name (rc $got, stdout '$out', stderr '$(cat "$tmp/err")')"
                fail=1
        fi
}
T=("$B4BOX" --state "$tmp/state" tool --thread cli-t --provider fake)
check "writeFile" 0 '{"ok":true,"result":"wrote 2 bytes to x"}' \
        "${T[@]}" writeFile '{"path":"x","content":"hi"}'
check "outside fails closed" 1 \
        '{"ok":false,"error":{"code":"B4_E3001","message":"Permission denied (fail-closed): /etc/passwd"}}' \
        "${T[@]}" --mode non-interactive readFile '{"path":"../etc/passwd"}'
check "allow rule" 0 \
        '{"ok":true,"result":{"stdout":"hi\n","stderr":"","exitCode":0,"timedOut":false,"cancelled":false,"truncated":false,"durationMs":0,"wallMs":0,"cpuMs":null,"peakMemoryBytes":null,"maxProcesses":null,"oomKilled":null}}' \
        "${T[@]}" --allow 'bash:echo' runBash '{"command":"echo hi"}'
check "deny rule" 1 \
        '{"ok":false,"error":{"code":"B4_E3001","message":"Permission denied by user: echo hi"}}' \
        "${T[@]}" --allow 'bash:echo' --deny 'bash:echo h' runBash '{"command":"echo hi"}'
check "invalid arguments" 1 \
        '{"ok":false,"error":{"code":"invalid_arguments","message":"listDir: unknown argument '"'"'dir'"'"' (allowed: path)"}}' \
        "${T[@]}" listDir '{"dir":"."}'
check "args not JSON" 2 '' "${T[@]}" listDir '{"path":'
check "missing --thread" 2 '' "$B4BOX" --state "$tmp/state" tool --provider fake listDir
check "unknown mode" 2 '' "${T[@]}" --mode sometimes listDir
exit $fail
