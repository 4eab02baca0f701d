#!/usr/bin/env bash
# The kubernetes provider without b4box-agent (the reference's sh -s scripts, shell-fs.c)
# end to end through the CLI against the fake API server (TAP; run by with-fake.sh):
# `b4box conformance` through the fallback, `b4box check`'s operations row, one exec per
# tool call (the fake's counters), editFile as a read and a write, the workspace inventory
# (a pruned walk, batched reads in 96 KiB scripts), the timeout, pidsLimit refused rather
# than unlimited, and the fallback taken per Pod: an agent that does not start, an image
# without chmod.
set -uo pipefail
b4box=$(realpath "$1")
py=/usr/bin/python3
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
cd "$dir" || exit 1
n=0
failed=0
check() {
        n=$((n + 1))
        if eval "$2"; then echo "ok $n - $1"; else echo "not ok $n - $1"; failed=$((failed + 1)); return 1; fi
}
ctl() { # ctl METHOD PATH [JSON]: the fake's control API
        curl -sS --cacert "$KUBE_FAKE_STATE/ca.crt" -X "$1" -H "Authorization: Bearer $KUBE_FAKE_ADMIN" \
                -H 'Content-Type: application/json' ${3:+--data "$3"} "$KUBE_FAKE_URL$2"
}
counter() { ctl GET /_fake/counters | "$py" -c 'import json,sys; print(json.load(sys.stdin)[sys.argv[1]])' "$1"; }
config() { # config FILE [PROVIDER MEMBERS] [SANDBOX MEMBERS]
        printf '{"sandbox": {"provider": {"type": "kubernetes", "scope": "kubeshell", "image": "%s", "kubeconfig": "%s", "namespace": "%s"%s}%s}}\n' \
                "$B4BOX_TEST_KUBE_IMAGE" "$B4BOX_TEST_KUBE_CONFIG" "$B4BOX_TEST_KUBE_NAMESPACE" "${2:-}" "${3:-}" >"$1"
}
config b4box.json
# `b4box read` only: its detached worker thread (src/lib/runtime/read.c) signals the read done
# before it exits, so the process can exit while that thread's OpenSSL state is still being
# freed, which LeakSanitizer reports now and then. Not this provider's; leaks stay checked
# for every other command here.
read_nolsan() { ASAN_OPTIONS="${ASAN_OPTIONS:-}:detect_leaks=0" "$b4box" read "$@"; }

# ---- no agent at all: every Pod through the scripts ----
export B4BOX_KUBE_AGENT=off

out=$("$b4box" conformance -c b4box.json 2>"$dir/err"); rc=$?
check "conformance through the sh scripts: every case passes, the readers' too" \
        '[ $rc -eq 0 ] && [ "$(printf "%s\n" "$out" | tail -n1)" = "12 passed, 0 failed" ]' ||
        printf '%s\n' "$out" "$(cat "$dir/err")" | sed 's/^/# /'

out=$("$b4box" check -c b4box.json 2>&1)
check "check: the operations row names the sh scripts" \
        'grep -Eq "^operations +n/a +the reference.s sh scripts: one exec per operation \(no b4box-agent: B4BOX_KUBE_AGENT=off\)" <<<"$out"' ||
        printf '%s\n' "$out" | sed 's/^/# /'

# one exec per tool call (the CLI's acquire and release add no exec without the agent)
tool() { # tool NAME ARGS: the result document, the execs it cost in $execs
        ctl POST /_fake/counters/reset >/dev/null
        out=$("$b4box" tool -c b4box.json --thread shell-1 "$1" "$2" 2>"$dir/err")
        execs=$(counter execs)
}
tool writeFile '{"path": "d ir/a.txt", "content": "hello\nworld\n"}'
check "writeFile: one exec" '[ "$out" = "{\"ok\":true,\"result\":\"wrote 12 bytes to d ir/a.txt\"}" ] && [ "$execs" = 1 ]' ||
        echo "# $out execs=$execs $(cat "$dir/err")"
tool readFile '{"path": "d ir/a.txt"}'
check "readFile: one exec" '[ "$out" = "{\"ok\":true,\"result\":\"hello\\nworld\\n\"}" ] && [ "$execs" = 1 ]' ||
        echo "# $out execs=$execs"
tool editFile '{"path": "d ir/a.txt", "oldText": "world", "newText": "there"}'
check "editFile: a read and a write, two execs" '[ "${out#*\"ok\":true}" != "$out" ] && [ "$execs" = 2 ]' ||
        echo "# $out execs=$execs"
tool listDir '{"path": "d ir"}'
check "listDir: one exec" '[ "$out" = "{\"ok\":true,\"result\":[\"a.txt\"]}" ] && [ "$execs" = 1 ]' ||
        echo "# $out execs=$execs"
tool runBash '{"command": "cat \"d ir/a.txt\"; id -u; exit 3"}'
check "runBash: one exec, output and exit code" \
        '[ "${out#*\"stdout\":\"hello\\nthere\\n1000\\n\"}" != "$out" ] && [ "${out#*\"exitCode\":3}" != "$out" ] && [ "$execs" = 1 ]' ||
        echo "# $out execs=$execs"

# the workspace inventory: a walk with a pruned directory and one batched read, the same
# document as through the agent
mkfiles='mkdir -p "d ir" skip/deep && printf x >"d ir/a.txt" && printf y >"d ir/b c" && printf z >skip/deep/f && ln -s "d ir/a.txt" link'
"$b4box" exec -c b4box.json --thread shell-r -- sh -c "$mkfiles" >/dev/null 2>&1
ctl POST /_fake/counters/reset >/dev/null
read_nolsan -c b4box.json shell-r --exclude skip --skip-unsupported --json >read-sh.json 2>"$dir/err"; rc=$?
execs=$(counter execs)
B4BOX_KUBE_AGENT= "$b4box" exec -c b4box.json --thread agent-r -- sh -c "$mkfiles" >/dev/null 2>&1
ctl POST /_fake/counters/reset >/dev/null
B4BOX_KUBE_AGENT= read_nolsan -c b4box.json agent-r --exclude skip --skip-unsupported --json >read-agent.json 2>&1
agent_execs=$(counter execs) # the agent's copy and its session: it went through the agent
check "read: a pruned walk and a batched read, the agent's document, 3 execs" \
        '[ $rc -eq 0 ] && [ "$(sed s/shell-r/T/ read-sh.json)" = "$(sed s/agent-r/T/ read-agent.json)" ] && grep -q "\"d ir/b c\":\"y\"" read-sh.json && ! grep -q deep read-sh.json && [ "$execs" = 3 ] && [ "$agent_execs" = 2 ]' ||
        echo "# rc=$rc execs=$execs agent_execs=$agent_execs $(cat read-sh.json) / $(cat read-agent.json) $(cat "$dir/err")"

# batched reads packed into scripts of at most 96 KiB: 400 files of 200-byte names (about
# 500 bytes of script each) take three scripts, one exec each, and every file comes back
many='for i in $(seq 400); do printf "%s" "$i" >"$(printf "%0200d" "$i")"; done'
"$b4box" exec -c b4box.json --thread shell-m -- sh -c "$many" >/dev/null 2>&1
ctl POST /_fake/counters/reset >/dev/null
read_nolsan -c b4box.json shell-m --json >read-many.json 2>"$dir/err"; rc=$?
execs=$(counter execs)
check "read: 400 files in three batched scripts (four execs: the walk, three scripts)" \
        '[ $rc -eq 0 ] && grep -q "\"entries\":400" read-many.json && grep -q "\"$(printf "%0200d" 400)\":\"400\"" read-many.json && [ "$execs" = 4 ]' ||
        echo "# rc=$rc execs=$execs $(head -c 300 read-many.json) $(cat "$dir/err")"

# a timeout is the reference's `timeout`: exit 124 and the seeds' line
config timeout.json "" ', "resources": {"timeoutMs": 1500}'
out=$("$b4box" tool -c timeout.json --thread shell-t runBash '{"command": "sleep 30"}' 2>"$dir/err")
check "runBash: timeoutMs kills the command, exit 124 and the timeout line" \
        '[ "${out#*\"exitCode\":124}" != "$out" ] && [ "${out#*Command timed out after 2s (resources.timeoutMs: 1500ms).}" != "$out" ]' ||
        echo "# $out $(cat "$dir/err")"

# hostUsers false promises a process limit the scripts cannot set: refused, never unlimited
config userns.json ', "hostUsers": false' ', "security": {"pidsLimit": 16}'
out=$("$b4box" exec -c userns.json --thread shell-u -- true 2>&1); rc=$?
check "pidsLimit under hostUsers false without the agent: the command is refused" \
        '[ $rc -ne 0 ] && grep -q "without it security.pidsLimit cannot be enforced" <<<"$out"' ||
        echo "# rc=$rc $out"
unset B4BOX_KUBE_AGENT

# ---- an agent that does not start in the Pod: that Pod falls back ----
printf '#!/nonexistent/interpreter\n' >broken-agent
chmod 0755 broken-agent
out=$(B4BOX_AGENT=$dir/broken-agent "$b4box" check -c b4box.json 2>&1)
check "check: with an agent, the row names it and the per-Pod fallback" \
        'grep -Eq "^operations +n/a +through b4box-agent: .*a Pod that cannot run it: the reference.s sh scripts" <<<"$out"' ||
        printf '%s\n' "$out" | sed 's/^/# /'
ctl POST /_fake/counters/reset >/dev/null
out=$(B4BOX_AGENT=$dir/broken-agent "$b4box" exec -c b4box.json --thread shell-b -- sh -c 'echo via-sh; exit 4' 2>"$dir/err"); rc=$?
execs=$(counter execs)
# the copy, the agent's failed start, the probe (126/127), then the command's own exec
check "an agent that does not start: the command runs through the scripts" \
        '[ $rc -eq 4 ] && [ "$out" = via-sh ] && [ "$execs" = 4 ]' ||
        echo "# rc=$rc out=$out execs=$execs $(cat "$dir/err")"

# ---- an image without chmod: the copy exits 127, that Pod falls back ----
# (the Pod's PATH is the policy's env: a directory of the host's tools but chmod; outside
# /tmp, which is the Pod's emptyDir: not beside the build tree, which CI keeps under /tmp)
bin=$(mktemp -d /var/tmp/kubeshell-path.XXXXXX) && chmod 0755 "$bin" # the Pod runs as uid 1000
trap 'rm -rf "$dir" "$bin"' EXIT
mkdir -p "$bin"
for t in sh head base64 realpath stat readlink find mkdir rm rmdir ls mv touch ln dirname \
        timeout sleep cat id; do
        ln -s "$(command -v "$t")" "$bin/$t"
done
config nochmod.json "" ", \"env\": {\"PATH\": \"$bin\"}"
ctl POST /_fake/counters/reset >/dev/null
out=$("$b4box" exec -c nochmod.json --thread shell-c -- sh -c '[ -e /b4/agent ] || echo via-sh' 2>"$dir/err"); rc=$?
execs=$(counter execs)
# the copy (exit 127), then the command through the scripts; no agent left in /b4
check "an image without chmod: the copy fails 127 and the command runs through the scripts" \
        '[ $rc -eq 0 ] && [ "$out" = via-sh ] && [ "$execs" = 2 ]' ||
        echo "# rc=$rc out=$out execs=$execs $(cat "$dir/err")"
out=$("$b4box" tool -c nochmod.json --thread shell-c writeFile '{"path": "n.txt", "content": "no chmod"}' 2>&1 &&
        "$b4box" tool -c nochmod.json --thread shell-c readFile '{"path": "n.txt"}' 2>&1)
check "an image without chmod: writeFile and readFile through the scripts" \
        '[ "${out#*\"result\":\"no chmod\"}" != "$out" ]' || echo "# $out"

echo "1..$n"
[ "$failed" -eq 0 ]
