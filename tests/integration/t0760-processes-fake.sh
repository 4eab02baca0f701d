#!/usr/bin/env bash
# Background processes over HTTP on the fake provider (no root): start, list, get, logs
# (plain from an offset, SSE and NDJSON with and without follow), stdin, signal, wait,
# timeout, delete, the refusals (bad bodies, unknown pid, closed stdin), release killing a
# running process while its record and log stay readable, and the permission gates.
B4BOX=${B4BOX:?}
. "$(dirname "$0")/lib.sh"

start_server '{"sandbox": {"provider": {"type": "fake", "scope": "it-procs"}}}' ||
        { not_ok "server starts"; done_testing; exit 1; }
req POST /threads '{"thread_id": "t"}'

req POST /threads/t/processes '{"command": "echo hello world", "tag": "greet"}'
check "start is 201" [ "$STATUS" = 201 ]
if [ "$(json_get "$BODY" pid)" = 1 ] && [ "$(json_get "$BODY" tag)" = greet ]; then ok "with pid 1 and the tag"; else not_ok "with pid 1 and the tag"; fi
check "and startedMs" [ "$(json_get "$BODY" startedMs)" -gt 0 ]
req GET /threads/t/processes/1
if [ "$(json_get "$BODY" state)" = exited ] && \
        [ "$(json_get "$BODY" exitCode)" = 0 ] && [ "$(json_get "$BODY" bytes)" = 12 ]; then ok "the view: exited 0, 12 bytes"; else not_ok "the view: exited 0, 12 bytes"; fi
out=$(curl -s -D "$WORK/h" --unix-socket "$SOCK" "http://b4/threads/t/processes/1/logs?from=6")
check "plain logs from an offset" [ "$out" = "world" ]
check "say the next offset" grep -qi '^X-B4box-Next-Offset: 12' "$WORK/h"
check "and the state" grep -qi '^X-B4box-Process-State: exited' "$WORK/h"

req POST /threads/t/processes '{"command": "sleep 1000", "tag": "server"}'
check "a sleeper starts as pid 2" [ "$(json_get "$BODY" pid)" = 2 ]
req GET /threads/t/processes
if [ "$(json_get "$BODY" processes.0.pid)" = 1 ] && \
        [ "$(json_get "$BODY" processes.1.state)" = running ]; then ok "list has both, oldest first"; else not_ok "list has both, oldest first"; fi
check "a running one has null exitCode and endedMs" \
        [ "$(json_get "$BODY" processes.1.exitCode)" = None ] && [ "$(json_get "$BODY" processes.1.endedMs)" = None ]
req POST '/threads/t/processes/2/wait?timeoutMs=200'
if [ "$STATUS" = 200 ] && \
        [ "$(json_get "$BODY" state)" = running ]; then ok "wait times out on a running one with its view"; else not_ok "wait times out on a running one with its view"; fi
req POST /threads/t/processes/2/signal '{"signal": "TERM"}'
check "signal TERM" [ "$STATUS" = 200 ]
req POST '/threads/t/processes/2/wait?timeoutMs=2000'
if [ "$(json_get "$BODY" state)" = exited ] && \
        [ "$(json_get "$BODY" exitCode)" = 143 ]; then ok "wait gives the final result: 143"; else not_ok "wait gives the final result: 143"; fi
req POST /threads/t/processes/2/signal '{"signal": "BOGUS"}'
check "an unknown signal is 400" [ "$STATUS" = 400 ]

req POST /threads/t/processes '{"command": "cat", "stdin": true}'
P=$(json_get "$BODY" pid)
req POST "/threads/t/processes/$P/stdin" '{"text": "line one\n"}'
check "stdin is written" [ "$STATUS" = 200 ]
curl -sN --unix-socket "$SOCK" -H 'Accept: application/x-ndjson' \
        "http://b4/threads/t/processes/$P/logs?follow=1" > "$WORK/follow.ndjson" &
FOLLOW=$!
sleep 0.3
req POST "/threads/t/processes/$P/stdin" '{"b64": "=bad"}'
check "non-canonical b64 is 400" [ "$STATUS" = 400 ]
req POST "/threads/t/processes/$P/stdin" '{"text": "a", "b64": "YQ=="}'
check "text and b64 together are 400" [ "$STATUS" = 400 ]
req POST "/threads/t/processes/$P/stdin" '{"b64": "bGluZSB0d28K", "eof": true}'
check "stdin as b64 with eof" [ "$STATUS" = 200 ]
wait $FOLLOW
check "the NDJSON follow saw both lines" \
        python3 -c 'import json,sys
ev=[json.loads(l) for l in open(sys.argv[1]) if l.strip()]
out="".join(e["data"]["text"] for e in ev if e["event"]=="stdout")
assert out=="line one\nline two\n", out
assert ev[-1]["event"]=="exit" and ev[-1]["data"]["exitCode"]==0, ev[-1]' "$WORK/follow.ndjson"
req POST "/threads/t/processes/$P/stdin" '{"text": "late"}'
if [ "$STATUS" = 409 ] && \
        [ "$(json_get "$BODY" error.details.code)" = stdin_closed ]; then ok "stdin after eof is 409 stdin_closed"; else not_ok "stdin after eof is 409 stdin_closed"; fi
sse=$(curl -sN --unix-socket "$SOCK" -H 'Accept: text/event-stream' \
        "http://b4/threads/t/processes/$P/logs?from=9")
check "SSE from an offset reconnects there (id: 9)" glob "$sse" $'*event: stdout\nid: 9\n*line two*'
check "and ends with exit" glob "$sse" '*event: exit*'

req POST /threads/t/processes '{"command": "sleep 5", "timeoutMs": 100}'
P=$(json_get "$BODY" pid)
req POST "/threads/t/processes/$P/wait?timeoutMs=3000"
if [ "$(json_get "$BODY" timedOut)" = true ] && \
        [ "$(json_get "$BODY" exitCode)" = 124 ]; then ok "timeoutMs ends it: timedOut, 124"; else not_ok "timeoutMs ends it: timedOut, 124"; fi
live=$(curl -sN --unix-socket "$SOCK" -H 'Accept: text/event-stream' \
        "http://b4/threads/t/processes/1/logs")
check "SSE without follow of an exited one ends with exit" glob "$live" '*hello world*event: exit*'

req POST /threads/t/processes '{"command": ""}'
check "an empty command is 400" [ "$STATUS" = 400 ]
req POST /threads/t/processes '{"command": "x", "colour": 1}'
check "an unknown field is 400" [ "$STATUS" = 400 ]
req GET /threads/t/processes/99
if [ "$STATUS" = 404 ] && \
        [ "$(json_get "$BODY" error.details.code)" = process_not_found ]; then ok "an unknown pid is 404 process_not_found"; else not_ok "an unknown pid is 404 process_not_found"; fi
req GET /threads/t/processes/abc
check "a pid that is no number is 404" [ "$STATUS" = 404 ]
code=$(curl -s -o /dev/null -w '%{http_code}' --unix-socket "$SOCK" "http://b4/threads/t/processes/1/logs?follow=1")
check "follow without a streamed Accept is 400" [ "$code" = 400 ]
req GET /threads/nobody/processes
check "another thread's processes: 404" [ "$STATUS" = 404 ]

# the CLI over the same routes
out=$("$B4BOX" ps --server "unix:$SOCK" --thread t 2>&1)
check "b4box ps lists them" [ "$(json_get "$out" processes.0.tag)" = greet ]
out=$("$B4BOX" logs --server "unix:$SOCK" --thread t 1 --from 6 2>&1)
check "b4box logs from an offset" [ "$out" = world ]
req POST /threads/t/processes '{"command": "sleep 1000"}'
P=$(json_get "$BODY" pid)
"$B4BOX" logs --server "unix:$SOCK" --thread t "$P" --follow > "$WORK/cli-follow" 2>&1 &
CF=$!
sleep 0.3
out=$("$B4BOX" kill --server "unix:$SOCK" --thread t "$P" --signal KILL 2>&1)
check "b4box kill signals" [ "$(json_get "$out" signalled)" = true ]
wait $CF
check "b4box logs --follow returns when it exits" [ $? = 0 ]
req GET "/threads/t/processes/$P"
check "killed: 137" [ "$(json_get "$BODY" exitCode)" = 137 ]
out=$("$B4BOX" kill --server "unix:$SOCK" --thread t 99 2>&1)
check "b4box kill of an unknown pid fails with the code" glob "$out" '*process_not_found*'
"$B4BOX" kill --server "unix:$SOCK" --thread t "$P" --rm > /dev/null
req GET "/threads/t/processes/$P"
check "b4box kill --rm forgets it" [ "$STATUS" = 404 ]

req POST /threads/t/processes '{"command": "sleep 1000"}'
P=$(json_get "$BODY" pid)
req POST /threads/t/release
check "release" [ "$STATUS" = 200 ]
req GET "/threads/t/processes/$P"
if [ "$(json_get "$BODY" state)" = exited ] && \
        [ "$(json_get "$BODY" released)" = true ]; then ok "release killed the running one, and says so"; else not_ok "release killed the running one, and says so"; fi
out=$(curl -s --unix-socket "$SOCK" "http://b4/threads/t/processes/1/logs")
check "logs stay readable after the release" [ "$out" = "hello world" ]
req DELETE /threads/t/processes/1
check "delete forgets it" [ "$STATUS" = 200 ]
req GET /threads/t/processes/1
check "gone" [ "$STATUS" = 404 ]
req POST /threads/t/pause
req POST /threads/t/processes '{"command": "echo after pause"}'
check "a process call on a paused thread resumes it" [ "$STATUS" = 201 ]
req GET /threads/t
check "which is live again" [ "$(json_get "$BODY" sandbox.state)" = live ]
req DELETE /threads/t
req POST /threads '{"thread_id": "t"}'
req GET /threads/t/processes
check "a deleted thread's records are gone with it" [ "$(json_get "$BODY" processes)" = "[]" ]
req GET /metrics
n=$(sed -n 's/^b4box_background_processes_started_total \([0-9]*\)$/\1/p' <<<"$BODY")
check "metrics count the processes started ($n)" [ "${n:-0}" -ge 3 ]

# a background process passes the gates a runBash of it would: never a way around them
stop_server
start_server '{"sandbox": {"provider": {"type": "fake", "scope": "it-procs"}},
  "permissions": {"mode": "non-interactive", "allow": {"bash": ["echo "]}, "deny": {"bash": ["echo no"]}}}' ||
        { not_ok "server restarts with permissions"; done_testing; exit 1; }
req POST /threads '{"thread_id": "g"}'
req POST /threads/g/processes '{"command": "echo allowed"}'
check "an allowed command starts" [ "$STATUS" = 201 ]
req POST /threads/g/processes '{"command": "echo no way"}'
if [ "$STATUS" = 403 ] && \
        [ "$(json_get "$BODY" error.details.code)" = permission_denied ]; then ok "a denied one is 403 permission_denied"; else not_ok "a denied one is 403 permission_denied"; fi
req POST /threads/g/processes '{"command": "sleep 5"}'
check "an unknown one is refused fail-closed" [ "$STATUS" = 403 ]
req POST /threads/g/processes '{"command": "echo x", "cwd": "/etc"}'
check "a cwd outside the workspace is 400, as runBash's" [ "$STATUS" = 400 ]
req POST /threads/g/processes '{"command": "echo x", "cwd": "missing"}'
check "a missing cwd is 400" [ "$STATUS" = 400 ]
req GET /threads/g/processes
if [ "$(json_get "$BODY" processes.0.command)" = "echo allowed" ] && \
        [ "$(json_get "$BODY" processes.1)" = "" ]; then ok "only the allowed one has a record"; else not_ok "only the allowed one has a record"; fi
done_testing
