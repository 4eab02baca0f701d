#!/usr/bin/env bash
# Metrics, logs and trace context (docs/http-api.md "Metrics", docs/cli.md serve): the
# families operators alert on, `promtool check metrics` on a real scrape, JSON log lines,
# and W3C traceparent accepted, echoed and written into the request's log lines.
B4BOX=${B4BOX:?}
. "$(dirname "$0")/lib.sh"
PROMTOOL=${PROMTOOL:-/usr/local/lib/b4box-dev/promtool}

SOCK=$WORK/sock
printf '%s' '{"sandbox": {"provider": {"type": "fake", "scope": "ob"}, "network": {"mode": "deny", "allowlist": ["10.0.0.0/8"]}}}' > "$WORK/b4box.json"
"$B4BOX" -c "$WORK/b4box.json" --state "$WORK/state" serve --listen "unix:$SOCK" \
        --log-format json 2>>"$WORK/server.log" &
SERVER_PID=$!
for _ in $(seq 100); do curl -s --unix-socket "$SOCK" http://b4/healthz >/dev/null && break; sleep 0.05; done

TP=00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01
req POST /threads '{"thread_id": "o1"}'
req POST /threads/o1/tools/runBash '{"command": "echo hi"}'
req POST /threads/o1/tools/readFile '{"path": "missing.txt"}'
req POST /threads/o1/release
hdr=$(curl -s -i --unix-socket "$SOCK" -H "traceparent: $TP" http://b4/threads/o1)
check "a valid traceparent is echoed" glob "$hdr" "*traceparent: $TP*"
hdr=$(curl -s -i --unix-socket "$SOCK" -H "traceparent: 00-00000000000000000000000000000000-00f067aa0ba902b7-01" http://b4/threads/o1)
check "an all-zero trace id is not" bash -c '! [[ $1 == *traceparent:* ]]' _ "$hdr"
hdr=$(curl -s -i --unix-socket "$SOCK" -H "traceparent: 00-4BF92F3577B34DA6A3CE929D0E0E4736-00f067aa0ba902b7-01" http://b4/threads/o1)
check "nor upper-case hex" bash -c '! [[ $1 == *traceparent:* ]]' _ "$hdr"

curl -s --unix-socket "$SOCK" http://b4/metrics > "$WORK/metrics.txt"
m() { grep -q "$1" "$WORK/metrics.txt"; }
check "exec durations, buckets up to 10 minutes" m '^b4box_exec_duration_seconds_bucket{le="600"} 1$'
check "acquires by kind (cold)" m '^b4box_acquire_duration_seconds_count{kind="cold"} 1$'
check "... and reattach" m '^b4box_acquire_duration_seconds_count{kind="reattach"} 0$'
if m '^b4box_releases_by_reason_total{reason="explicit"} 1$' &&
        m '^b4box_releases_by_reason_total{reason="idle"} 0$'; then ok "releases by reason"; else not_ok "releases by reason"; fi
check "tool errors by code" m '^b4box_tool_errors_total{tool="readFile",code="[a-z_]*"} 1$'
check "request durations by route" m '^b4box_http_request_duration_seconds_count{route="thread.tool"} 2$'
check "build info" m "^b4box_build_info{version=\"$("$B4BOX" version | awk '{print $2}')\"} 1$"
if m '^process_cpu_seconds_total ' && m '^process_open_fds [0-9]' &&
        m '^process_resident_memory_bytes [1-9]' && m '^process_start_time_seconds [1-9]'; then ok "process metrics"; else not_ok "process metrics"; fi
check "the stream clients gauge (none now)" m '^b4box_stream_clients 0$'
check "a control check reports NOT ENFORCED is a gauge (fake: the allowlist)" \
        m '^b4box_control_not_enforced{control="network allowlist"} 1$'
if [ -x "$PROMTOOL" ]; then
        check "promtool check metrics passes" "$PROMTOOL" check metrics < "$WORK/metrics.txt"
else
        echo "ok $((TAP_N += 1)) # SKIP promtool not installed (scripts/install-deps all installs it)"
fi
stop_server

check "every log line is one JSON object with ts, level and msg" python3 -c '
import json, sys
n = 0
for line in open(sys.argv[1]):
    d = json.loads(line)
    assert d["ts"].endswith("Z") and d["level"] in ("info", "warning", "error") and d["msg"], line
    n += 1
assert n >= 5, n' "$WORK/server.log"
check "the traced request's line carries its traceparent" python3 -c '
import json, sys
lines = [json.loads(l) for l in open(sys.argv[1])]
traced = [d for d in lines if d.get("traceparent") == sys.argv[2]]
assert len(traced) == 1 and traced[0]["msg"] == "request" and traced[0]["route"] == "thread.read", traced
assert sum(1 for d in lines if "traceparent" in d) == 1' "$WORK/server.log" "$TP"
out=$("$B4BOX" serve --log-format yaml 2>&1); rc=$?
if [ "$rc" = 2 ] && glob "$out" "*logfmt or json*"; then ok "--log-format other than logfmt or json: usage error"; else not_ok "--log-format other than logfmt or json: usage error"; fi
done_testing
