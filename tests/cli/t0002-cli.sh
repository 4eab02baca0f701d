#!/usr/bin/env bash
# The command line as a whole (issue 18): every subcommand answers --help, -h and `help CMD`
# with the same usage on stdout and exit 0; usage errors exit 2 with the usage line; each
# --json output parses with its documented keys; the catches of `b4box check`.
# Usage: t0002-cli.sh /path/to/b4box
set -u
B4BOX=${1:?usage: $0 B4BOX}
case $B4BOX in /*) ;; *) B4BOX=$PWD/$B4BOX ;; esac
tmp=$(mktemp -d "${TMPDIR:-/tmp}/b4cli.XXXXXX")
server_pid=
cleanup() {
    [ -n "$server_pid" ] && kill "$server_pid" 2>/dev/null && wait "$server_pid" 2>/dev/null
    rm -rf "$tmp"
}
trap cleanup EXIT
n=0

ok() { n=$((n + 1)); echo "ok $n - $1"; }
not_ok() { n=$((n + 1)); echo "not ok $n - $1"; shift; for l in "$@"; do echo "# $l"; done; }
verdict() { # verdict NAME CONDITION-RESULT
    if [ "$2" = 0 ]; then ok "$1"; else not_ok "$1" "rc $rc" "stdout: $out" "stderr: $err"; fi
}

# run ARGS...: runs b4box in $tmp, leaves $rc, $out, $err.
run() {
    (cd "$tmp" && "$B4BOX" "$@" >"$tmp/out" 2>"$tmp/err")
    rc=$?
    out=$(cat "$tmp/out")
    err=$(cat "$tmp/err")
}

# json_keys KEY...: $out is one JSON object with every KEY.
json_keys() {
    printf '%s' "$out" | python3 -c '
import json, sys
d = json.load(sys.stdin)
missing = [k for k in sys.argv[1:] if k not in d]
sys.exit(1 if missing else 0)' "$@"
}

# The commands, from the table behind `b4box help`.
commands=$("$B4BOX" help | sed -n '/^Commands:$/,/^$/p' | awk 'NF > 1 { print $1 }')
[ "$(echo "$commands" | wc -w)" -ge 14 ] && ok "help lists the commands" ||
    not_ok "help lists the commands" "$commands"

for c in $commands; do
    run help "$c"
    want=$out want_rc=$rc
    [ "$want_rc" = 0 ] && [ -z "$err" ] && printf '%s\n' "$want" | head -1 | grep -q "^Usage: b4box $c\b"
    verdict "help $c: usage on stdout, exit 0" $?
    for flag in --help -h; do
        run "$c" "$flag"
        [ "$rc" = 0 ] && [ -z "$err" ] && [ "$out" = "$want" ]
        verdict "$c $flag prints the same as help $c" $?
    done
done

# --help is never an argument, wherever it is, and runs nothing.
run --state "$tmp/st" destroy --help
[ "$rc" = 0 ] && [ ! -e "$tmp/st" ] && [ "${out#Usage: b4box destroy}" != "$out" ]
verdict "destroy --help destroys nothing (no state dir touched)" $?
run --state "$tmp/st" release t1 --help
[ "$rc" = 0 ] && [ ! -e "$tmp/st" ]
verdict "release ID --help releases nothing" $?
run --state "$tmp/st" exec --thread t1 --help -- true
[ "$rc" = 0 ] && [ ! -e "$tmp/st" ] && [ "${out#Usage: b4box exec}" != "$out" ]
verdict "exec --help runs nothing" $?
run --state "$tmp/st" tool --thread t1 --help readFile
[ "$rc" = 0 ] && [ ! -e "$tmp/st" ] && [ "${out#Usage: b4box tool}" != "$out" ]
verdict "tool --help runs nothing" $?

# Usage errors: exit 2, what was wrong, then the command's usage line.
while read -r c args; do
    # shellcheck disable=SC2086
    run $c $args
    [ "$rc" = 2 ] && printf '%s\n' "$err" | grep -q "^Usage: b4box $c\b" &&
        [ "$(printf '%s\n' "$err" | head -1 | cut -c1-7)" = "b4box: " ]
    verdict "usage error: $c $args" $?
done <<'LIST'
serve --bogus
threads
exec --thread t1
tool
read
release
destroy a b
bundle
bundle verify
upload
check extra
conformance --bogus
probe --bogus
help nosuchcommand
version extra
LIST
run nosuchcommand
[ "$rc" = 2 ]
verdict "an unknown command exits 2" $?

# --json, each with its documented keys.
run version --json
[ "$rc" = 0 ] && json_keys version
verdict "version --json" $?
mkdir -p "$tmp/proj"
printf 'hi\n' >"$tmp/proj/a"
run bundle create proj -o b.json --json
[ "$rc" = 0 ] && json_keys digest files bytes
verdict "bundle create --json" $?
digest=$(printf '%s' "$out" | python3 -c 'import json,sys; print(json.load(sys.stdin)["digest"])')
run bundle verify b.json --json
[ "$rc" = 0 ] && json_keys digest files bytes
verdict "bundle verify --json" $?

echo '{"sandbox": {"provider": {"type": "fake", "scope": "s"}, "network": {"mode": "deny"}}}' >"$tmp/fake.json"
run -c fake.json --state "$tmp/cst" check --json
[ "$rc" = 0 ] && json_keys config provider scope network ok exitCode refusals warnings controls &&
    printf '%s' "$out" | python3 -c 'import json,sys; d=json.load(sys.stdin); sys.exit(not (d["ok"] is True and d["network"] == "deny" and d["refusals"] == []))'
verdict "check --json" $?

# A server on a unix socket for threads, upload and read (fake provider, staged workspace).
printf 'tok-0123456789abcdef\n' >"$tmp/ctl.token"
cat >"$tmp/resolve.sh" <<'SH'
#!/bin/sh
exec python3 -c 'import json,sys; d=json.load(sys.stdin); print(json.dumps({"workspace": d["staged"]}) if d.get("staged") else "{}")'
SH
chmod +x "$tmp/resolve.sh"
cat >"$tmp/srv.json" <<'JSON'
{"sandbox": {"provider": {"type": "fake", "scope": "t"}, "network": {"mode": "deny"},
  "stagedWorkspaces": true, "workspaceRead": "http", "thread": {"command": ["./resolve.sh"]}},
 "threadAccess": {"principals": [{"name": "c", "tokenFile": "ctl.token", "threads": "all",
   "operations": ["thread.create", "thread.read", "thread.delete", "thread.workspace",
                  "workspace.source.put", "thread.run"]}], "stagedSources": "own"}}
JSON
(cd "$tmp" && exec "$B4BOX" -c srv.json --state "$tmp/sst" serve --listen "unix:$tmp/s.sock" \
    >"$tmp/srv.log" 2>&1) &
server_pid=$!
for _ in $(seq 50); do [ -S "$tmp/s.sock" ] && break; sleep 0.1; done
export B4BOX_TOKEN=tok-0123456789abcdef B4BOX_URL="unix:$tmp/s.sock"
run upload b.json --json
[ "$rc" = 0 ] && json_keys digest status
verdict "upload --json" $?
run threads create --id t1 --source "$digest" --json
[ "$rc" = 0 ] && json_keys thread_id sandbox
verdict "threads create --json" $?
run threads ls --json
[ "$rc" = 0 ] && json_keys threads
verdict "threads ls --json" $?
run exec --thread t1 -- true # the fake provider makes the workspace on the first run
run read t1 --json
[ "$rc" = 0 ] && json_keys threadId sourceDigest inspection
verdict "read --json" $?
# the fake provider keeps no network audit: the one shape, enforced false, with the reason
run network t1 --json
[ "$rc" = 0 ] && json_keys thread provider enforced reason dns destinations denials &&
    printf '%s' "$out" | python3 -c 'import json,sys; d=json.load(sys.stdin); sys.exit(not (d["enforced"] is False and d["thread"] == "t1" and d["dns"]["events"] == [] and "no network audit" in d["reason"]))'
verdict "network --json through the server: not enforced on fake" $?
run network t1
[ "$rc" = 0 ] && [ "$out" = "thread t1 (fake): not audited: this provider keeps no network audit" ]
verdict "network: the reason in words" $?
m=$(curl -s --unix-socket "$tmp/s.sock" -H "Authorization: Bearer $B4BOX_TOKEN" http://x/metrics)
printf '%s\n' "$m" | grep -qx 'b4box_network_audited_threads 0' &&
    printf '%s\n' "$m" | grep -qx 'b4box_network_dns_queries{result="admitted"} 0'
verdict "metrics: the network totals (nothing audited on fake)" $?
run network nosuch --json
[ "$rc" != 0 ] && printf '%s\n' "$err" | grep -q "thread_not_found\|not found"
verdict "network: an unknown thread is not found" $?
unset B4BOX_TOKEN B4BOX_URL
run -c srv.json --state "$tmp/lst" network t1 --json
[ "$rc" = 0 ] && json_keys thread provider enforced reason
verdict "network --json locally" $?

# b4box check catches what start-up or a first run would refuse.
# check_refuses NAME STDERR-PATTERN REFUSAL-SUBSTRING CONFIG-JSON
check_refuses() {
    printf '%s\n' "$4" >"$tmp/c.json"
    run -c c.json --state "$tmp/cst" check
    [ "$rc" = 1 ] && printf '%s\n' "$err" | grep -q -- "$2"
    verdict "check: $1" $?
    run -c c.json --state "$tmp/cst" check --json
    [ "$rc" = 1 ] && json_keys refusals &&
        printf '%s' "$out" | python3 -c 'import json,sys; d=json.load(sys.stdin); sys.exit(not (d["ok"] is False and any(sys.argv[1] in r for r in d["refusals"])))' "$3"
    verdict "check --json: $1" $?
}
principal() { # principal TOKEN-FILE
    printf '{"sandbox": {"provider": {"type": "fake", "scope": "s"}}, "threadAccess": {"principals": [{"name": "p", "tokenFile": "%s", "operations": ["thread.read"]}]}}' "$1"
}
check_refuses "a missing token file" "cannot read the token of principal 'p' from '$tmp/none.token'" \
    "from '$tmp/none.token': No such file" \
    "$(principal "$tmp/none.token")"
printf 'short\n' >"$tmp/short.token"
check_refuses "a token file shorter than 16 characters" "the token of principal 'p' in '$tmp/short.token' is shorter than 16" \
    "is shorter than 16 characters" \
    "$(principal "$tmp/short.token")"
check_refuses "a resolver program that does not exist" "sandbox.thread.command: the resolver program '.*nope' does not exist" \
    "nope' does not exist" \
    '{"sandbox": {"provider": {"type": "fake", "scope": "s"}, "thread": {"command": ["./nope"]}}}'
printf '#!/bin/sh\n' >"$tmp/noexec.sh"
check_refuses "a resolver program that is not executable" "sandbox.workspace.command: the resolver program '.*noexec.sh' is not executable" \
    "noexec.sh' is not executable" \
    '{"sandbox": {"provider": {"type": "fake", "scope": "s"}, "workspace": {"command": ["./noexec.sh"]}}}'
check_refuses "a policy program that does not exist" "threadAccess.command: the policy program '.*nopolicy' does not exist" \
    "nopolicy' does not exist" \
    '{"sandbox": {"provider": {"type": "fake", "scope": "s"}}, "threadAccess": {"command": ["./nopolicy"]}}'
check_refuses "a per-thread image on native that is not in the store" "image 'python:3': image 'python:3' is not in the store (b4box image import FILE --name python:3)" \
    "image 'python:3' is not in the store" \
    '{"sandbox": {"provider": {"type": "native", "scope": "s", "images": ["python:3", "node:*"]}, "network": {"mode": "deny"}}}'
check_refuses "an unreachable docker daemon" "Docker daemon not reachable" "Docker daemon not reachable" \
    "{\"sandbox\": {\"provider\": {\"type\": \"docker\", \"scope\": \"s\", \"image\": \"alpine:3\", \"host\": \"unix://$tmp/no.sock\"}}}"

echo '{"sandbox": {"provider": {"type": "fake", "scope": "s"}, "network": {"mode": "deny", "allowlist": ["10.0.0.0/8"]}}}' >"$tmp/ne.json"
run -c ne.json --state "$tmp/cst" check
[ "$rc" = 0 ]
verdict "a NOT ENFORCED control passes without --strict" $?
run -c ne.json --state "$tmp/cst" check --strict
[ "$rc" = 3 ] && printf '%s\n' "$out" | grep -q '^network allowlist  *NOT ENFORCED'
verdict "check --strict exits 3 on a NOT ENFORCED control" $?
run -c ne.json --state "$tmp/cst" check --strict --json
[ "$rc" = 3 ] && printf '%s' "$out" | python3 -c 'import json,sys; d=json.load(sys.stdin); sys.exit(not (d["exitCode"] == 3 and any(c["state"] == "not_enforced" for c in d["controls"])))'
verdict "check --strict --json: exitCode 3, the control not_enforced" $?

# Messages name the real config file.
echo '{"sandbox": {"colour": "red"}}' >"$tmp/trial"
run -c trial check
[ "$rc" = 1 ] && printf '%s\n' "$err" | tail -1 | grep -qx "b4box: the configuration file 'trial' is refused"
verdict "a refused config names its file" $?

echo "1..$n"
