#!/usr/bin/env bash
# Honesty scenario 1: the real kubectl (Debian's, v1.32) against the fake API server: get,
# apply, wait, exec with stdin and exit codes, auth can-i, get -w, delete --wait, Status texts.
. "$(dirname "$0")/lib.sh"
command -v kubectl >/dev/null || skip_all "no kubectl"
M=$HERE/manifests
start_fake || exit 1
K=(kubectl --cache-dir "$FAKE_STATE/kcache" --request-timeout=20s)
OUT=$FAKE_STATE/out
ERR=$FAKE_STATE/err
POD=b4-sbx-t1
PVC=b4-sbx-vol-t1

# run CMD...: stdout in $OUT, stderr in $ERR, rc in $RC
run() { "$@" >"$OUT" 2>"$ERR"; RC=$?; }
has() { grep -qF -- "$1" "$2"; }

run "${K[@]}" version
check "version names the fake's server" has "Server Version: v1.32.4-b4box-fake" "$OUT"
run "${K[@]}" get pods
check "get pods on an empty namespace" has "No resources found in default namespace." "$ERR"

run "${K[@]}" apply --validate=false -f "$M/pvc.yaml" -f "$M/pod.yaml"
check "apply creates the PVC and the Pod" has "pod/$POD created" "$OUT"
run "${K[@]}" apply --validate=false -f "$M/pvc.yaml" -f "$M/pod.yaml"
check "a second apply changes nothing" has "pod/$POD unchanged" "$OUT"
run "${K[@]}" apply -f "$M/pod.yaml"
check "apply with validation asks for the OpenAPI the fake does not serve" \
        has "failed to download openapi" "$ERR"
run "${K[@]}" wait --for=condition=Ready "pod/$POD" --timeout=15s
check "wait sees the Pod Ready (watch)" has "condition met" "$OUT"
run "${K[@]}" get pod "$POD" -o 'jsonpath={.status.phase} {.status.podIP} {.spec.nodeName}'
check "the Pod is Running with an IP and a node" grep -qE '^Running 10\.244\.0\.[0-9]+ fake-node-1$' "$OUT"
run "${K[@]}" get events --field-selector "involvedObject.name=$POD"
check "get events: the kubelet's Started event, as a Table row" \
        grep -qE 'Normal +Started +pod/b4-sbx-t1 +Started container sandbox' "$OUT"
run "${K[@]}" get pvc "$PVC" -o 'jsonpath={.status.phase} {.spec.storageClassName}'
check "the PVC is Bound to the default class" has "Bound standard" "$OUT"
run "${K[@]}" get pods -l 'app.kubernetes.io/managed-by in (b4),b4.run/thread' -o name
check "set-based and existence selectors" has "pod/$POD" "$OUT"
run "${K[@]}" get pods -l '!b4.run/thread' -o name
check "a negated existence selector excludes it" test ! -s "$OUT"
run "${K[@]}" get pods --field-selector "metadata.name=$POD" -o name
check "fieldSelector metadata.name" has "pod/$POD" "$OUT"

run "${K[@]}" exec "$POD" -- id
check "exec runs as the Pod's runAsUser/runAsGroup/fsGroup" \
        grep -qE '^uid=1000\b.* gid=1000\b' "$OUT"
run "${K[@]}" exec "$POD" -- sh -c 'exit 3'
check "exit 3 in the Pod is kubectl's rc 3 (got $RC)" test "$RC" = 3
check "kubectl prints the exit code from the channel-3 Status" \
        has "command terminated with exit code 3" "$ERR"
printf 'line one\nline two\n' >"$FAKE_STATE/in"
run "${K[@]}" exec -i "$POD" -- sh -c 'cat > kept.txt && pwd && cat kept.txt' <"$FAKE_STATE/in"
check "exec -i: stdin reaches the command and its close ends cat (v5 CLOSE)" \
        test "$(cat "$OUT")" = "$(printf '/workspace\nline one\nline two')"
run "${K[@]}" exec "$POD" -- touch /etc/b4-fake-probe
check "readOnlyRootFilesystem: the root is read-only" has "Read-only file system" "$ERR"
run "${K[@]}" exec "$POD" -- sh -c 'touch /tmp/scratch && ls /tmp'
check "the emptyDir at /tmp is writable" has "scratch" "$OUT"
run "${K[@]}" exec -i "$POD" -- sh -c 'cat >/tmp/kx.$$ && chmod 0555 /tmp/kx.$$ && mv -f /tmp/kx.$$ /tmp/kx && /tmp/kx bootstrapped' </bin/echo
check "a binary sent on stdin into an emptyDir runs (the agent's bootstrap)" \
        test "$RC:$(cat "$OUT")" = "0:bootstrapped"
run "${K[@]}" exec "$POD" -- no-such-binary
check "a missing executable is the InternalError Status" \
        has 'exec: "no-such-binary": executable file not found in $PATH' "$ERR"
log=$(ctl GET /log)
check "kubectl asked for v5.channel.k8s.io and got it" \
        test "$(jget "$log" '[e.get("subprotocol") for e in j["entries"] if e.get("verb")=="exec"][0]')" = v5.channel.k8s.io
check "kubectl's exec query as the brief captured it (+ for space, false ones omitted)" \
        test "$(jget "$log" '[e["query"] for e in j["entries"] if e.get("verb")=="exec"][1]')" = \
        "command=sh&command=-c&command=exit+3&container=sandbox&stderr=true&stdout=true&timeout=20s"

# get -w sees a change made by someone else
"${K[@]}" get pod "$POD" -w --output-watch-events >"$FAKE_STATE/watch" 2>&1 &
WPID=$!
for _ in $(seq 100); do grep -q ADDED "$FAKE_STATE/watch" && break; sleep 0.05; done
run "${K[@]}" label pod "$POD" b4box.io/probe=yes
for _ in $(seq 100); do grep -q MODIFIED "$FAKE_STATE/watch" && break; sleep 0.05; done
check "get -w: ADDED, then MODIFIED for the label" grep -q MODIFIED "$FAKE_STATE/watch"
kill "$WPID" 2>/dev/null
wait "$WPID" 2>/dev/null

run "${K[@]}" auth can-i create pods/exec
check "auth can-i (protobuf SSAR): yes" test "$RC:$(cat "$OUT")" = "0:yes"
ctl POST /rules '{"rules":[{"verb":"delete","resource":"persistentvolumeclaims","allowed":false}]}' >/dev/null
run "${K[@]}" auth can-i delete persistentvolumeclaims
check "auth can-i: a denied rule is no, rc 1" test "$RC:$(cat "$OUT")" = "1:no"
run "${K[@]}" delete pvc "$PVC"
check "the rule is enforced: 403 Forbidden with the RBAC text" \
        has "Error from server (Forbidden): persistentvolumeclaims \"$PVC\" is forbidden: User \"fake-user\" cannot delete resource \"persistentvolumeclaims\" in API group \"\" in the namespace \"default\"" "$ERR"
ctl POST /rules '{"rules":[]}' >/dev/null

run "${K[@]}" delete pod "$POD" --wait --timeout=15s
check "delete --wait returns once the Pod is gone" has "pod \"$POD\" deleted" "$OUT"
run "${K[@]}" get pod "$POD"
check "then get is the NotFound Status" has "Error from server (NotFound): pods \"$POD\" not found" "$ERR"
run "${K[@]}" apply --validate=false -f "$M/pod.yaml"
run "${K[@]}" wait --for=condition=Ready "pod/$POD" --timeout=15s
run "${K[@]}" exec "$POD" -- sh -c 'cat /workspace/kept.txt; ls /tmp'
check "the PVC's files outlive the Pod, the emptyDir's do not" \
        test "$(cat "$OUT")" = "$(printf 'line one\nline two')"

# a dropped exec stream kills the command's whole process tree
ctl POST /exec/drop '{"count":1,"afterMs":400}' >/dev/null
run "${K[@]}" exec "$POD" -- sh -c 'sleep 60 & sleep 61'
check "a dropped exec stream is an error for kubectl" test "$RC" != 0
left=1
for _ in $(seq 40); do
        left=0
        for p in /proc/[0-9]*; do
                case $(readlink "$p/root" 2>/dev/null) in "$FAKE_STATE"/*) left=$((left + 1)) ;; esac
        done
        [ "$left" = 0 ] && break
        sleep 0.05
done
check "no process is left in the Pod's sandbox after the drop ($left)" test "$left" = 0

run "${K[@]}" create --validate=false -f "$M/pvc.yaml"
check "create of an existing PVC is AlreadyExists" \
        has "Error from server (AlreadyExists): error when creating \"$M/pvc.yaml\": persistentvolumeclaims \"$PVC\" already exists" "$ERR"
run "${K[@]}" apply --validate=false -f "$M/bad-label.yaml"
check "a bad label value is 422 Invalid" has 'Pod "bad" is invalid: metadata.labels: Invalid value: "not a valid value!"' "$ERR"

run "${K[@]}" delete -f "$M/pod.yaml" -f "$M/pvc.yaml" --wait --timeout=15s
check "delete -f of both waits for both (PVC protection until the Pod is gone)" \
        has "persistentvolumeclaim \"$PVC\" deleted" "$OUT"
run "${K[@]}" get pvc,pods -o name
check "nothing is left" test ! -s "$OUT"
unknown=$(jget "$(ctl GET /log)" '[(e["path"], e["unknownFields"]) for e in j["entries"] if e.get("unknownFields") and "/bad" not in e["path"]]')
check "every object kubectl sent has only fields the fake's schema knows ($unknown)" test "$unknown" = "[]"
done_testing
