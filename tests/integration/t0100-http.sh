#!/usr/bin/env bash
# The HTTP API end to end over the fake provider: threads, tools, refusals, limits,
# deletion and id reuse, metrics, and the thread-access policy.
B4BOX=${B4BOX:?}
. "$(dirname "$0")/lib.sh"

start_server '{"server": {"maxToolBodyBytes": 65536}, "sandbox": {"provider": {"type": "fake", "scope": "it"}}, "permissions": {"mode": "bypass"}}' ||
        { not_ok "server starts"; done_testing; exit 1; }
ok "server starts on a unix socket"

req GET /healthz
check "healthz answers 200" [ "$STATUS" = 200 ]
"$B4BOX" -c "$WORK/b4box.json" --state "$WORK/state" serve --listen "unix:$WORK/sock2" 2>"$WORK/second.err"; rc=$?
check "a second server on the same state dir fails at once" \
        [ "$rc" = 1 ] && grep -q "is in use by another b4box process (pid $SERVER_PID)" "$WORK/second.err"

req POST /threads '{}'
check "create without an id generates one" [ "$STATUS" = 201 ]
check "generated id has the thr_ prefix" glob "$(json_get "$BODY" thread_id)" "thr_*"

req POST /threads '{"thread_id": "a", "metadata": {"job": "x"}}'
check "create with an id" [ "$STATUS" = 201 ]
check "metadata kept" [ "$(json_get "$BODY" metadata.job)" = x ]
req POST /threads '{"thread_id": "a"}'
check "duplicate id is 409" [ "$STATUS" = 409 ]

req POST /threads '{"thread_id": "b", "colour": 1}'
check "unknown field is 400" [ "$STATUS" = 400 ]
check "unknown field names the field" glob "$(json_get "$BODY" error.message)" "*colour*"
req POST /threads '{"thread_id": '
check "malformed JSON is 400" [ "$STATUS" = 400 ]
check "malformed JSON code" [ "$(json_get "$BODY" error.details.code)" = invalid_request ]
check "error kind" [ "$(json_get "$BODY" error.kind)" = request_error ]

{ printf '{"thread_id": "'; head -c 1100000 /dev/zero | tr '\0' a; printf '"}'; } > "$WORK/big.json"
req POST /threads "@$WORK/big.json"
check "create body over 1 MiB is 413" [ "$STATUS" = 413 ]

req POST /threads "@$WORK/big.json" -H 'Transfer-Encoding: chunked'
check "a chunked body over the cap is 413 too" [ "$STATUS" = 413 ]

{ printf '{"path": "big", "content": "'; head -c 70000 /dev/zero | tr '\0' a; printf '"}'; } > "$WORK/big-tool.json"
req POST /threads/a/tools/writeFile "@$WORK/big-tool.json"
check "a tool call over server.maxToolBodyBytes is 413" [ "$STATUS" = 413 ]

req POST /threads/a/tools/writeFile '{"path": "x.txt", "content": "hi"}'
if [ "$STATUS" = 200 ] && [ "$(json_get "$BODY" ok)" = true ]; then ok "writeFile succeeds"; else not_ok "writeFile succeeds"; fi
req POST /threads/a/tools/readFile '{"path": "x.txt"}'
check "readFile reads it back" [ "$(json_get "$BODY" result)" = hi ]
req POST /threads/a/tools/readFile '{"path": "missing.txt"}'
if [ "$STATUS" = 200 ] && [ "$(json_get "$BODY" ok)" = false ]; then ok "a tool failure is a 200 result with ok false"; else not_ok "a tool failure is a 200 result with ok false"; fi

req POST /threads/a/runs '{"calls": [{"tool": "writeFile", "args": {"path": "y", "content": "1"}}, {"tool": "listDir", "args": {}}]}'
check "a run of two calls" [ "$STATUS" = 200 ]
check "run results in order" [ "$(json_get "$BODY" results.1.ok)" = true ]
req POST /threads/a/runs '{"calls": []}'
check "empty calls is 400" [ "$STATUS" = 400 ]

req GET /threads/a
check "thread shows a live sandbox" [ "$(json_get "$BODY" sandbox.state)" = live ]
req POST /threads/a/release
if [ "$STATUS" = 200 ] && [ "$(json_get "$BODY" sandbox.state)" = released ]; then ok "release"; else not_ok "release"; fi
req POST /threads/a/tools/readFile '{"path": "x.txt"}'
check "release keeps the workspace" [ "$(json_get "$BODY" result)" = hi ]

req POST /threads/nope/tools/readFile '{"path": "x"}'
if [ "$STATUS" = 404 ] && [ "$(json_get "$BODY" error.details.code)" = thread_not_found ]; then ok "unknown thread is 404"; else not_ok "unknown thread is 404"; fi
req POST /threads/a/cancel
check "cancel with no run in flight is 409" [ "$STATUS" = 409 ]
req PUT /threads
check "wrong method is 405" [ "$STATUS" = 405 ]

req POST /threads '{"thread_id": "child", "parent_thread_id": "a"}'
check "child thread" [ "$STATUS" = 201 ]
req POST /threads/child/tools/readFile '{"path": "x.txt"}'
check "a child shares its parent's sandbox" [ "$(json_get "$BODY" result)" = hi ]

req DELETE /threads/a
check "delete" [ "$STATUS" = 200 ]
req GET /threads/a
check "deleted thread is 404" [ "$STATUS" = 404 ]
req GET /threads/child
check "its child is deleted too" [ "$STATUS" = 404 ]
req POST /threads '{"thread_id": "a"}'
check "the id can be reused" [ "$STATUS" = 201 ]
req POST /threads/a/tools/readFile '{"path": "x.txt"}'
check "and starts with an empty workspace" [ "$(json_get "$BODY" ok)" = false ]

out=$("$B4BOX" threads --server "unix:$SOCK" create --id cli-made --metadata '{"k":"v"}')
check "b4box threads create through the server" [ "$(json_get "$out" metadata.k)" = v ]
out=$(B4BOX_URL="unix:$SOCK" "$B4BOX" threads ls)
check "b4box threads ls (B4BOX_URL)" grep -q cli-made <<<"$out"
out=$("$B4BOX" threads --server "unix:$SOCK" show cli-made)
check "b4box threads show" [ "$(json_get "$out" thread_id)" = cli-made ]
"$B4BOX" threads --server "unix:$SOCK" show nope 2>"$WORK/err"; rc=$?
check "b4box threads show of a missing thread fails with the server's message" \
        [ "$rc" = 1 ] && grep -q "thread_not_found" "$WORK/err"
out=$("$B4BOX" threads --server "unix:$SOCK" rm cli-made)
check "b4box threads rm" [ "$(json_get "$out" deleted)" = true ]

out=$("$B4BOX" exec --server "unix:$SOCK" --thread a -- echo through the server)
check "b4box exec --server runs the command there" [ "$out" = "through the server" ]
"$B4BOX" exec --server "unix:$SOCK" --thread a -- exit 7; rc=$?
check "b4box exec --server exits with the command's code" [ "$rc" = 7 ]
"$B4BOX" exec --server "unix:$SOCK" --timeout 5000 --thread a -- true 2>/dev/null; rc=$?
check "b4box exec --server takes --timeout as the call's timeoutMs" [ "$rc" = 0 ]
out=$(B4BOX_URL="unix:$SOCK" "$B4BOX" tool --thread a writeFile '{"path": "cli.txt", "content": "c"}')
check "b4box tool through B4BOX_URL" [ "$(json_get "$out" ok)" = true ]
out=$("$B4BOX" tool --server "unix:$SOCK" --thread a readFile '{"path": "cli.txt"}')
check "b4box tool --server reads it back" [ "$(json_get "$out" result)" = c ]
"$B4BOX" tool --server "unix:$SOCK" --thread nope readFile '{"path": "x"}' 2>"$WORK/err"; rc=$?
check "b4box tool --server on a missing thread fails with the server's refusal" \
        [ "$rc" = 1 ] && grep -q thread_not_found "$WORK/err"

req GET /metrics
check "metrics count tool calls" grep -q 'b4box_tool_calls_total{tool="writeFile",ok="true"} 3' <<<"$BODY"
check "metrics count refusals" grep -q 'b4box_refusals_total{code="thread_not_found"}' <<<"$BODY"
stop_server

# --- thread-access policy ---
printf 'alice-token-0123456789\n' > "$WORK/alice.token"
export BOB_TOKEN=bob-token-0123456789
start_server "{\"sandbox\": {\"provider\": {\"type\": \"fake\", \"scope\": \"it\"}},
  \"permissions\": {\"mode\": \"bypass\"},
  \"threadAccess\": {\"principals\": [
    {\"name\": \"alice\", \"tokenFile\": \"$WORK/alice.token\", \"operations\": [\"thread.create\", \"thread.read\", \"thread.run\", \"thread.delete\"], \"threads\": \"own\"},
    {\"name\": \"bob\", \"tokenEnv\": \"BOB_TOKEN\", \"operations\": [\"thread.create\", \"thread.read\", \"thread.delete\"], \"threads\": \"own\"}]}}" "$WORK/state2" ||
        { not_ok "policy server starts"; done_testing; exit 1; }
A=(-H "Authorization: Bearer alice-token-0123456789")
B=(-H "Authorization: Bearer bob-token-0123456789")
req POST /threads '{"thread_id": "mine"}'
check "no token is 401" [ "$STATUS" = 401 ]
req POST /threads '{"thread_id": "mine"}' -H "Authorization: Bearer wrong-token-0123456789"
check "a wrong token is 401" [ "$STATUS" = 401 ]
req POST /threads '{"thread_id": "mine"}' "${A[@]}"
if [ "$STATUS" = 201 ] && [ "$(json_get "$BODY" owner)" = alice ]; then ok "alice creates a thread"; else not_ok "alice creates a thread"; fi
req GET /threads/mine "" "${B[@]}"
check "bob gets 404 on alice's thread" [ "$STATUS" = 404 ]
req DELETE /threads/mine "" "${B[@]}"
check "L1: bob deleting alice's thread is told it does not exist (404)" [ "$STATUS" = 404 ]
req GET /threads "" "${B[@]}"
check "bob's list does not show it" [ "$(json_get "$BODY" threads)" = "[]" ]
req POST /threads '{"thread_id": "bobs"}' "${B[@]}"
req POST /threads/bobs/tools/listDir '{}' "${B[@]}"
check "bob has no thread.run (403)" [ "$STATUS" = 403 ]
req POST /threads/mine/tools/writeFile "$(printf '{"path":"p","content":"%s"}' "$(head -c 2000 /dev/zero | tr '\0' b)")" "${B[@]}"
check "refused before the body is used" [ "$STATUS" = 403 ]
req GET /threads/mine "" "${A[@]}"
check "alice reads her thread" [ "$STATUS" = 200 ]
stop_server

done_testing
