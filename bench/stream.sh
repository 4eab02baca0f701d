#!/usr/bin/env bash
# Time to the first streamed byte of runBash (issue 16 item 1): `b4box serve` on a unix
# socket, fake and native side by side; per provider N calls (default 30) of
#   plain      POST .../tools/runBash {"command":"echo hi"}             whole JSON answer
#   first      the same with Accept: text/event-stream, to the stdout event
#   first+work {"command":"echo hi; sleep 0.3"} streamed, to the stdout event (the command
#              still runs: the figure must not include the sleep)
# medians and minima in ms. Usage: bench/stream.sh BUILD [N]. Native needs root.
set -eu
BUILD=${1:?usage: bench/stream.sh BUILD [N]}
N=${2:-30}
B4BOX=$(realpath "$BUILD")/src/cli/b4box
WORK=$(mktemp -d /tmp/b4stream.XXXXXX)
PIDS=()
trap 'for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null; wait "$p" 2>/dev/null; done; rm -rf "$WORK"' EXIT

start() { # NAME PROVIDER
        mkdir -p "$WORK/$1"
        printf '{"sandbox":{"provider":{"type":"%s","scope":"bench-stream"},"network":{"mode":"deny"}}}' \
                "$2" > "$WORK/$1/b4box.json"
        "$B4BOX" -c "$WORK/$1/b4box.json" --state "$WORK/$1/state" serve \
                --listen "unix:$WORK/$1/sock" 2>"$WORK/$1/log" &
        PIDS+=($!)
        for _ in $(seq 100); do [ -S "$WORK/$1/sock" ] && return 0; sleep 0.05; done
        echo "server $1 did not start" >&2; exit 1
}

PROVIDERS=(fake)
[ "$(id -u)" = 0 ] && PROVIDERS+=(native)
for p in "${PROVIDERS[@]}"; do start "$p" "$p"; done

python3 - "$WORK" "$N" "${PROVIDERS[@]}" <<'PY'
import json, socket, statistics, sys, time
work, n, providers = sys.argv[1], int(sys.argv[2]), sys.argv[3:]

def call(sock, path, body, accept=None, until=None):
    s = socket.socket(socket.AF_UNIX)
    s.connect(sock)
    data = json.dumps(body).encode()
    hdr = ("POST %s HTTP/1.1\r\nHost: b4\r\nConnection: close\r\nContent-Type: application/json\r\n"
           "Content-Length: %d\r\n" % (path, len(data)))
    if accept:
        hdr += "Accept: %s\r\n" % accept
    t0 = time.perf_counter()
    s.sendall(hdr.encode() + b"\r\n" + data)
    buf, t = b"", None
    while True:  # to the end (the run slot is free again), timing the first event
        b = s.recv(65536)
        if not b:
            break
        buf += b
        if until and t is None and until in buf:
            t = time.perf_counter() - t0
    if t is None:
        t = time.perf_counter() - t0
    s.close()
    if not buf.startswith(b"HTTP/1.1 20") or (until and until not in buf):
        raise SystemExit("unexpected answer: %r" % buf[:300])
    return t * 1000, buf

rows = []
for p in providers:
    sock = "%s/%s/sock" % (work, p)
    call(sock, "/threads", {"thread_id": "b"})
    call(sock, "/threads/b/tools/runBash", {"command": "true"})  # acquire, warm
    for name, body, accept in (("plain", {"command": "echo hi"}, None),
                               ("first", {"command": "echo hi"}, "text/event-stream"),
                               ("first+work", {"command": "echo hi; sleep 0.3"},
                                "text/event-stream")):
        if p == "fake" and "sleep" in body["command"]:
            continue
        ts = [call(sock, "/threads/b/tools/runBash", body, accept,
                   b"event: stdout" if accept else None)[0] for _ in range(n)]
        rows.append((p, name, statistics.median(ts), min(ts)))
print("| provider | call | median ms | min ms |")
print("| --- | --- | --- | --- |")
for p, name, med, mn in rows:
    print("| %s | %s | %.2f | %.2f |" % (p, name, med, mn))
PY
