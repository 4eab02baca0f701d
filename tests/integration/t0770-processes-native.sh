#!/usr/bin/env bash
# Background processes over HTTP on the native provider: the keeper owns them. Start and
# follow, reconnect from an offset, stdin to a cat, a signal to the whole tree (a child that
# left the session too), timeoutMs, wait, a server killed with SIGKILL (the process lives on
# and the new server reads its log on), a graceful restart (shutdown releases: killed, log
# still readable), release, and destroy removing the records.
B4BOX=${B4BOX:?}
. "$(dirname "$0")/lib.sh"
[ "$(id -u)" = 0 ] || skip_all "native sandboxes need root here"

CFG='{"sandbox": {"provider": {"type": "native", "scope": "it-procs"}, "network": {"mode": "deny"}}}'
start_server "$CFG" || { not_ok "server starts"; done_testing; exit 1; }
req POST /threads '{"thread_id": "n"}'

req POST /threads/n/processes '{"command": "for i in 1 2 3; do echo line $i; sleep 0.5; done; echo err >&2; exit 3", "tag": "count"}'
if [ "$STATUS" = 201 ] && [ "$(json_get "$BODY" pid)" = 1 ]; then ok "start is 201"; else not_ok "start is 201"; fi
req GET /threads/n/processes/1
check "it is running ($(printf %s "$BODY" | tr -d "\n"))" [ "$(json_get "$BODY" state)" = running ]
curl -sN --unix-socket "$SOCK" -H 'Accept: application/x-ndjson' \
        "http://b4/threads/n/processes/1/logs?follow=1" > "$WORK/f.ndjson"
check "follow streams every line and stderr, then exit 3" python3 -c 'import json,sys
ev=[json.loads(l) for l in open(sys.argv[1]) if l.strip()]
out="".join(e["data"]["text"] for e in ev if e["event"]=="stdout")
assert out=="line 1\nline 2\nline 3\nerr\n", out
assert ev[-1]["event"]=="exit" and ev[-1]["data"]["exitCode"]==3, ev[-1]' "$WORK/f.ndjson"
out=$(curl -s --unix-socket "$SOCK" "http://b4/threads/n/processes/1/logs?from=7")
check "reconnect from an offset" [ "$out" = $'line 2\nline 3\nerr' ]

req POST /threads/n/processes '{"command": "cat", "stdin": true}'
P=$(json_get "$BODY" pid)
req POST "/threads/n/processes/$P/stdin" '{"text": "hello\n"}'
check "stdin write" [ "$STATUS" = 200 ]
req POST "/threads/n/processes/$P/stdin" '{"b64": "/wBieWUK", "eof": true}'
req POST "/threads/n/processes/$P/wait?timeoutMs=5000"
check "cat ends at eof with exit 0" [ "$(json_get "$BODY" exitCode)" = 0 ]
curl -s --unix-socket "$SOCK" "http://b4/threads/n/processes/$P/logs" > "$WORK/cat.out"
check "and echoed its stdin, binary bytes (b64) included" \
        [ "$(od -An -tx1 "$WORK/cat.out" | tr -d ' \n')" = 68656c6c6f0aff006279650a ]

req POST /threads/n/processes '{"command": "setsid sleep 300 & sleep 300"}'
P=$(json_get "$BODY" pid)
sleep 0.3
req POST "/threads/n/processes/$P/signal" '{"signal": "TERM"}'
check "signal" [ "$STATUS" = 200 ]
req POST "/threads/n/processes/$P/wait?timeoutMs=5000"
check "TERM ends it: 143" [ "$(json_get "$BODY" exitCode)" = 143 ]
req POST /threads/n/tools/runBash '{"command": "ps -eo comm | grep -c ^sleep || true"}'
check "and the child that left the session died too" [ "$(json_get "$BODY" result.stdout)" = 0 ]

req POST /threads/n/processes '{"command": "sleep 30", "timeoutMs": 300}'
P=$(json_get "$BODY" pid)
req POST "/threads/n/processes/$P/wait?timeoutMs=5000"
if [ "$(json_get "$BODY" timedOut)" = true ] && \
        [ "$(json_get "$BODY" exitCode)" = 124 ]; then ok "timeoutMs: timedOut, 124"; else not_ok "timeoutMs: timedOut, 124"; fi

req POST /threads/n/processes '{"command": "i=0; while :; do i=$((i+1)); echo tick $i; sleep 0.1; done"}'
T=$(json_get "$BODY" pid)
sleep 0.5
kill -KILL "$SERVER_PID"; wait "$SERVER_PID" 2>/dev/null; SERVER_PID=
sleep 0.5
start_server "$CFG" || { not_ok "server restarts"; done_testing; exit 1; }
req GET "/threads/n/processes/$T"
check "after a server crash the process still runs" [ "$(json_get "$BODY" state)" = running ]
b0=$(json_get "$BODY" bytes); sleep 0.5
req GET "/threads/n/processes/$T"
check "and its log grows ($b0 -> $(json_get "$BODY" bytes))" [ "$(json_get "$BODY" bytes)" -gt "$b0" ]
out=$(curl -s --unix-socket "$SOCK" "http://b4/threads/n/processes/$T/logs")
check "the new server reads the log from the start" glob "$out" $'tick 1\ntick 2*'
stop_server
start_server "$CFG" || { not_ok "server restarts"; done_testing; exit 1; }
req GET "/threads/n/processes/$T"
if [ "$(json_get "$BODY" state)" = exited ] && \
        [ "$(json_get "$BODY" released)" = true ]; then ok "a graceful restart released it: exited, released"; else not_ok "a graceful restart released it: exited, released"; fi
out=$(curl -s --unix-socket "$SOCK" "http://b4/threads/n/processes/$T/logs")
check "its log is still readable" glob "$out" $'tick 1\n*'
req GET /threads/n/processes/1
check "so is an old one's record" [ "$(json_get "$BODY" exitCode)" = 3 ]

req POST /threads/n/processes '{"command": "sleep 300"}'
P=$(json_get "$BODY" pid)
req POST /threads/n/release
req GET "/threads/n/processes/$P"
check "release kills it and says so" [ "$(json_get "$BODY" released)" = true ]
req DELETE "/threads/n/processes/1"
req GET /threads/n/processes/1
check "delete forgets a record" [ "$STATUS" = 404 ]
req DELETE /threads/n
check "delete the thread" [ "$STATUS" = 200 ]
check "destroy removed the records" [ -z "$(ls -A "$WORK/state/native/procs" 2>/dev/null)" ]
done_testing
