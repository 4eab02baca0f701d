#!/usr/bin/env bash
# POST /threads/{id}/workspace/inspect end to end over the fake provider (reference §6.2):
# policy before body, the option switch, body and option bounds, every refusal code and
# status, ignorePrefixes, the 64 MiB answer cap, the run slot, cancel and timeout. The
# config names a thread resolver because workspaceRead needs managed workspaces; admission
# does not run it yet, so threads use provider storage and the digests answer null.
B4BOX=${B4BOX:?}
. "$(dirname "$0")/lib.sh"

printf 'alice-token-0123456789\n' > "$WORK/alice.token"
printf 'bob-token-0123456789\n' > "$WORK/bob.token"
printf 'carol-token-0123456789\n' > "$WORK/carol.token"
A=(-H "Authorization: Bearer alice-token-0123456789")
B=(-H "Authorization: Bearer bob-token-0123456789")
C=(-H "Authorization: Bearer carol-token-0123456789")
ALL='["thread.create", "thread.read", "thread.run", "thread.delete", "thread.workspace"]'
POLICY="\"threadAccess\": {\"principals\": [
    {\"name\": \"alice\", \"tokenFile\": \"$WORK/alice.token\", \"operations\": $ALL, \"threads\": \"own\"},
    {\"name\": \"bob\", \"tokenFile\": \"$WORK/bob.token\", \"operations\": [\"thread.create\", \"thread.read\", \"thread.run\"], \"threads\": \"all\"},
    {\"name\": \"carol\", \"tokenFile\": \"$WORK/carol.token\", \"operations\": $ALL, \"threads\": \"own\"}]}"
# workspaceRead needs managed workspaces: a thread resolver that gives every thread an empty
# starting workspace (the files the test inspects are written by the thread itself).
mkdir -p "$WORK/empty"
printf '#!/bin/sh\ncat >/dev/null\necho '"'"'{"workspace": {"source": {"directory": "empty", "include": []}}}'"'"'\n' > "$WORK/resolve.sh"
chmod +x "$WORK/resolve.sh"
config() { # config EXTRA_SANDBOX_KEYS
        printf '{"sandbox": {"provider": {"type": "fake", "scope": "it"}, "thread": {"command": ["%s"]}%s}, "permissions": {"mode": "bypass"}, %s}' "$WORK/resolve.sh" "$1" "$POLICY"
}
inspect() { req POST "/threads/$1/workspace/inspect" "$2" "${A[@]}"; }
code() { json_get "$BODY" error.details.code; }
msg() { json_get "$BODY" error.message; }
write() { req POST "/threads/$1/tools/writeFile" "$2" "${A[@]}"; }

# --- the option off ---
start_server "$(config '')" "$WORK/s0" || { not_ok "server starts"; done_testing; exit 1; }
req POST /threads '{"thread_id": "t"}' "${A[@]}"
inspect t '{}'
check "option off: 404" [ "$STATUS" = 404 ]
check "option off: the bare Not found body (and its newline)" [ "$BODY" = $'{"error":{"message":"Not found"}}\n' ]
head -c 200000 /dev/zero | tr '\0' ' ' > "$WORK/big.json"
inspect t "@$WORK/big.json"
check "option off answers 404 before refusing a large body" [ "$STATUS" = 404 ]
req POST /threads/t/workspace/inspect '{}' "${B[@]}"
check "option off: a caller without thread.workspace gets the policy's 404 first" \
        [ "$STATUS" = 404 ] && [ "$(code)" = thread_not_found ]
stop_server

# --- the option on ---
start_server "$(config ', "workspaceRead": "http"')" "$WORK/s1" ||
        { not_ok "server starts with workspaceRead"; done_testing; exit 1; }
req POST /threads '{"thread_id": "t"}' "${A[@]}"
req POST /threads '{"thread_id": "fresh"}' "${A[@]}"
req POST /threads '{"thread_id": "ct"}' "${C[@]}"
write t '{"path": "README.md", "content": "# hi\n"}'
write t '{"path": "src/main.c", "content": "int main(void) { return 0; }\n"}'
write t '{"path": "src/lib/util.h", "content": "#pragma once\n"}'
write t '{"path": "notes.txt", "content": "caf\u00e9"}'
check "files written" [ "$STATUS" = 200 ]

inspect t '{}'
check "200" [ "$STATUS" = 200 ]
check "threadId" [ "$(json_get "$BODY" threadId)" = t ]
EMPTY_DIGEST=$("$B4BOX" bundle create "$WORK/empty" -o "$WORK/empty.bundle.json")
check "sourceDigest is the one recorded at admission" [ "$(json_get "$BODY" sourceDigest)" = "$EMPTY_DIGEST" ]
check "intentDigest is recorded too" glob "$(json_get "$BODY" intentDigest)" "$(printf '[0-9a-f]%.0s' $(seq 64))"
check "files in depth-first order" [ "$(python3 -c 'import json,sys; print(",".join(json.loads(sys.argv[1])["inspection"]["files"]))' "$BODY")" = "README.md,notes.txt,src/lib/util.h,src/main.c" ]
if [ "$(json_get "$BODY" inspection.files.notes\\.txt 2>/dev/null || python3 -c 'import json,sys; print(json.loads(sys.argv[1])["inspection"]["files"]["notes.txt"])' "$BODY")" = "café" ]; then ok "UTF-8 text"; else not_ok "UTF-8 text"; fi
check "entries count directories" [ "$(json_get "$BODY" inspection.entries)" = 6 ]
check "totalBytes" [ "$(json_get "$BODY" inspection.totalBytes)" = $((5 + 5 + 13 + 29)) ]
check "no root key without a root" [ "$(json_get "$BODY" root)" = "" ]
H=$(curl -s "${JSON[@]}" -D - -o /dev/null --unix-socket "$SOCK" -X POST -d '{}' "${A[@]}" http://b4/threads/t/workspace/inspect)
check "cache-control: no-store" grep -qi '^cache-control: no-store' <<<"$H"
check "content-type: application/json" grep -qi '^content-type: application/json' <<<"$H"
req POST /threads/t/workspace/inspect "" "${A[@]}"
check "an empty body means no options" [ "$STATUS" = 200 ]

inspect t '{"root": "src"}'
if [ "$STATUS" = 200 ] && [ "$(json_get "$BODY" root)" = src ]; then ok "root: 200"; else not_ok "root: 200"; fi
check "root: keys relative to it" [ "$(python3 -c 'import json,sys; print(",".join(json.loads(sys.argv[1])["inspection"]["files"]))' "$BODY")" = "lib/util.h,main.c" ]
inspect t '{"ignorePrefixes": ["src/"]}'
check "ignorePrefixes drop keys" [ "$(python3 -c 'import json,sys; print(",".join(json.loads(sys.argv[1])["inspection"]["files"]))' "$BODY")" = "README.md,notes.txt" ]
if [ "$(json_get "$BODY" inspection.totalBytes)" = 52 ] && [ "$(json_get "$BODY" inspection.entries)" = 6 ]; then ok "ignored files still count"; else not_ok "ignored files still count"; fi
inspect t '{"consistent": true}'
check "consistent read: 200" [ "$STATUS" = 200 ]

# unsupported: "skip" and excludePaths (issue 16 item 7); binary files through the fs route
req POST /threads '{"thread_id": "sk"}' "${A[@]}"
write sk '{"path": "README.md", "content": "# sk\n"}'
req POST /threads/sk/fs/write '{"path": "build/app.bin", "content": "AAEC/w==", "encoding": "base64"}' "${A[@]}"
req POST /threads/sk/fs/write '{"path": "latin1.txt", "content": "Y2Fm6Q==", "encoding": "base64"}' "${A[@]}"
write sk '{"path": "vendor/lib/x.txt", "content": "x"}'
inspect sk '{}'
if [ "$STATUS" = 422 ] && [ "$(code)" = workspace_inspection_refused ]; then ok "skip: the default refuses a binary file"; else not_ok "skip: the default refuses a binary file"; fi
inspect sk '{"unsupported": "skip"}'
check "skip: 200" [ "$STATUS" = 200 ]
check "skip: the text files" [ "$(python3 -c 'import json,sys; print(",".join(json.loads(sys.argv[1])["inspection"]["files"]))' "$BODY")" = "README.md,vendor/lib/x.txt" ]
check "skip: listed with their reasons" [ "$(json_get "$BODY" inspection.skipped)" = '[{"path": "build/app.bin", "reason": "binary"}, {"path": "latin1.txt", "reason": "not_utf8"}]' ]
inspect sk '{"unsupported": "skip", "excludePaths": ["vendor/lib"], "ignorePrefixes": ["build/"]}'
check "excludePaths: a nested directory left out" [ "$(python3 -c 'import json,sys; print(",".join(json.loads(sys.argv[1])["inspection"]["files"]))' "$BODY")" = "README.md" ]
check "ignorePrefixes apply to skipped too" [ "$(json_get "$BODY" inspection.skipped)" = '[{"path": "latin1.txt", "reason": "not_utf8"}]' ]
inspect sk '{"unsupported": "refuse"}'
check "unsupported refuse is the default" [ "$STATUS" = 422 ]
inspect sk '{"unsupported": "ignore"}'
if [ "$STATUS" = 400 ] && [ "$(code)" = invalid_request ]; then ok "unsupported: another value is 400"; else not_ok "unsupported: another value is 400"; fi
inspect sk '{"excludePaths": ["../x"]}'
if [ "$STATUS" = 400 ] && glob "$(msg)" 'Invalid excluded path: "../x"'; then ok "excludePaths: a non-canonical path is 400"; else not_ok "excludePaths: a non-canonical path is 400"; fi
inspect sk '{"excludePaths": "vendor"}'
check "excludePaths: not a list is 400" [ "$STATUS" = 400 ]
B4BOX_TOKEN=alice-token-0123456789 "$B4BOX" read sk --skip-unsupported --exclude-path vendor/lib \
        --server "unix:$SOCK" > "$WORK/read-skip.txt" 2>&1
if [ $? = 0 ] &&
        grep -q '^thread sk: 1 files' "$WORK/read-skip.txt" &&
        grep -q '^skipped: 2$' "$WORK/read-skip.txt" &&
        grep -q '^  build/app.bin (binary)$' "$WORK/read-skip.txt"; then ok "b4box read --skip-unsupported --exclude-path"; else not_ok "b4box read --skip-unsupported --exclude-path"; fi

# --- access and existence ---
req POST /threads/t/workspace/inspect '{}'
check "no token: 401" [ "$STATUS" = 401 ]
req POST /threads/t/workspace/inspect '{}' "${B[@]}"
check "no thread.workspace: 404 (a read)" [ "$STATUS" = 404 ]
req POST /threads/t/workspace/inspect '{}' "${C[@]}"
check "another principal's thread: 404" [ "$STATUS" = 404 ]
req POST /threads/t/workspace/inspect "@$WORK/big.json" "${C[@]}"
check "a refused caller cannot make the server read a large body" [ "$STATUS" = 404 ]
inspect nope '{}'
if [ "$STATUS" = 404 ] && [ "$(code)" = thread_not_found ]; then ok "missing thread: 404 thread_not_found"; else not_ok "missing thread: 404 thread_not_found"; fi
inspect fresh '{}'
if [ "$STATUS" = 404 ] && [ "$(code)" = workspace_not_found ]; then ok "a thread that never ran: 404 workspace_not_found"; else not_ok "a thread that never ran: 404 workspace_not_found"; fi

# --- the body and its bounds ---
inspect t "@$WORK/big.json"
if [ "$STATUS" = 413 ] && [ "$(code)" = payload_too_large ]; then ok "body over 64 KiB: 413"; else not_ok "body over 64 KiB: 413"; fi
inspect t "@$WORK/big.json" -H 'Transfer-Encoding: chunked'
check "chunked body over 64 KiB: 413" [ "$STATUS" = 413 ]
inspect t '{"colour": 1}'
if [ "$STATUS" = 400 ] && [ "$(msg)" = "Unknown workspace read option: colour" ]; then ok "unknown option: 400"; else not_ok "unknown option: 400"; fi
inspect t '[1]'
if [ "$STATUS" = 400 ] && [ "$(code)" = invalid_request ]; then ok "not an object: 400"; else not_ok "not an object: 400"; fi
for bad in '"../x"' '"/abs"' '"a//b"' '""' '3'; do
        inspect t "{\"root\": $bad}"
        if [ "$STATUS" = 400 ] && glob "$(msg)" "Invalid workspace inspection root: *"; then ok "root $bad: 400 naming the root"; else not_ok "root $bad: 400 naming the root"; fi
done
for kv in 'maxEntries 10001' 'maxEntries -1' 'maxEntries 1.5' 'maxFileBytes 16777217' 'maxTotalBytes 33554433' 'maxTotalBytes "1"'; do
        set -- $kv
        inspect t "{\"$1\": $2}"
        if [ "$STATUS" = 400 ] && glob "$(msg)" "$1 must be an integer from 0 to *"; then ok "$1 $2 is refused, never lowered: 400"; else not_ok "$1 $2 is refused, never lowered: 400"; fi
done
inspect t '{"maxEntries": 10000, "maxFileBytes": 16777216, "maxTotalBytes": 33554432}'
check "the caps themselves are accepted" [ "$STATUS" = 200 ]
inspect t "{\"excludeRootDirectories\": [$(seq -s, 1 65 | sed 's/[0-9]*/"d&"/g')]}"
check "65 excluded roots: 400" [ "$STATUS" = 400 ]
inspect t '{"excludeRootDirectories": [""]}'
check "an empty excluded root: 400" [ "$STATUS" = 400 ]
inspect t '{"ignorePrefixes": ["/src"]}'
check "an absolute ignore prefix: 400" [ "$STATUS" = 400 ]
inspect t '{"expectedRootSymlinks": {"env": ""}}'
check "an empty link target: 400" [ "$STATUS" = 400 ]
inspect t '{"consistent": "yes"}'
check "consistent must be a boolean" [ "$STATUS" = 400 ]
inspect t '{"excludeRootDirectories": ["a/b"]}'
if [ "$STATUS" = 400 ] && [ "$(msg)" = 'Invalid excluded root directory: "a/b"' ]; then ok "invalid_options from the inspection: 400"; else not_ok "invalid_options from the inspection: 400"; fi
inspect t '{"excludeRootDirectories": ["x"], "expectedRootSymlinks": {"x": "y"}}'
if [ "$STATUS" = 400 ] && [ "$(msg)" = "Conflicting root policy: x" ]; then ok "conflicting root policy: 400"; else not_ok "conflicting root policy: 400"; fi

# --- refusals of the inspection ---
inspect t '{"root": "missing/deeper"}'
if [ "$STATUS" = 422 ] && [ "$(code)" = workspace_root_missing ]; then ok "absent root: 422 workspace_root_missing"; else not_ok "absent root: 422 workspace_root_missing"; fi
if [ "$(json_get "$BODY" error.details.kind)" = absent ] && [ "$(json_get "$BODY" error.details.root)" = missing/deeper ]; then ok "absent root: details"; else not_ok "absent root: details"; fi
check "absent root: message" [ "$(msg)" = 'Workspace root "missing/deeper" is missing ("missing" does not exist)' ]
inspect t '{"root": "README.md"}'
if [ "$STATUS" = 422 ] && [ "$(json_get "$BODY" error.details.kind)" = not_directory ]; then ok "file root: not_directory"; else not_ok "file root: not_directory"; fi
inspect t '{"maxFileBytes": 10}'
if [ "$STATUS" = 422 ] && [ "$(code)" = workspace_inspection_refused ] && [ "$(msg)" = "Workspace file bytes limit exceeded: src/lib/util.h" ]; then ok "file bytes limit: 422 workspace_inspection_refused"; else not_ok "file bytes limit: 422 workspace_inspection_refused"; fi
inspect t '{"maxTotalBytes": 20}'
if [ "$STATUS" = 422 ] && [ "$(msg)" = "Workspace file bytes limit exceeded: src/lib/util.h" ]; then ok "total bytes limit: 422"; else not_ok "total bytes limit: 422"; fi
inspect t '{"maxEntries": 5}'
if [ "$STATUS" = 422 ] && [ "$(msg)" = "Workspace entries limit exceeded" ]; then ok "entries limit: 422"; else not_ok "entries limit: 422"; fi
inspect t '{"expectedRootSymlinks": {"env": "/etc"}}'
if [ "$STATUS" = 422 ] && [ "$(msg)" = "Missing expected root symlink: env" ]; then ok "missing expected symlink: 422"; else not_ok "missing expected symlink: 422"; fi
inspect t '{"excludeRootDirectories": ["README.md"]}'
if [ "$STATUS" = 422 ] && [ "$(msg)" = "Excluded root must be a directory" ]; then ok "an excluded root that is a file: 422"; else not_ok "an excluded root that is a file: 422"; fi
inspect t '{"excludeRootDirectories": ["src"]}'
if [ "$STATUS" = 200 ] && [ "$(json_get "$BODY" inspection.entries)" = 3 ]; then ok "an excluded directory is skipped"; else not_ok "an excluded directory is skipped"; fi

# --- the client: b4box read ---
RD() { B4BOX_TOKEN=alice-token-0123456789 "$B4BOX" read "$@" 2>"$WORK/rd.err"; }
OUT=$(RD t --server "unix:$SOCK")
check "read: exit 0" [ $? = 0 ]
check "read: lists the files" grep -q '^  src/lib/util.h$' <<<"$OUT"
check "read: the summary line" grep -q '^thread t: 4 files, 52 bytes, 6 entries$' <<<"$OUT"
OUT=$(B4BOX_URL="unix:$SOCK" RD t --root src --json)
if [ "$(json_get "$OUT" root)" = src ] && [ "$(json_get "$OUT" inspection.entries)" = 3 ]; then ok "read --json via B4BOX_URL"; else not_ok "read --json via B4BOX_URL"; fi
OUT=$(RD t --server "unix:$SOCK" --exclude src --consistent --json)
check "read --exclude --consistent" [ "$(json_get "$OUT" inspection.entries)" = 3 ]
RD t --server "unix:$SOCK" --expect-source "$(printf 'a%.0s' $(seq 64))" >/dev/null
if [ $? = 1 ] && grep -q '^b4box: source_mismatch' "$WORK/rd.err"; then ok "read refuses another source digest"; else not_ok "read refuses another source digest"; fi
RD t --server "unix:$SOCK" --root missing >/dev/null
if [ $? = 1 ] && grep -q 'workspace_root_missing: Workspace root "missing" is missing' "$WORK/rd.err"; then ok "read reports the server's refusal code"; else not_ok "read reports the server's refusal code"; fi
"$B4BOX" read t --server "unix:$SOCK" >/dev/null 2>"$WORK/rd.err"
if [ $? = 1 ] && grep -q 'unauthorized.*HTTP 401' "$WORK/rd.err"; then ok "read without a token: 401 reported"; else not_ok "read without a token: 401 reported"; fi
"$B4BOX" read >/dev/null 2>&1
check "read without a thread: usage error" [ $? = 2 ]

# --- the 64 MiB answer cap: 3 files of 5 MiB control bytes, each escaped to 30 MiB ---
for f in 1 2 3; do
        python3 -c 'import sys; sys.stdout.write("{\"path\": \"big/" + sys.argv[1] + "\", \"content\": \"" + "\\u0001" * (5 * 1024 * 1024) + "\"}")' $f > "$WORK/w.json"
        write t "@$WORK/w.json"
done
check "large files written" [ "$STATUS" = 200 ]
inspect t '{"maxFileBytes": 16777216}'
if [ "$STATUS" = 422 ] && [ "$(code)" = workspace_response_too_large ]; then ok "answer over 64 MiB: 422 workspace_response_too_large"; else not_ok "answer over 64 MiB: 422 workspace_response_too_large"; fi
check "with details.maxBytes" [ "$(json_get "$BODY" error.details.maxBytes)" = 67108864 ]
inspect t '{"maxFileBytes": 16777216, "ignorePrefixes": ["big/"]}'
check "ignorePrefixes bring it under the cap" [ "$STATUS" = 200 ]
stop_server

# --- the slot, cancel and timeout (reader opens slowed down in the fake) ---
B4BOX_FAKE_READ_DELAY_MS=4000 start_server "$(config ', "workspaceRead": "http", "workspaceReadTimeoutMs": 20000')" "$WORK/s2" ||
        { not_ok "slow server starts"; done_testing; exit 1; }
req POST /threads '{"thread_id": "t"}' "${A[@]}"
write t '{"path": "a", "content": "1"}'
( inspect t '{}'; echo "$STATUS $(code)" > "$WORK/bg1" ) &
BG=$!
sleep 0.5
write t '{"path": "b", "content": "2"}'
if [ "$STATUS" = 409 ] && [ "$(code)" = run_in_flight ]; then ok "a run during the read: 409 run_in_flight"; else not_ok "a run during the read: 409 run_in_flight"; fi
inspect t '{}'
if [ "$STATUS" = 409 ] && [ "$(code)" = run_in_flight ]; then ok "a second read during the read: 409 run_in_flight"; else not_ok "a second read during the read: 409 run_in_flight"; fi
req DELETE /threads/t "" "${A[@]}"
check "a delete during the read: 409" [ "$STATUS" = 409 ]
T0=$(date +%s%N)
req POST /threads/t/cancel "" "${A[@]}"
check "cancel the read: 202" [ "$STATUS" = 202 ]
wait $BG
T1=$(date +%s%N)
check "the read answers 409 read_cancelled" [ "$(cat "$WORK/bg1")" = "409 read_cancelled" ]
check "at once, not when the reader finishes" [ $(( (T1 - T0) / 1000000 )) -lt 2500 ]
write t '{"path": "b", "content": "2"}'
check "the slot is free after cancel" [ "$STATUS" = 200 ]
stop_server

B4BOX_FAKE_READ_DELAY_MS=5000 start_server "$(config ', "workspaceRead": "http", "workspaceReadTimeoutMs": 1000')" "$WORK/s3" ||
        { not_ok "timeout server starts"; done_testing; exit 1; }
req POST /threads '{"thread_id": "t"}' "${A[@]}"
write t '{"path": "a", "content": "1"}'
T0=$(date +%s%N)
inspect t '{}'
T1=$(date +%s%N)
if [ "$STATUS" = 504 ] && [ "$(code)" = workspace_read_timeout ]; then ok "the deadline: 504 workspace_read_timeout"; else not_ok "the deadline: 504 workspace_read_timeout"; fi
if [ $(( (T1 - T0) / 1000000 )) -ge 900 ] && [ $(( (T1 - T0) / 1000000 )) -lt 3000 ]; then ok "after about workspaceReadTimeoutMs"; else not_ok "after about workspaceReadTimeoutMs"; fi
write t '{"path": "b", "content": "2"}'
check "the slot is free after the timeout" [ "$STATUS" = 200 ]
stop_server

# --- the client against a server that lies (canned answers on a unix socket) ---
canned() { # canned FILE: answer one request with the raw HTTP bytes in FILE
        rm -f "$WORK/canned.sock"
        python3 - "$WORK/canned.sock" "$1" <<'PY' &
import socket, sys
s = socket.socket(socket.AF_UNIX); s.settimeout(30); s.bind(sys.argv[1]); s.listen(1)
c, _ = s.accept(); c.recv(65536)
try:
    c.sendall(open(sys.argv[2], 'rb').read())
except OSError:
    pass
c.close()
PY
        for _ in $(seq 50); do [ -S "$WORK/canned.sock" ] && return; sleep 0.05; done
}
answer() { # answer BODY > file
        printf 'HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n%s' "${#1}" "$1"
}
GOOD='{"threadId":"t","sourceDigest":null,"intentDigest":null,"inspection":{"files":{"a":"x"},"symlinks":{},"totalBytes":1,"entries":1}}'
answer "$GOOD" > "$WORK/a1"; canned "$WORK/a1"
"$B4BOX" read t --server "unix:$WORK/canned.sock" >/dev/null 2>"$WORK/rd.err"
check "client accepts a well-formed answer" [ $? = 0 ]
wait
answer "${GOOD/\"t\"/\"other\"}" > "$WORK/a2"; canned "$WORK/a2"
"$B4BOX" read t --server "unix:$WORK/canned.sock" >/dev/null 2>"$WORK/rd.err"
if [ $? = 1 ] && grep -q thread_mismatch "$WORK/rd.err"; then ok "client refuses an answer about another thread"; else not_ok "client refuses an answer about another thread"; fi
wait
answer "${GOOD/\"entries\":1/\"entries\":1,\"extra\":2}" > "$WORK/a3"; canned "$WORK/a3"
"$B4BOX" read t --server "unix:$WORK/canned.sock" >/dev/null 2>"$WORK/rd.err"
if [ $? = 1 ] && grep -q malformed_response "$WORK/rd.err"; then ok "client refuses an unknown key"; else not_ok "client refuses an unknown key"; fi
wait
answer "${GOOD/\"a\":/\"../a\":}" > "$WORK/a4"; canned "$WORK/a4"
"$B4BOX" read t --server "unix:$WORK/canned.sock" >/dev/null 2>"$WORK/rd.err"
if [ $? = 1 ] && grep -q malformed_response "$WORK/rd.err"; then ok "client refuses a file key outside the root"; else not_ok "client refuses a file key outside the root"; fi
wait
{ printf 'HTTP/1.1 200 OK\r\nContent-Length: 70000000\r\n\r\n'; head -c 70000000 /dev/zero | tr '\0' ' '; } > "$WORK/a5"
canned "$WORK/a5"
"$B4BOX" read t --server "unix:$WORK/canned.sock" >/dev/null 2>"$WORK/rd.err"
if [ $? = 1 ] && grep -q response_too_large "$WORK/rd.err"; then ok "client stops reading past 64 MiB"; else not_ok "client stops reading past 64 MiB"; fi
wait

done_testing
