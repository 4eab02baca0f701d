#!/usr/bin/env bash
# b4box serve speaks sd_notify(3)'s protocol to a service manager (the systemd unit is
# Type=notify): READY=1 once the API answers, STOPPING=1 when it shuts down. A python3
# datagram socket plays the manager; the server listens on a unix socket of the test's own.
. "$(dirname "$0")/lib.sh"
command -v python3 >/dev/null || skip_all "needs python3"

cat >"$WORK/manager.py" <<'PY'
import socket, sys
s = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
s.bind(sys.argv[1])
s.settimeout(20)
with open(sys.argv[2], "w") as out:
    for _ in range(2):
        try:
            msg = s.recv(4096).decode()
        except socket.timeout:
            break
        out.write(msg.replace("\n", " ") + "\n")
        out.flush()
PY
python3 "$WORK/manager.py" "$WORK/notify.sock" "$WORK/got" &
MANAGER_PID=$!
for _ in $(seq 100); do [ -S "$WORK/notify.sock" ] && break; sleep 0.05; done

export NOTIFY_SOCKET=$WORK/notify.sock
start_server '{"sandbox": {"provider": {"type": "fake", "scope": "notify"}}}'
for _ in $(seq 100); do [ -s "$WORK/got" ] && break; sleep 0.05; done
check "READY=1 once the API answers" grep -q '^READY=1 STATUS=serving' "$WORK/got"
stop_server
unset NOTIFY_SOCKET
wait "$MANAGER_PID" 2>/dev/null
check "STOPPING=1 when it shuts down" grep -q '^STOPPING=1' "$WORK/got"
check "nothing else" [ "$(wc -l <"$WORK/got")" = 2 ]
done_testing
