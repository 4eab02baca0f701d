#!/usr/bin/env bash
# Regression tests for the HTTP findings of the security audit: browser-origin requests (M2),
# approving one's own permission requests (M3), slow and idle connections (M4), the
# existence oracle (L1) and thread-id validation (L3). TCP servers listen on 127.0.0.1 only.
B4BOX=${B4BOX:?}
. "$(dirname "$0")/lib.sh"
# `check NAME A && B` would check A only (B's status is dropped): several conditions are
# evaluated first, then `check NAME [ $? = 0 ]`.

# start_tcp CONFIG_JSON STATE: b4box serve on 127.0.0.1 (a free port); sets SERVER_PID, PORT
start_tcp() {
        printf '%s' "$1" > "$WORK/b4box.json"
        : > "$WORK/server.log"
        "$B4BOX" -c "$WORK/b4box.json" --state "$2" serve --listen 127.0.0.1:0 \
                2>>"$WORK/server.log" &
        SERVER_PID=$!
        for _ in $(seq 100); do
                PORT=$(sed -n 's/.*msg="\{0,1\}serving"\{0,1\} address=127\.0\.0\.1:\([0-9]*\) .*/\1/p' "$WORK/server.log")
                [ -n "$PORT" ] && BASE_FDS=$(ls /proc/$SERVER_PID/fd | wc -l) && return 0
                sleep 0.05
        done
        echo "# server did not start:"; sed 's/^/# /' "$WORK/server.log"
        return 1
}

# await_conns N: until the TCP server holds N more fds than when it started (its clients'
# connections), within 60 s
await_conns() {
        local end=$((SECONDS + 60))
        while [ "$(ls /proc/$SERVER_PID/fd | wc -l)" -lt $((BASE_FDS + $1)) ]; do
                [ "$SECONDS" -lt "$end" ] || return 1
                sleep 0.05
        done
}

# treq METHOD PATH [BODY] [curl args]: like req, over TCP to 127.0.0.1:$PORT
treq() {
        local method=$1 path=$2 body=${3-} out
        shift 3 2>/dev/null || shift $#
        if [ -n "$body" ]; then
                out=$(curl -s -m 10 -X "$method" --data-binary "$body" -w '\n%{http_code}' "$@" "http://127.0.0.1:$PORT$path")
        else
                out=$(curl -s -m 10 -X "$method" -w '\n%{http_code}' "$@" "http://127.0.0.1:$PORT$path")
        fi
        STATUS=${out##*$'\n'}
        BODY=${out%$'\n'*}
}
code() { json_get "$BODY" error.details.code; }
# ctreq CONTENT_TYPE BODY: POST /threads over the unix socket with exactly that Content-Type
ctreq() {
        local out
        out=$(curl -s --unix-socket "$SOCK" -X POST -H "Content-Type: $1" --data-binary "$2" \
                -w '\n%{http_code}' http://b4/threads)
        STATUS=${out##*$'\n'}
        BODY=${out%$'\n'*}
}

FAKE='"sandbox": {"provider": {"type": "fake", "scope": "it"}}'

# --- M2 and L3 over a unix socket (no threadAccess) ---
start_server "{$FAKE, \"permissions\": {\"mode\": \"bypass\"}}" || { not_ok "server starts"; done_testing; exit 1; }
ctreq text/plain '{"thread_id": "m2"}'
[ "$STATUS" = 415 ] && [ "$(code)" = unsupported_media_type ]; check "M2: a text/plain body is 415 unsupported_media_type" [ $? = 0 ]
out=$(curl -s -w '\n%{http_code}' --unix-socket "$SOCK" -X POST -d '{"thread_id": "m2"}' http://b4/threads)
check "M2: curl -d (form-urlencoded) is 415" [ "${out##*$'\n'}" = 415 ]
ctreq 'multipart/form-data; boundary=x' '{"thread_id": "m2"}'
check "M2: a multipart body is 415" [ "$STATUS" = 415 ]
ctreq application/jsonx '{"thread_id": "m2"}'
check "M2: application/jsonx is not JSON (415)" [ "$STATUS" = 415 ]
ctreq 'Application/JSON; charset=utf-8' '{"thread_id": "m2"}'
check "M2: application/json with parameters, any case, is accepted" [ "$STATUS" = 201 ]
req GET /threads/m2
check "M2: no body needs no Content-Type" [ "$STATUS" = 200 ]

req POST /threads '{"thread_id": "a\u0000b"}'
[ "$STATUS" = 400 ] && glob "$(json_get "$BODY" error.message)" "*NUL*"; check "L3: a NUL in thread_id is 400" [ $? = 0 ]
req GET /threads/a
check "L3: and no truncated thread 'a' was made" [ "$STATUS" = 404 ]
req POST /threads '{"thread_id": "x", "parent_thread_id": "m2\u0000"}'
check "L3: a NUL in parent_thread_id is 400" [ "$STATUS" = 400 ]
req POST /threads '{"thread_id": "m2x"}'
req GET /threads/m2%00x
[ "$STATUS" = 400 ] && glob "$(json_get "$BODY" error.message)" "*NUL*"; check "L3: %00 in a path is 400, not a lookup of the truncated id" [ $? = 0 ]
for dot in . ..; do
        req POST /threads "{\"thread_id\": \"$dot\"}"
        check "L3: '$dot' is refused as an id" [ "$STATUS" = 400 ]
done

long=$(printf 'é%.0s' $(seq 128)) # 256 bytes of UTF-8
enc=$(python3 -c 'import sys,urllib.parse; print(urllib.parse.quote(sys.argv[1], safe=""))' "$long")
req POST /threads "{\"thread_id\": \"${long}x\"}"
check "L3: a 257-byte id is 400" [ "$STATUS" = 400 ]
req POST /threads "{\"thread_id\": \"$long\"}"
check "L3: a 256-byte id is created" [ "$STATUS" = 201 ]
req GET "/threads/$enc"
[ "$STATUS" = 200 ] && [ "$(json_get "$BODY" thread_id)" = "$long" ]; check "L3: the 256-byte id: GET" [ $? = 0 ]
req POST "/threads/$enc/tools/writeFile" '{"path": "f", "content": "1"}'
[ "$STATUS" = 200 ] && [ "$(json_get "$BODY" ok)" = true ]; check "L3: the 256-byte id: tools" [ $? = 0 ]
req POST "/threads/$enc/runs" '{"calls": [{"tool": "readFile", "args": {"path": "f"}}]}'
check "L3: the 256-byte id: runs" [ "$(json_get "$BODY" results.0.result)" = 1 ]
req POST "/threads/$enc/permissions" '{"interruptId": "perm-x", "decision": "once"}'
check "L3: the 256-byte id: permissions (reaches the handler)" [ "$(code)" = interrupt_not_found ]
req POST "/threads/$enc/cancel"
check "L3: the 256-byte id: cancel" [ "$(code)" = no_run_in_flight ]
req POST "/threads/$enc/release"
check "L3: the 256-byte id: release" [ "$STATUS" = 200 ]
req POST "/threads/$enc/workspace/inspect" '{}'
[ "$(code)" != thread_not_found ] && [ "$STATUS" = 404 ]; check "L3: the 256-byte id: inspect (reaches the route, which is off here)" [ $? = 0 ]
req DELETE "/threads/$enc"
check "L3: the 256-byte id: DELETE" [ "$STATUS" = 200 ]
stop_server

# --- M2: Host and Origin on a TCP listener without threadAccess ---
start_tcp "{$FAKE, \"permissions\": {\"mode\": \"bypass\"}}" "$WORK/st-tcp" || { not_ok "tcp server starts"; done_testing; exit 1; }
treq POST /threads '{"thread_id": "csrf1"}' -H 'Host: attacker.example' -H 'Origin: http://attacker.example' -H 'Content-Type: text/plain'
check "M2: the audit's CSRF/rebinding create is refused" [ "$STATUS" != 201 ]
for h in attacker.example "attacker.example:$PORT" "localhost:1" "127.0.0.2:$PORT" "localhost.attacker.example"; do
        treq GET /threads "" -H "Host: $h"
        [ "$STATUS" = 421 ] && [ "$(code)" = host_not_allowed ]; check "M2: Host '$h' is 421 host_not_allowed" [ $? = 0 ]
done
for h in localhost "LOCALHOST:$PORT" "127.0.0.1:$PORT" 127.0.0.1 "[::1]:$PORT" "[::1]"; do
        treq GET /threads "" -H "Host: $h"
        check "M2: Host '$h' is accepted" [ "$STATUS" = 200 ]
done
for o in http://attacker.example "http://attacker.example:$PORT" null "https://127.0.0.1:$PORT" http://127.0.0.1; do
        treq GET /threads "" -H "Origin: $o"
        [ "$STATUS" = 403 ] && [ "$(code)" = origin_not_allowed ]; check "M2: Origin '$o' is 403 origin_not_allowed" [ $? = 0 ]
done
treq POST /threads '{"thread_id": "own-origin"}' "${JSON[@]}" -H "Origin: http://127.0.0.1:$PORT"
check "M2: the server's own origin is accepted" [ "$STATUS" = 201 ]
out=$("$B4BOX" threads --server "http://127.0.0.1:$PORT" create --id via-cli)
check "M2: the CLI client passes the checks" [ "$(json_get "$out" thread_id)" = via-cli ]
out=$("$B4BOX" tool --server "http://localhost:$PORT" --thread via-cli writeFile '{"path": "x", "content": "y"}')
check "M2: the CLI client by name (localhost)" [ "$(json_get "$out" ok)" = true ]
stop_server

# --- with threadAccess: Host/Origin are the token's business, 415 still applies; M3; L1 ---
printf 'alice-token-0123456789\n' > "$WORK/alice.token"
export BOB_TOKEN=bob-token-0123456789 AGENT_TOKEN=agent-token-0123456789 APPROVER_TOKEN=approver-token-0123456789
ALL_OPS='"thread.create", "thread.read", "thread.update", "thread.delete", "thread.run", "thread.workspace", "thread.approve"'
start_tcp "{$FAKE, \"permissions\": {\"mode\": \"interactive\"},
  \"threadAccess\": {\"principals\": [
    {\"name\": \"alice\", \"tokenFile\": \"$WORK/alice.token\", \"operations\": [$ALL_OPS]},
    {\"name\": \"bob\", \"tokenEnv\": \"BOB_TOKEN\", \"operations\": [$ALL_OPS]},
    {\"name\": \"agent\", \"tokenEnv\": \"AGENT_TOKEN\", \"operations\": [\"thread.create\", \"thread.run\"]},
    {\"name\": \"approver\", \"tokenEnv\": \"APPROVER_TOKEN\", \"operations\": [\"thread.approve\"], \"threads\": \"all\"}]}}" \
        "$WORK/st-acc" || { not_ok "policy server starts"; done_testing; exit 1; }
A=(-H "Authorization: Bearer alice-token-0123456789" "${JSON[@]}")
B=(-H "Authorization: Bearer bob-token-0123456789" "${JSON[@]}")
G=(-H "Authorization: Bearer agent-token-0123456789" "${JSON[@]}")
P=(-H "Authorization: Bearer approver-token-0123456789" "${JSON[@]}")
treq GET /healthz "" -H 'Host: b4box.example'
check "M2: with threadAccess any Host is accepted" [ "$STATUS" = 200 ]
treq POST /threads '{"thread_id": "t"}' -H "Authorization: Bearer alice-token-0123456789" -H 'Content-Type: text/plain'
check "M2: with threadAccess a text/plain body is still 415" [ "$STATUS" = 415 ]

treq POST /threads '{"thread_id": "ag1"}' "${G[@]}"
treq POST /threads/ag1/tools/runBash '{"command": "ls"}' "${G[@]}"
ID=$(json_get "$BODY" permissionRequest.interruptId)
check "M3: the agent's call asks for permission" glob "$ID" "perm-*"
treq POST /threads/ag1/permissions "{\"interruptId\": \"$ID\", \"decision\": \"once\"}" "${G[@]}"
[ "$STATUS" = 403 ] && [ "$(code)" = forbidden ]; check "M3: thread.create + thread.run may not answer it (403)" [ $? = 0 ]
treq POST /threads/ag1/permissions "{\"interruptId\": \"$ID\", \"decision\": \"once\"}" "${P[@]}"
[ "$STATUS" = 200 ] && [ "$(json_get "$BODY" ok)" = true ]; check "M3: a principal with thread.approve answers it" [ $? = 0 ]

treq POST /threads '{"thread_id": "al1"}' "${A[@]}"
L1_ROUTES=("GET /threads/ID" "DELETE /threads/ID" "POST /threads/ID/release" "POST /threads/ID/cancel"
        "POST /threads/ID/runs {\"calls\":[{\"tool\":\"listDir\",\"args\":{}}]}" "POST /threads/ID/tools/listDir {}"
        "POST /threads/ID/permissions {\"interruptId\":\"perm-x\",\"decision\":\"deny\"}" "POST /threads/ID/workspace/inspect {}")
for r in "${L1_ROUTES[@]}"; do
        read -r m p body <<<"$r"
        treq "$m" "${p/ID/al1}" "$body" "${B[@]}"
        theirs="$STATUS $BODY"
        treq "$m" "${p/ID/nosuch}" "$body" "${B[@]}"
        missing="$STATUS ${BODY//nosuch/al1}"
        check "L1: $m ${p/ID/al1}: another's thread answers as a missing one ($STATUS)" \
                [ "$theirs" = "$missing" ] && [ "$STATUS" = 404 ]
done
treq GET /threads/al1 "" "${A[@]}"
check "L1: the owner still sees it" [ "$STATUS" = 200 ]

# --- the CLI's client (lib/http) over TCP: the bearer token, refusals, bad targets ---
out=$(B4BOX_TOKEN=alice-token-0123456789 "$B4BOX" threads --server "http://127.0.0.1:$PORT/" show al1)
check "CLI over TCP with a token (a trailing / in the URL)" [ "$(json_get "$out" thread_id)" = al1 ]
B4BOX_TOKEN=bob-token-0123456789 "$B4BOX" threads --server "http://127.0.0.1:$PORT" show al1 >/dev/null 2>"$WORK/cli.err"
[ $? = 1 ] && grep -q 'HTTP 404' "$WORK/cli.err"; check "CLI: another's token reads as missing (HTTP 404)" [ $? = 0 ]
"$B4BOX" threads --server "http://127.0.0.1:$PORT" ls >/dev/null 2>"$WORK/cli.err"
[ $? = 1 ] && grep -q 'HTTP 401' "$WORK/cli.err"; check "CLI: no token, HTTP 401 reported" [ $? = 0 ]
B4BOX_TOKEN=$'bad\r\nX-Injected: 1' "$B4BOX" threads --server "http://127.0.0.1:$PORT" ls >/dev/null 2>"$WORK/cli.err"
[ $? = 1 ] && grep -q 'B4BOX_TOKEN' "$WORK/cli.err"; check "CLI: a token with a line break is refused, not sent" [ $? = 0 ]
stop_server
"$B4BOX" threads --server "ftp://127.0.0.1:$PORT" ls >/dev/null 2>"$WORK/cli.err"
[ $? = 1 ] && grep -q "server 'ftp://127.0.0.1:$PORT' is not" "$WORK/cli.err"; check "CLI: an ftp:// server is refused by name" [ $? = 0 ]
"$B4BOX" threads --server "http://127.0.0.1:$PORT" ls >/dev/null 2>"$WORK/cli.err"
[ $? = 1 ] && grep -q "cannot connect to http://127.0.0.1:$PORT" "$WORK/cli.err"; check "CLI: nobody listening is a transport error naming the server" [ $? = 0 ]

# --- M4: trickling clients do not lock anyone out ---
cat > "$WORK/slow.py" <<'EOF'
# slow.py PORT N SECONDS: N connections that send a request's headers one line every 0.5 s
# and reconnect when cut, for SECONDS.
import socket, sys, time
port, n, end = int(sys.argv[1]), int(sys.argv[2]), time.time() + float(sys.argv[3])
def conn():
    s = socket.create_connection(("127.0.0.1", port))
    s.sendall(b"POST /threads HTTP/1.1\r\nHost: localhost\r\n")
    return s
socks = [conn() for _ in range(n)]
while time.time() < end:
    time.sleep(0.5)
    for i, s in enumerate(socks):
        try:
            s.sendall(b"X-Slow: 1\r\n")
        except OSError:
            s.close()
            try:
                socks[i] = conn()
            except OSError:
                pass
EOF
timed() { local t0=$(date +%s%N); "$@"; ELAPSED_MS=$(( ($(date +%s%N) - t0) / 1000000 )); }
# The old default shape: 64 connections in all; headers must arrive within 1.5 s.
start_tcp "{\"server\": {\"maxConnections\": 64, \"headerTimeoutMs\": 1500}, $FAKE,
  \"threadAccess\": {\"principals\": [{\"name\": \"alice\", \"tokenFile\": \"$WORK/alice.token\", \"operations\": [$ALL_OPS]}]}}" \
        "$WORK/st-slow" || { not_ok "slowloris server starts"; done_testing; exit 1; }
python3 "$WORK/slow.py" "$PORT" 80 8 & SLOW=$!
check "M4: the trickling clients hold all 64 connections" await_conns 64
timed treq GET /healthz
[ "$STATUS" = 200 ] && [ "$ELAPSED_MS" -lt 5000 ]; check "M4: 80 trickling clients over a cap of 64: /healthz answers (${ELAPSED_MS} ms)" [ $? = 0 ]
timed treq GET /threads "" "${A[@]}"
[ "$STATUS" = 200 ] && [ "$ELAPSED_MS" -lt 5000 ]; check "M4: and so does an authenticated caller (${ELAPSED_MS} ms)" [ $? = 0 ]
kill "$SLOW" 2>/dev/null; wait "$SLOW" 2>/dev/null
stop_server
# A per-address cap below the global one: the address's oldest pending connection makes way.
start_tcp "{\"server\": {\"maxConnectionsPerIp\": 16}, $FAKE}" "$WORK/st-slow2" || { not_ok "per-address server starts"; done_testing; exit 1; }
python3 "$WORK/slow.py" "$PORT" 64 6 & SLOW=$!
check "M4: the trickling clients hold their address's 16 connections" await_conns 16
timed treq GET /healthz
[ "$STATUS" = 200 ] && [ "$ELAPSED_MS" -lt 5000 ]; check "M4: 64 trickling clients over a per-address cap of 16: /healthz answers at once (${ELAPSED_MS} ms)" [ $? = 0 ]
kill "$SLOW" 2>/dev/null; wait "$SLOW" 2>/dev/null
stop_server

# --- M4: idle keep-alive connections cost no thread ---
# The client opens its connections a quarter of the listen backlog at a time, and lets the
# next batch go only once the server has accepted the last (the listener's accept queue,
# ss's Recv-Q, is empty). A burst beyond the backlog overflows the accept queue: the kernel
# drops the handshake's last ACK, and those connections complete only at TCP's SYN-ACK
# retransmissions (1 s, 2 s, 4 s, ...), so how long N took, and whether the fixed waits
# here were enough, depended on the machine's load. The server's inactivity and header
# timeouts are at their maximum: no idle connection may be closed during the test, and the
# client checks at the end that none was.
N=10000
[ "$(ulimit -n)" != unlimited ] && [ "$(ulimit -n)" -lt $((N + 200)) ] && N=$(( $(ulimit -n) - 200 ))
start_tcp "{\"server\": {\"maxConnections\": $((N + 100)), \"maxConnectionsPerIp\": $((N + 100)),
  \"requestTimeoutMs\": 600000, \"headerTimeoutMs\": 600000}, $FAKE}" \
        "$WORK/st-idle" || { not_ok "idle server starts"; done_testing; exit 1; }
python3 - "$PORT" "$N" "$WORK/idle" <<'EOF' & IDLE=$!
import os, socket, subprocess, sys, time
port, n, base = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3]
deadline = time.monotonic() + 240  # a bound for a broken server, not a timing assumption
def listener():  # [accept queue length, backlog]: a listener's Recv-Q and Send-Q
    out = subprocess.run(["ss", "-ltnH", "sport = :%d" % port], capture_output=True,
                         text=True, check=True).stdout.split()
    return [int(out[1]), int(out[2])]
def give_up(why):
    print("# " + why, flush=True)
    sys.exit(1)
t0, batch, socks = time.monotonic(), max(1, listener()[1] // 4), []
while len(socks) < n:
    for _ in range(min(batch, n - len(socks))):
        socks.append(socket.create_connection(("127.0.0.1", port)))
    while listener()[0] > 0:
        if time.monotonic() > deadline:
            give_up("the server stopped accepting (%d connections made)" % len(socks))
        time.sleep(0.01)
print("# %d connections in %.1f s, %d at a time" % (n, time.monotonic() - t0, batch), flush=True)
open(base + ".ready", "w").close()
while not os.path.exists(base + ".done"):
    if time.monotonic() > deadline:
        give_up("never told to finish")
    time.sleep(0.05)
closed = 0
for s in socks:  # an idle connection the server closed reads as EOF (or a reset)
    s.setblocking(False)
    try:
        closed += s.recv(1) == b""
    except BlockingIOError:
        pass
    except OSError:
        closed += 1
print("# %d of %d connections closed by the server while idle" % (closed, n), flush=True)
sys.exit(closed != 0)
EOF
while [ ! -e "$WORK/idle.ready" ] && kill -0 "$IDLE" 2>/dev/null; do sleep 0.1; done
fds=$(ls /proc/$SERVER_PID/fd | wc -l)
threads=$(ls /proc/$SERVER_PID/task | wc -l)
check "M4: $N idle connections are open on the server ($fds fds)" [ -e "$WORK/idle.ready" -a "$fds" -ge "$N" ]
check "M4: and cost no thread each ($threads threads)" [ "$threads" -lt 32 ]
timed treq GET /healthz
check "M4: /healthz still answers among them (${ELAPSED_MS} ms)" [ "$STATUS" = 200 ]
touch "$WORK/idle.done"
check "M4: and the server closed none of them" wait "$IDLE"
stop_server

done_testing
