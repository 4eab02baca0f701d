#!/usr/bin/env bash
# Pause and resume over HTTP on the native provider: a counter loop left running in the
# sandbox stops while the thread is paused (read on the host, which resumes nothing) and goes
# on after; a tool call on a paused thread resumes it transparently; the thread view and
# /metrics say so; a server killed while the thread is paused: the next one thaws it; a paused
# thread is released and deleted cleanly.
B4BOX=${B4BOX:?}
. "$(dirname "$0")/lib.sh"
[ "$(id -u)" = 0 ] || skip_all "native sandboxes need root here"

CFG='{"sandbox": {"provider": {"type": "native", "scope": "it-pause"}, "network": {"mode": "deny"}}}'
start_server "$CFG" || { not_ok "server starts"; done_testing; exit 1; }

req POST /threads '{"thread_id": "p1"}'
check "create" [ "$STATUS" = 201 ]
req POST /threads/p1/pause
check "pausing a thread with no live sandbox is 409 thread_not_live" \
        [ "$STATUS" = 409 ] && [ "$(json_get "$BODY" error.details.code)" = thread_not_live ]
req POST /threads/p1/tools/runBash \
        '{"command": "setsid sh -c '"'"'i=0; while :; do i=$((i+1)); echo $i > /workspace/c.new; mv /workspace/c.new /workspace/c; sleep 0.02; done'"'"' >/dev/null 2>&1 < /dev/null & echo started"}'
check "a counter loop starts" [ "$(json_get "$BODY" result.stdout)" = started ]
COUNTER=
for _ in $(seq 50); do
        COUNTER=$(find "$WORK/state" -path '*workspace*' -name c -type f 2>/dev/null | head -1)
        [ -n "$COUNTER" ] && [ -s "$COUNTER" ] && break
        sleep 0.05
done
check "the counter file is on the host" [ -n "$COUNTER" ]
c0=$(cat "$COUNTER"); sleep 0.3; c1=$(cat "$COUNTER")
check "the counter runs ($c0 -> $c1)" [ "$c1" -gt "$c0" ]

req POST /threads/p1/pause
check "pause is 200" [ "$STATUS" = 200 ]
if [ "$(json_get "$BODY" sandbox.state)" = paused ] && \
        [ "$(json_get "$BODY" sandbox.paused)" = true ]; then ok "the view says paused"; else not_ok "the view says paused"; fi
check "with paused_ms" [ "$(json_get "$BODY" sandbox.paused_ms)" -gt 0 ]
sleep 0.1
p0=$(cat "$COUNTER"); sleep 0.5; p1=$(cat "$COUNTER")
check "the counter stops while paused ($p0 = $p1)" [ "$p0" = "$p1" ]
req GET /threads/p1
check "GET shows it paused" [ "$(json_get "$BODY" sandbox.paused)" = true ]

req POST /threads/p1/resume
if [ "$STATUS" = 200 ] && [ "$(json_get "$BODY" sandbox.state)" = live ]; then ok "resume is 200 and live"; else not_ok "resume is 200 and live"; fi
sleep 0.3; r1=$(cat "$COUNTER")
check "the counter goes on after resume ($p1 -> $r1)" [ "$r1" -gt "$p1" ]

req POST /threads/p1/pause
sleep 0.1; q0=$(cat "$COUNTER")
req POST /threads/p1/tools/runBash '{"command": "cat /workspace/c"}'
if [ "$STATUS" = 200 ] && \
        [ "$(json_get "$BODY" result.exitCode)" = 0 ]; then ok "a call on a paused thread resumes it and runs"; else not_ok "a call on a paused thread resumes it and runs"; fi
req GET /threads/p1
check "it is live again" [ "$(json_get "$BODY" sandbox.state)" = live ]
sleep 0.3; q1=$(cat "$COUNTER")
check "and its counter runs ($q0 -> $q1)" [ "$q1" -gt "$q0" ]

req GET /metrics
check "metrics count pauses" glob "$BODY" '*b4box_pause_duration_seconds_count 2*'
check "metrics count resumes (the transparent one too)" \
        glob "$BODY" '*b4box_resume_duration_seconds_count 2*'

req POST /threads/p1/pause
kill -KILL "$SERVER_PID"; wait "$SERVER_PID" 2>/dev/null; SERVER_PID=
start_server "$CFG" || { not_ok "server restarts"; done_testing; exit 1; }
req POST /threads/p1/tools/runBash '{"command": "echo thawed"}'
check "a server that died with the thread paused: the next one thaws what it adopts" \
        [ "$(json_get "$BODY" result.stdout)" = thawed ]
sleep 0.1; k0=$(cat "$COUNTER"); sleep 0.3; k1=$(cat "$COUNTER")
check "and the counter runs again ($k0 -> $k1)" [ "$k1" -gt "$k0" ]
req POST /threads/p1/pause
req POST /threads/p1/release
if [ "$STATUS" = 200 ] && \
        [ "$(json_get "$BODY" sandbox.state)" = released ]; then ok "a paused thread is released"; else not_ok "a paused thread is released"; fi
sleep 0.3; s0=$(cat "$COUNTER"); sleep 0.3; s1=$(cat "$COUNTER")
check "its processes are gone" [ "$s0" = "$s1" ]
req POST /threads/p1/tools/runBash '{"command": "true"}'
req POST /threads/p1/pause
req DELETE /threads/p1
check "a paused thread is deleted" [ "$STATUS" = 200 ]
done_testing
