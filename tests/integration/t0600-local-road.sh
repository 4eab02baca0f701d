#!/usr/bin/env bash
# Local commands take the server's road (issue 12 item 2): a thread id means the same sandbox
# to `b4box exec` as to the server (a child thread's is its root ancestor's), a local run of a
# managed thread is admitted (its workspace materialised) as a server's would be, and a local
# destroy removes the thread, its children and its association like DELETE /threads/{id};
# a local read reads what a server's would (the root's workspace, the recorded digests).
# The fake part needs nothing; the native part needs root.
B4BOX=${B4BOX:?}
. "$(dirname "$0")/lib.sh"

printf 'road-token-0123456789ab\n' > "$WORK/road.token"
AUTH=(-H "Authorization: Bearer road-token-0123456789ab")
mkdir -p "$WORK/src"
printf 'materialised\n' > "$WORK/src/main.txt"
cat > "$WORK/resolve.py" <<EOF
#!/usr/bin/python3
import json
print(json.dumps({"source": {"directory": "src", "include": ["main.txt"]}}))
EOF
chmod +x "$WORK/resolve.py"
access='"threadAccess": {"principals": [{"name": "r", "tokenFile": "'$WORK'/road.token",
  "operations": ["thread.create", "thread.run", "thread.delete"], "threads": "all"}]}'

# rows TABLE: the thread ids of TABLE in STATE's store, sorted, space-separated
rows() {
        python3 - "$1" "$2" <<'PY'
import sqlite3, sys
db = sqlite3.connect(sys.argv[1] + "/b4box.db")
print(" ".join(sorted(r[0] for r in db.execute("SELECT %s FROM %s" % (
    "id" if sys.argv[2] == "threads" else "thread_id", sys.argv[2])))))
PY
}
# local CONFIG STATE ARGS...: b4box on STATE with CONFIG, no server
local_b4() {
        local cfg=$1 state=$2
        shift 2
        printf '%s' "$cfg" > "$WORK/local.json"
        "$B4BOX" -c "$WORK/local.json" --state "$state" "$@"
}

# ---- fake: a local destroy of a managed root takes its child and its association ----
fake_cfg='{"sandbox": {"provider": {"type": "fake", "scope": "road"}, "network": {"mode": "deny"},
  "workspace": {"command": ["'$WORK'/resolve.py"]}}, '$access'}'
start_server "$fake_cfg" "$WORK/fst" || { not_ok "fake server starts"; done_testing; exit 1; }
req POST /threads '{"thread_id": "p"}' "${AUTH[@]}"
req POST /threads '{"thread_id": "c", "parent_thread_id": "p"}' "${AUTH[@]}"
check "server: a root and its child" [ "$STATUS" = 201 ]
req POST /threads/c/tools/runBash '{"command": "true"}' "${AUTH[@]}"
check "server: the child's run admits the root's workspace" [ "$STATUS" = 200 ]
stop_server
check "the root has its association" [ "$(rows "$WORK/fst" associations)" = p ]
local_b4 "$fake_cfg" "$WORK/fst" destroy p > /dev/null
check "local destroy of the root succeeds" [ $? = 0 ]
check "local destroy leaves no thread row (the child's included)" \
        [ -z "$(rows "$WORK/fst" threads)" ]
check "local destroy leaves no association" [ -z "$(rows "$WORK/fst" associations)" ]

if [ "$(id -u)" != 0 ]; then
        done_testing
        exit
fi

# ---- native: a local child thread runs in its root ancestor's sandbox ----
nat_cfg='{"sandbox": {"provider": {"type": "native", "scope": "it-road"}, "network": {"mode": "deny"}}, '$access'}'
start_server "$nat_cfg" "$WORK/nst" || { not_ok "native server starts"; done_testing; exit 1; }
req POST /threads '{"thread_id": "np"}' "${AUTH[@]}"
req POST /threads '{"thread_id": "nc", "parent_thread_id": "np"}' "${AUTH[@]}"
check "server: a native root and its child" [ "$STATUS" = 201 ]
stop_server
local_b4 "$nat_cfg" "$WORK/nst" exec --thread np -- 'echo shared > /workspace/f'
out=$(local_b4 "$nat_cfg" "$WORK/nst" exec --thread nc -- cat /workspace/f 2>&1)
check "local exec of the child sees its root's workspace" [ "$out" = shared ]
local_b4 "$nat_cfg" "$WORK/nst" release nc > /dev/null
check "local release of the child releases the root's sandbox" [ $? = 0 ]
out=$(local_b4 "$nat_cfg" "$WORK/nst" exec --thread nc -- cat /workspace/f 2>&1)
check "the workspace outlives the release" [ "$out" = shared ]
out=$(local_b4 "$nat_cfg" "$WORK/nst" read nc --json)
check "local read of the child answers for it with its root's workspace" \
        [ "$(json_get "$out" threadId)|$(json_get "$out" inspection.files.f)" = "nc|shared" ]
out=$(local_b4 "$nat_cfg" "$WORK/nst" destroy nc)
check "local destroy of the child says its root's workspace stays" \
        [ "$out" = "destroyed thread 'nc': a child thread, its root's sandbox and workspace are kept" ]
out=$(local_b4 "$nat_cfg" "$WORK/nst" exec --thread np -- cat /workspace/f 2>&1)
check "and it does" [ "$out" = shared ]
local_b4 "$nat_cfg" "$WORK/nst" destroy np > /dev/null
check "local destroy of the root leaves no row" [ -z "$(rows "$WORK/nst" threads)" ]

# ---- native, managed: a local run admits the thread as a server would ----
man_cfg='{"sandbox": {"provider": {"type": "native", "scope": "it-road-m"}, "network": {"mode": "deny"},
  "workspace": {"command": ["'$WORK'/resolve.py"]}}, '$access'}'
out=$(local_b4 "$man_cfg" "$WORK/mst" exec --thread m -- cat /workspace/main.txt 2>&1)
check "local exec of a managed thread sees its materialised workspace" [ "$out" = materialised ]
check "the local admission recorded the association" [ "$(rows "$WORK/mst" associations)" = m ]
out=$(local_b4 "$man_cfg" "$WORK/mst" read m --json)
digest=$(json_get "$out" sourceDigest)
is_digest() { [[ $1 =~ ^[0-9a-f]{64}$ ]]; }
check "local read of a managed thread gives the digest its admission recorded" is_digest "$digest"
local_b4 "$man_cfg" "$WORK/mst" read m --expect-source "$digest" > /dev/null
check "local read --expect-source takes the recorded digest" [ $? = 0 ]
local_b4 "$man_cfg" "$WORK/mst" read m --expect-source "$(printf '0%.0s' $(seq 64))" \
        > /dev/null 2> "$WORK/rd.err"
check "local read --expect-source refuses another digest" grep -q '^b4box: source_mismatch:' "$WORK/rd.err"
local_b4 "$man_cfg" "$WORK/mst" destroy m > /dev/null
check "local destroy removes the managed thread and its association" \
        [ -z "$(rows "$WORK/mst" threads)$(rows "$WORK/mst" associations)" ]
done_testing
