#!/usr/bin/env bash
# GET /threads/{id}/check: the thread's effective policy over the provider's preflight, in the
# rows `b4box check --json` prints for the same config (fake always, native as root); a
# thread resolver's policy once the thread is admitted ("pending" before).
B4BOX=${B4BOX:?}
. "$(dirname "$0")/lib.sh"
command -v python3 >/dev/null || skip_all "python3 is not installed"

# same_rows NAME CHECK_JSON ROUTE_JSON: the controls (and ok, warnings) are the same
same_rows() {
        python3 - "$2" "$3" <<'PY'
import json, sys
c, r = json.loads(sys.argv[1]), json.loads(sys.argv[2])
same = c["controls"] == r["controls"] and c["warnings"] == r["warnings"] and c["provider"] == r["provider"]
if not same:
    print("# check:", json.dumps(c["controls"]))
    print("# route:", json.dumps(r["controls"]))
sys.exit(0 if same and len(r["controls"]) > 0 else 1)
PY
}

rows_for() { # rows_for PROVIDER_TYPE: the route's rows equal `b4box check --json`'s
        local type=$1
        local cfg="{\"sandbox\": {\"provider\": {\"type\": \"$type\", \"scope\": \"it-check-$type\"},
                \"network\": {\"mode\": \"deny\", \"allowlist\": [\"10.0.0.0/8\", \"example.com:443\"]},
                \"resources\": {\"memoryMb\": 256, \"timeoutMs\": 5000}},
                \"permissions\": {\"mode\": \"bypass\"}}"
        start_server "$cfg" "$WORK/state-$type" || { not_ok "$type: server starts"; return; }
        local cli
        cli=$("$B4BOX" -c "$WORK/b4box.json" --state "$WORK/state-cli-$type" check --json)
        req POST /threads '{"thread_id": "c1"}'
        req GET /threads/c1/check
        check "$type: check is 200" [ "$STATUS" = 200 ]
        check "$type: the rows are b4box check's" same_rows "$type" "$cli" "$BODY"
        check "$type: the policy comes from the app" [ "$(json_get "$BODY" policySource)" = app ]
        check "$type: network mode" [ "$(json_get "$BODY" policy.network.mode)" = deny ]
        check "$type: the allowlist" \
                [ "$(json_get "$BODY" policy.network.allowlist)" = '["10.0.0.0/8", "example.com:443"]' ]
        if [ "$(json_get "$BODY" policy.resources.memoryMb)" = 256 ] &&
                [ "$(json_get "$BODY" policy.resources.timeoutMs)" = 5000 ]; then ok "$type: resources"; else not_ok "$type: resources"; fi
        check "$type: the thread id" [ "$(json_get "$BODY" threadId)" = c1 ]
        req GET /threads/none/check
        if [ "$STATUS" = 404 ] &&
                [ "$(json_get "$BODY" error.details.code)" = thread_not_found ]; then ok "$type: a missing thread is 404"; else not_ok "$type: a missing thread is 404"; fi
        req DELETE /threads/c1
        stop_server
}

rows_for fake
if [ "$(id -u)" = 0 ]; then rows_for native; else ok "native # SKIP not root"; fi

# a thread resolver's policy: pending until the first run, then the record's
mkdir -p "$WORK/empty"
cat > "$WORK/resolve.sh" <<'SH'
#!/bin/sh
cat >/dev/null
echo '{"workspace": {"source": {"directory": "empty", "include": []}}, "policy": {"resources": {"timeoutMs": 1000}}}'
SH
chmod +x "$WORK/resolve.sh"
# on native as root: its timeout row is rewritten with the thread's value (the fake has no rows)
RTYPE=fake
[ "$(id -u)" = 0 ] && RTYPE=native
start_server "{\"sandbox\": {\"provider\": {\"type\": \"$RTYPE\", \"scope\": \"it-check-thread\"},
        \"thread\": {\"command\": [\"$WORK/resolve.sh\"]}, \"resources\": {\"timeoutMs\": 9000}},
        \"permissions\": {\"mode\": \"bypass\"}}" "$WORK/state-thread" ||
        { not_ok "resolver server starts"; done_testing; exit 1; }
req POST /threads '{"thread_id": "r1"}'
req GET /threads/r1/check
if [ "$(json_get "$BODY" policySource)" = pending ] &&
        [ "$(json_get "$BODY" policy.resources.timeoutMs)" = 9000 ]; then ok "before the first run the policy is pending"; else not_ok "before the first run the policy is pending"; fi
req POST /threads/r1/tools/listDir '{}'
check "a first run admits the thread" [ "$STATUS" = 200 ]
req GET /threads/r1/check
check "then it is the thread's" [ "$(json_get "$BODY" policySource)" = thread ]
check "with the resolver's timeout" [ "$(json_get "$BODY" policy.resources.timeoutMs)" = 1000 ]
[ "$RTYPE" = native ] && check "in the command timeout row" python3 -c '
import json, sys
rows = {c["name"]: c for c in json.loads(sys.argv[1])["controls"]}
sys.exit(0 if rows["command timeout"]["detail"].startswith("1000 ms") else 1)' "$BODY"
req DELETE /threads/r1
stop_server
done_testing
