#!/usr/bin/env bash
# Refusals a client can act on (issue 18): deterministic refusals are 4xx with their own codes
# (422 thread_refused, no_target, image_unsupported), 503 stays for what a retry may fix and
# never carries a resolver's stderr (that goes to the server log), the 403 names the
# operation, every 405 carries Allow, every JSON reply ends with a newline, and 409
# run_in_flight carries Retry-After.
B4BOX=${B4BOX:?}
. "$(dirname "$0")/lib.sh"

code() { json_get "$BODY" error.details.code; }
msg() { json_get "$BODY" error.message; }
# hdr METHOD PATH [curl args]: the response headers, CRs dropped
hdr() {
        local method=$1 path=$2
        shift 2
        curl -s -o /dev/null -D - --unix-socket "$SOCK" -X "$method" "$@" "http://b4$path" | tr -d '\r'
}

mkdir -p "$WORK/empty"
cat > "$WORK/resolve.py" <<EOF
#!/usr/bin/python3
import json, sys, time
d = json.load(sys.stdin)
mode = d["metadata"].get("mode")
ws = {"source": {"directory": "empty", "include": []}}
if mode == "refuse":
    sys.stderr.write("SECRET-STDERR-refuse\n")
    print(json.dumps({"refuse": "team blue is over its quota"}))
    sys.exit(3)
if mode == "crash":
    sys.stderr.write("SECRET-STDERR-crash\nsecond line\n")
    sys.exit(1)
if mode == "badrefuse":
    print("not a refusal")
    sys.exit(3)
if mode == "longrefuse":
    print(json.dumps({"refuse": "x" * 1025}))
    sys.exit(3)
if mode == "image":
    print(json.dumps({"workspace": ws, "environment": {"image": "alpine:3"}}))
    sys.exit(0)
if mode == "slow":
    time.sleep(1.5)
print(json.dumps({"workspace": ws}))
EOF
chmod +x "$WORK/resolve.py"
printf 'run-token-0123456789abc\n' > "$WORK/run.token"
printf 'ro-token-0123456789abcd\n' > "$WORK/ro.token"
RUN=(-H "Authorization: Bearer run-token-0123456789abc")
RO=(-H "Authorization: Bearer ro-token-0123456789abcd")
access="\"threadAccess\": {\"principals\": [
    {\"name\": \"run\", \"tokenFile\": \"$WORK/run.token\", \"operations\": [\"thread.create\", \"thread.read\", \"thread.run\", \"thread.delete\"], \"threads\": \"all\"},
    {\"name\": \"ro\", \"tokenFile\": \"$WORK/ro.token\", \"operations\": [\"thread.read\"], \"threads\": \"all\"}]}"

start_server "{\"sandbox\": {\"provider\": {\"type\": \"fake\", \"scope\": \"rf\"},
  \"thread\": {\"command\": [\"$WORK/resolve.py\"]}}, $access}" ||
        { not_ok "server starts"; done_testing; exit 1; }

mk() { req POST /threads "{\"thread_id\": \"$1\", \"metadata\": {\"mode\": \"$2\"}}" "${RUN[@]}"; }

# A resolver's refusal: 422 thread_refused with its reason alone.
mk r1 refuse
req POST /threads/r1/tools/listDir '{}' "${RUN[@]}"
if [ "$STATUS" = 422 ] && [ "$(code)" = thread_refused ]; then ok "a resolver's refusal is 422 thread_refused"; else not_ok "a resolver's refusal is 422 thread_refused"; fi
check "its message is the reason alone" [ "$(msg)" = "team blue is over its quota" ]
check "its registry code is B4_E2002" [ "$(json_get "$BODY" error.code)" = B4_E2002 ]
check "the refusal's stderr is not in the reply" eval '! glob "$BODY" "*SECRET*"'
check "the refusal's stderr is in the server log" grep -q "SECRET-STDERR-refuse" "$WORK/server.log"

# Any other failure: 503 with a generic message; stderr only in the log.
mk c1 crash
req POST /threads/c1/tools/listDir '{}' "${RUN[@]}"
if [ "$STATUS" = 503 ] && [ "$(code)" = sandbox_unavailable ]; then ok "a failing resolver is 503 sandbox_unavailable"; else not_ok "a failing resolver is 503 sandbox_unavailable"; fi
check "its stderr is not in the reply" eval '! glob "$BODY" "*SECRET*"'
check "the reply points at the log" glob "$(msg)" "*exited with status 1 (details are in the server log)*"
check "the stderr is in the server log, on one line, with the thread" grep -q "for thread c1 exited with status 1; stderr: SECRET-STDERR-crash.second line" "$WORK/server.log"
mk b1 badrefuse
req POST /threads/b1/tools/listDir '{}' "${RUN[@]}"
if [ "$STATUS" = 503 ] && [ "$(code)" = sandbox_unavailable ]; then ok "exit 3 without a refusal object is 503"; else not_ok "exit 3 without a refusal object is 503"; fi
check "and its stdout is not echoed" eval '! glob "$BODY" "*not a refusal*"'
mk b2 longrefuse
req POST /threads/b2/tools/listDir '{}' "${RUN[@]}"
if [ "$STATUS" = 503 ] && [ "$(code)" = sandbox_unavailable ]; then ok "a reason over 1024 bytes is 503, not a refusal"; else not_ok "a reason over 1024 bytes is 503, not a refusal"; fi

# A provider without per-thread images.
mk i1 image
req POST /threads/i1/tools/listDir '{}' "${RUN[@]}"
if [ "$STATUS" = 422 ] && [ "$(code)" = image_unsupported ]; then ok "an image on the fake provider is 422 image_unsupported"; else not_ok "an image on the fake provider is 422 image_unsupported"; fi
check "with the reference's text" [ "$(msg)" = 'Sandbox provider "fake" cannot run a per-thread image' ]

# The 403 names the operation, not the route.
mk o1 ok
req POST /threads/o1/tools/listDir '{}' "${RO[@]}"
if [ "$STATUS" = 403 ] && [ "$(code)" = forbidden ]; then ok "a missing operation is 403 forbidden"; else not_ok "a missing operation is 403 forbidden"; fi
check "naming the operation" [ "$(msg)" = "this principal may not thread.run" ]

# JSON replies end with a newline: errors, objects, run results.
nl_ends() { [ "$(curl -s --unix-socket "$SOCK" "$@" | tail -c 1 | od -An -c | tr -d ' ')" = '\n' ]; }
check "an error body ends with a newline" nl_ends "http://b4/threads/nope" "${RUN[@]}"
check "/healthz ends with a newline" nl_ends "http://b4/healthz"
check "a thread ends with a newline" nl_ends "http://b4/threads/o1" "${RUN[@]}"
check "a tool result ends with a newline" nl_ends -X POST "${JSON[@]}" -d '{}' \
        "http://b4/threads/o1/tools/listDir" "${RUN[@]}"
check "a run's results end with a newline" nl_ends -X POST "${JSON[@]}" \
        -d '{"calls": [{"tool": "listDir", "args": {}}]}' "http://b4/threads/o1/runs" "${RUN[@]}"

# Every 405 carries Allow, from the route table.
h=$(hdr PATCH /threads "${RUN[@]}")
check "405 on /threads" glob "$h" "HTTP/1.1 405*"
check "Allow on /threads: POST, GET" glob "$h" "*"$'\n'"Allow: POST, GET"$'\n'"*"
h=$(hdr PUT /threads/o1 "${RUN[@]}")
check "Allow on /threads/{id}: GET, DELETE" glob "$h" "*"$'\n'"Allow: GET, DELETE"$'\n'"*"
h=$(hdr GET /threads/o1/runs "${RUN[@]}")
check "Allow on /threads/{id}/runs: POST" glob "$h" "*"$'\n'"Allow: POST"$'\n'"*"
h=$(hdr POST /healthz)
check "Allow on /healthz: GET" glob "$h" "*"$'\n'"Allow: GET"$'\n'"*"

# 409 run_in_flight carries Retry-After: a slow first admission holds the run slot.
mk s1 slow
curl -s "${JSON[@]}" --unix-socket "$SOCK" -X POST -d '{}' "${RUN[@]}" \
        http://b4/threads/s1/tools/listDir > "$WORK/slow.json" &
SLOW=$!
sleep 0.5
h=$(hdr POST /threads/s1/tools/listDir "${JSON[@]}" -d '{}' "${RUN[@]}")
check "a second call meanwhile is 409" glob "$h" "HTTP/1.1 409*"
check "with Retry-After: 1" glob "$h" "*"$'\n'"Retry-After: 1"$'\n'"*"
wait $SLOW
check "the slow call finished" [ "$(json_get "$(cat "$WORK/slow.json")" ok)" = true ]
stop_server

# Declarative targets without a default: 422 no_target.
start_server "{\"sandbox\": {\"provider\": {\"type\": \"fake\", \"scope\": \"rf2\"},
  \"thread\": {\"targets\": {\"key\": \"tier\", \"values\": {\"big\":
    {\"workspace\": {\"source\": {\"directory\": \"empty\", \"include\": []}}}}}}}}" "$WORK/s2" ||
        { not_ok "server starts"; done_testing; exit 1; }
req POST /threads '{"thread_id": "n1", "metadata": {"tier": "small"}}'
req POST /threads/n1/tools/listDir '{}'
if [ "$STATUS" = 422 ] && [ "$(code)" = no_target ]; then ok "no target and no default is 422 no_target"; else not_ok "no target and no default is 422 no_target"; fi
check "naming the key" glob "$(msg)" '*metadata "tier" selects no sandbox target*'
req POST /threads '{"thread_id": "n2", "metadata": {"tier": "big"}}'
req POST /threads/n2/tools/listDir '{}'
check "a thread with a target runs" [ "$STATUS" = 200 ]
stop_server

done_testing
