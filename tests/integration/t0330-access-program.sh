#!/usr/bin/env bash
# threadAccess.command (docs/configuration.md "The policy program"): a long-running program
# decides each request from one JSON line; its identity owns threads and uploads, its stamp
# is kept with an upload and shown to the create that names it; a slow, lying or dead program
# denies that request and is restarted. Also the staged sources' list, get and delete.
B4BOX=${B4BOX:?}
. "$(dirname "$0")/lib.sh"

PROG=$(cd "$(dirname "$0")" && pwd)/policy-program.py
mkdir -p "$WORK/empty"
cat > "$WORK/resolve.py" <<'PY'
#!/usr/bin/python3
import json, sys
d = json.load(sys.stdin)
print(json.dumps({"workspace": d["staged"] or {"source": {"directory": "empty", "include": []}}}))
PY
chmod +x "$WORK/resolve.py"
A=(-H "Authorization: Bearer alice-token-0123456789abc")
B=(-H "Authorization: Bearer bob-token-0123456789abc")
LOG=$WORK/decisions.log

start_server "{\"server\": {\"headerTimeoutMs\": 800},
  \"sandbox\": {\"provider\": {\"type\": \"fake\", \"scope\": \"ap\"},
  \"thread\": {\"command\": [\"$WORK/resolve.py\"]}, \"stagedWorkspaces\": true},
  \"threadAccess\": {\"command\": [\"$PROG\", \"$LOG\"], \"decisionTimeoutMs\": 2000}}" ||
        { not_ok "server starts with a command and no principals"; done_testing; exit 1; }
ok "server starts with a command and no principals"

req POST /threads '{"thread_id": "t1"}'
if [ "$STATUS" = 403 ] &&
        [ "$(json_get "$BODY" error.details.code)" = forbidden ]; then ok "no token: the program denies a create: 403"; else not_ok "no token: the program denies a create: 403"; fi
req POST /threads '{"thread_id": "t1"}' "${A[@]}"
if [ "$STATUS" = 201 ] && [ "$(json_get "$BODY" owner)" = alice ]; then ok "alice creates t1"; else not_ok "alice creates t1"; fi
req GET /threads/t1 "" "${B[@]}"
HIDDEN=$BODY
req GET /threads/nope "" "${B[@]}"
if [ "$STATUS" = 404 ] &&
        [ "${HIDDEN/t1/nope}" = "$BODY" ]; then ok "bob is told t1 does not exist, exactly as a missing thread"; else not_ok "bob is told t1 does not exist, exactly as a missing thread"; fi
req GET /threads "" "${B[@]}"
if [ "$STATUS" = 200 ] && ! glob "$BODY" "*t1*"; then ok "bob's list does not show t1"; else not_ok "bob's list does not show t1"; fi
req GET /threads "" "${A[@]}"
if [ "$STATUS" = 200 ] && glob "$BODY" "*\"t1\"*"; then ok "alice's list shows t1"; else not_ok "alice's list shows t1"; fi
req POST /threads/t1/tools/runBash '{"command": "echo hi"}' "${A[@]}"
if [ "$STATUS" = 200 ] && [ "$(json_get "$BODY" result.exitCode)" = 0 ]; then ok "alice runs on t1"; else not_ok "alice runs on t1"; fi
req POST /threads '{"thread_id": "locked1"}' "${A[@]}"
req GET /threads/locked1 "" "${A[@]}"
if [ "$STATUS" = 423 ] &&
        [ "$(json_get "$BODY" error.message)" = "this thread is locked" ]; then ok "the program's status and message are answered"; else not_ok "the program's status and message are answered"; fi

line=$(grep '"thread.create"' "$LOG" | head -1)
check "the request line carries action and operation" glob "$line" '*"action":"create"*'
digest=$(printf %s alice-token-0123456789abc | sha256sum | cut -c1-64)
if grep -q "\"tokenDigest\":\"$digest\"" "$LOG" &&
        ! grep -q "alice-token" "$LOG"; then ok "... the token's digest, never the token"; else not_ok "... the token's digest, never the token"; fi
if glob "$line" '*"content-type":"application/json"*' &&
        ! grep -qi '"authorization"' "$LOG"; then ok "... lower-cased headers, without authorization"; else not_ok "... lower-cased headers, without authorization"; fi

req GET /threads/t1 "" "${A[@]}" -H "X-Test-Pause: 1.2"
check "a decision longer than headerTimeoutMs (800 ms) but within decisionTimeoutMs stands" \
        [ "$STATUS" = 200 ]
t0=$(date +%s%N)
req GET /threads/t1 "" "${A[@]}" -H "X-Test-Slow: 1"
ms=$(( ($(date +%s%N) - t0) / 1000000 ))
check "a program that does not answer in time: denied" [ "$STATUS" = 404 ]
if [ "$ms" -ge 1900 ] && [ "$ms" -lt 4500 ]; then ok "... within about decisionTimeoutMs ($ms ms)"; else not_ok "... within about decisionTimeoutMs ($ms ms)"; fi
sleep 0.3
req GET /threads/t1 "" "${A[@]}"
check "the next request is decided by a restarted program" [ "$STATUS" = 200 ]
req GET /threads/t1 "" "${A[@]}" -H "X-Test-Garbage: 1"
check "a malformed answer: denied" [ "$STATUS" = 404 ]
sleep 0.3
req GET /threads/t1 "" "${A[@]}" -H "X-Test-Exit: 1"
check "a program that exits: denied" [ "$STATUS" = 404 ]
sleep 0.3
req GET /threads/t1 "" "${A[@]}"
check "... and restarted" [ "$STATUS" = 200 ]
check "decisions are logged" grep -q 'msg=access decision=deny operation=thread.read thread=t1' "$WORK/server.log"
check "a failure says why in the log" grep -q 'msg=access decision=deny .*error=' "$WORK/server.log"

# Staged: the stamp names the uploader; only an uploader may create from the source.
mkdir -p "$WORK/src"
printf 'hello\n' > "$WORK/src/main.txt"
D=$("$B4BOX" bundle create "$WORK/src" -o "$WORK/b.json")
req PUT "/workspace/sources/$D" "@$WORK/b.json" "${A[@]}"
check "alice uploads" [ "$STATUS" = 201 ]
req POST /threads "{\"thread_id\": \"w-bob\", \"workspace\": {\"sourceDigest\": \"$D\"}}" "${B[@]}"
if [ "$STATUS" = 403 ] &&
        [ "$(json_get "$BODY" error.message)" = "choose a source you uploaded" ]; then ok "bob may not create from alice's upload (the program saw uploadedBy)"; else not_ok "bob may not create from alice's upload (the program saw uploadedBy)"; fi
check "the create's line carried the stamp" grep -q '"uploadedBy":\[{"by":"alice"}\]' "$LOG"
req GET /threads/w-bob "" "${B[@]}"
check "... and no thread was made" [ "$STATUS" = 404 ]
req POST /threads "{\"thread_id\": \"w-alice\", \"workspace\": {\"sourceDigest\": \"$D\"}}" "${A[@]}"
if [ "$STATUS" = 201 ] && [ "$(json_get "$BODY" workspace.sourceDigest)" = "$D" ]; then ok "alice creates from it"; else not_ok "alice creates from it"; fi
req GET /threads/w-alice "" "${A[@]}"
check "the thread view shows the staged sourceDigest" [ "$(json_get "$BODY" workspace.sourceDigest)" = "$D" ]
req GET /threads/t1 "" "${A[@]}"
check "a thread without one has no workspace member" [ -z "$(json_get "$BODY" workspace)" ]

req GET /workspace/sources "" "${A[@]}"
if [ "$STATUS" = 200 ] &&
        [ "$(json_get "$BODY" sources.0.digest)" = "$D" ] && [ "$(json_get "$BODY" sources.0.references)" = 1 ]; then ok "GET /workspace/sources lists the upload"; else not_ok "GET /workspace/sources lists the upload"; fi
req GET "/workspace/sources/$D" "" "${A[@]}"
if [ "$STATUS" = 200 ] && [ "$(json_get "$BODY" size)" -gt 0 ]; then ok "GET /workspace/sources/{digest} describes it"; else not_ok "GET /workspace/sources/{digest} describes it"; fi
req DELETE "/workspace/sources/$D" "" "${A[@]}"
if [ "$STATUS" = 409 ] &&
        [ "$(json_get "$BODY" error.details.code)" = source_in_use ]; then ok "a source a thread's workspace names: 409 source_in_use"; else not_ok "a source a thread's workspace names: 409 source_in_use"; fi
req DELETE /threads/w-alice "" "${A[@]}"
req DELETE "/workspace/sources/$D" "" "${A[@]}"
if [ "$STATUS" = 200 ] && [ "$(json_get "$BODY" status)" = deleted ]; then ok "then it is deleted"; else not_ok "then it is deleted"; fi
req GET "/workspace/sources/$D" "" "${A[@]}"
if [ "$STATUS" = 404 ] && [ "$(json_get "$BODY" error.details.code)" = source_not_found ]; then ok "and gone: 404 source_not_found"; else not_ok "and gone: 404 source_not_found"; fi
req GET /workspace/sources/xyz "" "${A[@]}"
check "a bad digest: 400" [ "$STATUS" = 400 ]
stop_server

pid_line=$(grep -c 'policy program started' "$WORK/server.log")
check "the program was started once, plus once per failure ($pid_line)" [ "$pid_line" -eq 4 ]

# Without a program, an empty principals list admits nobody (the program's "no principals"
# must not open the door when there is no program).
start_server '{"sandbox": {"provider": {"type": "fake", "scope": "ap2"}}, "threadAccess": {"principals": []}}' "$WORK/s2" ||
        { not_ok "server starts with no principals"; done_testing; exit 1; }
req POST /threads '{"thread_id": "x"}'
check "no principals and no program: 401" [ "$STATUS" = 401 ]
req GET /threads "" "${A[@]}"
check "... whatever the token" [ "$STATUS" = 401 ]
stop_server
done_testing
