#!/usr/bin/env bash
# server.listen "systemd" (and --listen systemd): b4box serves the one socket a service
# manager passes (fd 3, LISTEN_PID/LISTEN_FDS), unix or TCP, refuses without one or with more
# than one, keeps the loopback rule, and never hands the variables to commands.
B4BOX=${B4BOX:?}
. "$(dirname "$0")/lib.sh"
ACT=$(cd "$(dirname "$0")" && pwd)/socket-activate.py
# The resolver (a child of the server) writes down its environment.
mkdir -p "$WORK/empty"
cat > "$WORK/resolve.sh" <<SH
#!/bin/sh
cat >/dev/null
env > "$WORK/resolver.env"
echo '{"workspace": {"source": {"directory": "empty", "include": []}}}'
SH
chmod +x "$WORK/resolve.sh"
CFG="{\"sandbox\": {\"provider\": {\"type\": \"fake\", \"scope\": \"sa\"},
  \"thread\": {\"command\": [\"$WORK/resolve.sh\"]}}, \"server\": {\"listen\": \"systemd\"}}"
printf '%s' "$CFG" > "$WORK/b4box.json"

wait_up() { # wait_up CURL-ARGS...: the API answers within 5 s
        for _ in $(seq 100); do curl -s "$@" >/dev/null && return 0; sleep 0.05; done
        return 1
}

SOCK=$WORK/act.sock
"$ACT" "unix:$SOCK" "$B4BOX" -c "$WORK/b4box.json" --state "$WORK/s1" serve 2>>"$WORK/server.log" &
SERVER_PID=$!
check "a unix socket passed by the service manager is served" wait_up --unix-socket "$SOCK" http://b4/healthz
req POST /threads '{"thread_id": "x"}'
req POST /threads/x/tools/readFile '{"path": "none.txt"}'
if [ -s "$WORK/resolver.env" ] &&
        ! grep -q '^LISTEN_' "$WORK/resolver.env"; then ok "the server's children do not see LISTEN_*"; else not_ok "the server's children do not see LISTEN_*"; fi
check "the log names the passed socket" grep -q "address=unix:$SOCK" "$WORK/server.log"
stop_server
check "the socket file is the manager's: left in place" [ -S "$SOCK" ]

PORT=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
"$ACT" "127.0.0.1:$PORT" "$B4BOX" --state "$WORK/s2" serve --listen systemd 2>>"$WORK/server.log" &
SERVER_PID=$!
check "--listen systemd serves a passed TCP socket" wait_up "http://127.0.0.1:$PORT/healthz"
out=$(curl -s -H "Host: evil.example" "http://127.0.0.1:$PORT/threads")
check "... with the browser guard (a foreign Host refused)" glob "$out" "*host*"
stop_server

out=$("$B4BOX" -c "$WORK/b4box.json" --state "$WORK/s3" serve 2>&1)
check "no socket passed: refused, saying how to start it" glob "$out" "*no socket was passed*.socket unit*"
out=$(TEST_LISTEN_FDS=2 "$ACT" "unix:$WORK/two.sock" "$B4BOX" -c "$WORK/b4box.json" --state "$WORK/s4" serve 2>&1)
check "two sockets: refused" glob "$out" "*passed 2 sockets; b4box takes exactly one*"
out=$("$ACT" "0.0.0.0:0" "$B4BOX" -c "$WORK/b4box.json" --state "$WORK/s5" serve 2>&1)
check "a non-loopback socket without threadAccess: refused" glob "$out" "*without a threadAccess block*"
done_testing
