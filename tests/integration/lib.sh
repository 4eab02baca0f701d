# Shared helpers for the integration scripts (bash, TAP). Source after setting B4BOX.
set -u
TAP_N=0
TAP_FAILED=0
ok() { TAP_N=$((TAP_N + 1)); echo "ok $TAP_N - $1"; }
not_ok() { TAP_N=$((TAP_N + 1)); TAP_FAILED=$((TAP_FAILED + 1)); echo "not ok $TAP_N - $1"; }
skip_all() { echo "1..0 # SKIP $1"; exit 0; }
# check NAME CMD...: ok when CMD succeeds
check() { local name=$1; shift; if "$@"; then ok "$name"; else not_ok "$name"; fi; }
# glob NAME VALUE PATTERN: ok when VALUE matches the shell PATTERN
glob() { [[ $1 == $2 ]]; }
done_testing() { echo "1..$TAP_N"; [ "$TAP_FAILED" -eq 0 ]; }

# curl arguments for a JSON body: the server refuses any other Content-Type with 415 (M2),
# and curl -d alone sends application/x-www-form-urlencoded
JSON=(-H 'Content-Type: application/json')

WORK=$(mktemp -d "${TMPDIR:-/tmp}/b4it.XXXXXX")
SERVER_PID=
cleanup() {
        [ -n "${KEEP_LOG:-}" ] && cp "$WORK/server.log" "$KEEP_LOG" 2>/dev/null
        [ -n "$SERVER_PID" ] && kill -TERM "$SERVER_PID" 2>/dev/null && wait "$SERVER_PID" 2>/dev/null
        rm -rf "$WORK"
}
trap cleanup EXIT

# start_server CONFIG_JSON [STATE]: b4box serve on $WORK/sock; sets SERVER_PID, SOCK
start_server() {
        local cfg=$1 state=${2:-$WORK/state}
        SOCK=$WORK/sock
        printf '%s' "$cfg" > "$WORK/b4box.json"
        "$B4BOX" -c "$WORK/b4box.json" --state "$state" serve --listen "unix:$SOCK" \
                2>>"$WORK/server.log" &
        SERVER_PID=$!
        for _ in $(seq 100); do
                [ -S "$SOCK" ] && curl -s --unix-socket "$SOCK" http://b4/healthz >/dev/null && return 0
                sleep 0.05
        done
        echo "# server did not start:"; sed 's/^/# /' "$WORK/server.log"
        return 1
}

stop_server() {
        kill -TERM "$SERVER_PID" 2>/dev/null
        wait "$SERVER_PID" 2>/dev/null
        SERVER_PID=
}

# req METHOD PATH [BODY] [extra curl args]: prints "STATUS BODY" into $STATUS / $BODY
req() {
        local method=$1 path=$2 body=${3-}
        shift 3 2>/dev/null || shift $#
        local out
        if [ "${body:0:1}" = "@" ]; then
                out=$(curl -s --unix-socket "$SOCK" -X "$method" -H 'Content-Type: application/json' \
                        --data-binary "$body" -w '\n%{http_code}' "$@" "http://b4$path")
        elif [ -n "$body" ]; then
                out=$(curl -s --unix-socket "$SOCK" -X "$method" -H 'Content-Type: application/json' \
                        --data-binary "$body" -w '\n%{http_code}' "$@" "http://b4$path")
        else
                out=$(curl -s --unix-socket "$SOCK" -X "$method" -w '\n%{http_code}' "$@" "http://b4$path")
        fi
        STATUS=${out##*$'\n'}
        BODY=${out%$'\n'*}
}

# jq-free JSON field checks with python3
json_get() { python3 -c 'import json,sys; v=json.loads(sys.argv[1])
for k in sys.argv[2].split("."):
    v = v[int(k)] if isinstance(v, list) else v[k]
print(v if not isinstance(v,(dict,list,bool)) else json.dumps(v))' "$1" "$2" 2>/dev/null; }
