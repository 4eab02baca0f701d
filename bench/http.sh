#!/usr/bin/env bash
# HTTP API throughput and latency over loopback: readFile of 4 KiB and runBash `true` with
# 1, 8 and 64 concurrent connections (each on its own thread), per provider; then the
# server's peak RSS after creating 1,000 threads. Usage: bench/http.sh BUILD_DIR [SECONDS]
set -euo pipefail
BUILD=${1:-build}
SECS=${2:-5}
B4BOX=$BUILD/src/cli/b4box
LOAD=$BUILD/bench/b4box-http-load
WORK=$(mktemp -d "${TMPDIR:-/tmp}/b4bench.XXXXXX")
PID=
cleanup() { [ -n "$PID" ] && kill -TERM "$PID" 2>/dev/null && wait "$PID" 2>/dev/null; rm -rf "$WORK"; }
trap cleanup EXIT

port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }

serve() { # provider
        PORT=$(port)
        printf '{"sandbox":{"provider":{"type":"%s","scope":"bench"},"network":{"mode":"deny"}}}' "$1" > "$WORK/$1.json"
        "$B4BOX" -c "$WORK/$1.json" --state "$WORK/state-$1" serve --listen "127.0.0.1:$PORT" 2>"$WORK/$1.log" &
        PID=$!
        for _ in $(seq 100); do curl -sf "127.0.0.1:$PORT/healthz" >/dev/null && return 0; sleep 0.05; done
        echo "server for $1 did not start"; cat "$WORK/$1.log"; return 1
}

stop() { kill -TERM "$PID"; wait "$PID" 2>/dev/null || true; PID=; }

prepare() { # N threads with a 4 KiB file each
        local content
        content=$(head -c 4096 /dev/zero | tr '\0' x)
        for i in $(seq 0 $(($1 - 1))); do
                curl -sf -H "Content-Type: application/json" -X POST "127.0.0.1:$PORT/threads" -d "{\"thread_id\":\"t$i\"}" >/dev/null
                curl -sf -H "Content-Type: application/json" -X POST "127.0.0.1:$PORT/threads/t$i/tools/writeFile" \
                        -d "{\"path\":\"f4k\",\"content\":\"$content\"}" >/dev/null
        done
}

printf '%-8s %-14s %5s  %s\n' provider workload conns result
for provider in fake native; do
        if [ "$provider" = native ] && ! "$B4BOX" -c /dev/null check >/dev/null 2>&1 && [ "$(id -u)" != 0 ]; then
                echo "native: skipped (needs root)"; continue
        fi
        serve "$provider" || continue
        prepare 64
        for c in 1 8 64; do
                r=$("$LOAD" 127.0.0.1 "$PORT" "$c" "$SECS" '/threads/t%d/tools/readFile' '{"path":"f4k"}')
                printf '%-8s %-14s %5s  %s\n' "$provider" "readFile 4KiB" "$c" "$r"
        done
        for c in 1 8 64; do
                r=$("$LOAD" 127.0.0.1 "$PORT" "$c" "$SECS" '/threads/t%d/tools/runBash' '{"command":"true"}')
                printf '%-8s %-14s %5s  %s\n' "$provider" "runBash true" "$c" "$r"
        done
        stop
done

# Workspace inspection over HTTP: a native thread with 1,214 files (~9.6 MiB mixed sizes).
if [ "$(id -u)" = 0 ]; then
        PORT=$(port)
        mkdir -p "$WORK/empty"
        printf '#!/bin/sh\ncat >/dev/null\necho '"'"'{"workspace": {"source": {"directory": "empty", "include": []}}}'"'"'\n' > "$WORK/resolve.sh"
        chmod +x "$WORK/resolve.sh"
        printf 'bench-token-0123456789\n' > "$WORK/token"
        printf '{"sandbox":{"provider":{"type":"native","scope":"bench"},"network":{"mode":"deny"},"thread":{"command":["%s"]},"workspaceRead":"http"},"threadAccess":{"principals":[{"name":"b","tokenFile":"%s","operations":["thread.create","thread.run","thread.workspace"],"threads":"all"}]}}' \
                "$WORK/resolve.sh" "$WORK/token" > "$WORK/inspect.json"
        "$B4BOX" -c "$WORK/inspect.json" --state "$WORK/state-inspect" serve --listen "127.0.0.1:$PORT" 2>"$WORK/inspect.log" &
        PID=$!
        for _ in $(seq 100); do curl -sf "127.0.0.1:$PORT/healthz" >/dev/null && break; sleep 0.05; done
        H=(-H "Authorization: Bearer bench-token-0123456789")
        curl -sf "${H[@]}" -H "Content-Type: application/json" -X POST "127.0.0.1:$PORT/threads" -d '{"thread_id":"t0"}' >/dev/null
        curl -sf "${H[@]}" -H "Content-Type: application/json" -X POST "127.0.0.1:$PORT/threads/t0/tools/runBash" -d '{"command":"for d in $(seq 0 36); do mkdir -p d$d; for f in $(seq 0 31); do head -c $(( (d * 32 + f) % 97 * 160 + 16 )) /dev/zero | tr \"\\\\0\" x > d$d/f$f.txt; done; done; find . | wc -l; du -sh ."}' | python3 -c 'import json,sys; print("inspect workspace:", json.load(sys.stdin)["result"]["stdout"].split())'
        r=$(B4BOX_TOKEN=bench-token-0123456789 "$LOAD" 127.0.0.1 "$PORT" 1 "$SECS" '/threads/t%d/workspace/inspect' '{}')
        printf '%-8s %-14s %5s  %s\n' native "inspect 1,221 entries" 1 "$r"
        stop
fi

serve fake
for i in $(seq 0 999); do
        curl -sf -H "Content-Type: application/json" -X POST "127.0.0.1:$PORT/threads" -d "{\"thread_id\":\"r$i\"}" >/dev/null
done
echo "fake: peak server RSS with 1,000 threads created: $(awk '/VmHWM/ {print $2, $3}' /proc/$PID/status)"
stop
