# Shared helpers for the kube honesty scenarios (bash, TAP): start the fake API server
# (tests/fakes/kube-apiserver.py) in a private state dir, talk to its control API, stop it.
set -u
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
FAKE=${B4BOX_KUBE_FAKE:-$HERE/../fakes/kube-apiserver.py}
PY=/usr/bin/python3
TAP_N=0
TAP_FAILED=0
ok() { TAP_N=$((TAP_N + 1)); echo "ok $TAP_N - $1"; }
not_ok() { TAP_N=$((TAP_N + 1)); TAP_FAILED=$((TAP_FAILED + 1)); echo "not ok $TAP_N - $1"; }
skip_all() { echo "1..0 # SKIP $1"; exit 0; }
check() { local name=$1; shift; if "$@"; then ok "$name"; else not_ok "$name"; fi; }
done_testing() { echo "1..$TAP_N"; [ "$TAP_FAILED" -eq 0 ]; }

[ "$(id -u)" = 0 ] || skip_all "the fake's exec sandbox needs root (mount namespaces)"

FAKE_STATE=$(mktemp -d "${TMPDIR:-/tmp}/b4kube.XXXXXX")
FAKE_PID=
stop_fake() {
        if [ -n "$FAKE_PID" ]; then
                kill -TERM "$FAKE_PID" 2>/dev/null
                wait "$FAKE_PID" 2>/dev/null
                FAKE_PID=
        fi
}
# KUBE_FAKE_KEEP=DIR keeps each scenario's request log (what the real client sent, as the
# control API's /_fake/log answers it) and the fake's stderr in DIR, named after the scenario.
SCENARIO=$(basename "${SCENARIO:-$0}")
cleanup() {
        if [ -n "${KUBE_FAKE_KEEP:-}" ] && [ -n "$FAKE_PID" ]; then
                mkdir -p "$KUBE_FAKE_KEEP"
                ctl GET /log >"$KUBE_FAKE_KEEP/${SCENARIO%.*}.requests.json" 2>/dev/null
                cp "$FAKE_STATE/stderr" "$KUBE_FAKE_KEEP/${SCENARIO%.*}.stderr" 2>/dev/null
        fi
        stop_fake
        rm -rf "$FAKE_STATE"
}
trap cleanup EXIT

# start_fake [ARGS...]: sets FAKE_URL, FAKE_ADMIN, FAKE_CA, KUBECONFIG
start_fake() {
        "$PY" "$FAKE" --state "$FAKE_STATE" "$@" >"$FAKE_STATE/stdout" 2>"$FAKE_STATE/stderr" &
        FAKE_PID=$!
        for _ in $(seq 200); do
                if [ -s "$FAKE_STATE/server.json" ]; then
                        FAKE_URL=$("$PY" -c 'import json,sys; print(json.load(open(sys.argv[1]))["url"])' "$FAKE_STATE/server.json")
                        FAKE_ADMIN=$(cat "$FAKE_STATE/admin-token")
                        FAKE_CA=$FAKE_STATE/ca.crt
                        KUBECONFIG=$FAKE_STATE/kubeconfig
                        export FAKE_URL FAKE_ADMIN FAKE_CA KUBECONFIG FAKE_STATE
                        return 0
                fi
                kill -0 "$FAKE_PID" 2>/dev/null || break
                sleep 0.05
        done
        echo "# the fake did not start:"; sed 's/^/# /' "$FAKE_STATE/stderr"
        return 1
}

# ctl METHOD PATH [JSON]: the fake's control API; prints the answer
ctl() {
        curl -sS --cacert "$FAKE_CA" -X "$1" -H "Authorization: Bearer $FAKE_ADMIN" \
                -H 'Content-Type: application/json' ${3:+-d "$3"} "$FAKE_URL/_fake$2"
}

# jget JSON EXPR: a Python expression over the parsed JSON `j`
jget() { "$PY" -c 'import json,sys; j=json.loads(sys.argv[1]); print(eval(sys.argv[2]))' "$1" "$2"; }
