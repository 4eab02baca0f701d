#!/usr/bin/env bash
# The HTTP API over the native provider: a real sandbox per thread, the run slot under a
# long command (409), cancel, the configured timeout, and a server killed with SIGKILL in the
# middle of a run, then restarted on the same state dir.
B4BOX=${B4BOX:?}
. "$(dirname "$0")/lib.sh"
[ "$(id -u)" = 0 ] || skip_all "native sandboxes need root here"

CFG='{"sandbox": {"provider": {"type": "native", "scope": "it-native"}, "network": {"mode": "deny"},
      "resources": {"timeoutMs": 2000}}}'
start_server "$CFG" || { not_ok "server starts"; done_testing; exit 1; }

req POST /threads '{"thread_id": "n1"}'
check "create" [ "$STATUS" = 201 ]
req POST /threads/n1/tools/runBash '{"command": "id -u"}'
check "runs as uid 1000" [ "$(json_get "$BODY" result.stdout)" = 1000 ]
TP=00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01
req POST /threads/n1/tools/runBash '{"command": "echo \"$TRACEPARENT\""}' -H "traceparent: $TP"
check "a request's traceparent reaches its command as TRACEPARENT" [ "$(json_get "$BODY" result.stdout)" = "$TP" ]
req POST /threads/n1/tools/runBash '{"command": "echo \"$TRACEPARENT\"", "env": {"TRACEPARENT": "mine"}}' -H "traceparent: $TP"
check "... unless the call sets its own" [ "$(json_get "$BODY" result.stdout)" = mine ]
req POST /threads/n1/tools/runBash '{"command": "echo \"[$TRACEPARENT]\""}'
check "... and nothing without one" [ "$(json_get "$BODY" result.stdout)" = "[]" ]
req POST /threads/n1/tools/writeFile '{"path": "keep.txt", "content": "kept"}'
check "writeFile" [ "$(json_get "$BODY" ok)" = true ]

# a long command holds the run slot
curl -s "${JSON[@]}" --unix-socket "$SOCK" -X POST -d '{"command": "sleep 1.5; echo done"}' \
        http://b4/threads/n1/tools/runBash > "$WORK/long.json" &
LONG=$!
sleep 0.4
req POST /threads/n1/tools/runBash '{"command": "true"}'
check "a second run while one is in flight is 409 run_in_flight" \
        [ "$STATUS" = 409 ] && [ "$(json_get "$BODY" error.details.code)" = run_in_flight ]
req DELETE /threads/n1
check "deleting a thread in a run is 409" [ "$STATUS" = 409 ]
wait $LONG
check "the long command finished" [ "$(json_get "$(cat "$WORK/long.json")" result.stdout)" = done ]

# cancel kills the command
curl -s "${JSON[@]}" --unix-socket "$SOCK" -X POST -d '{"command": "sleep 30"}' \
        http://b4/threads/n1/tools/runBash > "$WORK/cancelled.json" &
LONG=$!
sleep 0.4
req POST /threads/n1/cancel
check "cancel is 202" [ "$STATUS" = 202 ]
t0=$(date +%s)
wait $LONG
check "the cancelled command returns at once" [ $(( $(date +%s) - t0 )) -lt 5 ]
check "and reports it was cancelled" glob "$(cat "$WORK/cancelled.json")" '*"cancelled":true*'
req POST /threads/n1/tools/runBash '{"command": "echo free"}'
check "the slot is free after a cancel" [ "$(json_get "$BODY" result.stdout)" = free ]

req POST /threads/n1/tools/runBash '{"command": "sleep 10"}'
check "resources.timeoutMs gives exit 124" [ "$(json_get "$BODY" result.exitCode)" = 124 ]
check "with the seeds' message" \
        glob "$(json_get "$BODY" result.stderr)" "*Command timed out after 2s (resources.timeoutMs: 2000ms).*"

# SIGKILL mid-run, then restart on the same state dir
curl -s "${JSON[@]}" --unix-socket "$SOCK" -X POST -d '{"command": "sleep 30"}' \
        http://b4/threads/n1/tools/runBash > /dev/null 2>&1 &
LONG=$!
sleep 0.4
kill -KILL "$SERVER_PID"
wait "$SERVER_PID" 2>/dev/null
SERVER_PID=
wait $LONG 2>/dev/null
start_server "$CFG" || { not_ok "server restarts"; done_testing; exit 1; }
ok "the server restarts on the same state dir after SIGKILL"
req GET /threads/n1
check "the thread survived" [ "$STATUS" = 200 ]
check "its keeper outlived the server: state kept (the next call adopts it)" \
        [ "$(json_get "$BODY" sandbox.state)" = kept ]
before=$(($(date +%s%3N) - 60000))
out=$(curl -s -i "${JSON[@]}" --unix-socket "$SOCK" -X POST -d '{"calls": [{"tool": "readFile", "args": {"path": "keep.txt"}}]}' \
        http://b4/threads/n1/runs)
check "its workspace survived" glob "$out" '*"result":"kept"*'
started=$(sed -n 's/.*"interruptedRun":{"startedMs":\([0-9]*\)}.*/\1/p' <<<"$out")
check "the next run reports the run the crash interrupted ($started)" \
        bash -c '[ -n "$1" ] && [ "$1" -gt "$2" ] && [ "$1" -lt "$(date +%s%3N)" ]' _ "$started" "$before"
check "... in a header too" glob "$out" "*B4box-Interrupted-Run: $started*"
check "... and in the log" grep -q 'msg="the thread.s previous run was interrupted" thread=n1' "$WORK/server.log"
out=$(curl -s -i "${JSON[@]}" --unix-socket "$SOCK" -X POST -d '{"command": "echo again"}' \
        http://b4/threads/n1/tools/runBash)
check "its run slot is free" glob "$out" '*"stdout":"again*'
check "the interrupted run is reported once" bash -c '! [[ $1 == *Interrupted-Run* ]]' _ "$out"
req GET /threads/n1
check "adopted: state live" [ "$(json_get "$BODY" sandbox.state)" = live ]
req POST /threads/n1/release
req GET /threads/n1
check "released: state released" [ "$(json_get "$BODY" sandbox.state)" = released ]

req GET /threads/n1/network
check "GET /threads/{id}/network on a thread without lists: enforced false, the reason" \
        bash -c '[ "$1" = 200 ] && [[ $2 == *'"'"'"enforced":false'"'"'* ]] && [[ $2 == *"no network list"* ]] && [[ $2 == *'"'"'"provider":"native"'"'"'* ]]' _ "$STATUS" "$BODY"
req GET /threads/nosuch/network
check "... and 404 for an unknown thread" [ "$STATUS" = 404 ]
req DELETE /threads/n1
check "delete" [ "$STATUS" = 200 ]
stop_server
done_testing
