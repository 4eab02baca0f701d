#!/usr/bin/env bash
# The kubernetes provider end to end through the CLI against the fake API server (TAP; run
# by with-fake.sh): `b4box conformance`, `b4box check` and its preflight buckets, commands,
# deny mode's objects, the failure table (a named error fast, the startup timeout). The
# light b4box hands every command over to b4box-full (src/cli/handover.c).
set -uo pipefail
b4box=$(realpath "$1")
py=/usr/bin/python3
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
cd "$dir" || exit 1
n=0
failed=0
check() {
        n=$((n + 1))
        if eval "$2"; then echo "ok $n - $1"; else echo "not ok $n - $1"; failed=$((failed + 1)); return 1; fi
}
ctl() { # ctl METHOD PATH [JSON]: the fake's control API
        curl -sS --cacert "$KUBE_FAKE_STATE/ca.crt" -X "$1" -H "Authorization: Bearer $KUBE_FAKE_ADMIN" \
                -H 'Content-Type: application/json' ${3:+--data "$3"} "$KUBE_FAKE_URL$2"
}
api() { # api PATH: a GET as the kubeconfig's user
        curl -sS --cacert "$KUBE_FAKE_STATE/ca.crt" \
                -H "Authorization: Bearer $(awk 'NR == 1 { print $1 }' "$KUBE_FAKE_STATE/token")" \
                "$KUBE_FAKE_URL$1"
}
counter() { ctl GET /_fake/counters | "$py" -c 'import json,sys; print(json.load(sys.stdin)[sys.argv[1]])' "$1"; }
ms() { date +%s%3N; }
config() { # config FILE [PROVIDER MEMBERS] [SANDBOX MEMBERS]
        printf '{"sandbox": {"provider": {"type": "kubernetes", "scope": "kubeprov", "image": "%s", "kubeconfig": "%s", "namespace": "%s"%s}%s}}\n' \
                "$B4BOX_TEST_KUBE_IMAGE" "$B4BOX_TEST_KUBE_CONFIG" "$B4BOX_TEST_KUBE_NAMESPACE" "${2:-}" "${3:-}" >"$1"
}
config b4box.json

out=$("$b4box" conformance -c b4box.json 2>"$dir/err"); rc=$?
check "conformance: every case passes, the readers' too" \
        '[ $rc -eq 0 ] && [ "$(printf "%s\n" "$out" | tail -n1)" = "12 passed, 0 failed" ]' ||
        printf '%s\n' "$out" "$(cat "$dir/err")" | sed 's/^/# /'

out=$("$b4box" check -c b4box.json 2>&1); rc=$?
check "check: reachable, every permission granted" \
        '[ $rc -eq 0 ] && grep -q "Kubernetes reachable; required permissions granted in \"b4-sandboxes\"." <<<"$out"'
check "check: NetworkPolicy enforcement is reported unconfirmed" \
        'grep -q "NetworkPolicy enforcement could not be confirmed in namespace \"b4-sandboxes\"" <<<"$out"'
check "check: pidsLimit NOT ENFORCED without a user namespace" \
        'grep -Eq "^pids limit +NOT ENFORCED .*hostUsers: false" <<<"$out"'
check "check: the agent is how operations run" \
        'grep -Eq "^operations +n/a +through b4box-agent: b4box-agent .*copied into each Pod" <<<"$out"'

out=$("$b4box" exec -c b4box.json --thread cli-1 -- sh -c 'echo out; echo err >&2; id -u; exit 3' 2>"$dir/err"); rc=$?
check "exec: output, exit code 3, uid 1000" \
        '[ $rc -eq 3 ] && [ "$out" = "$(printf "out\n1000")" ] && grep -q "^err$" "$dir/err"'

# deny mode: the Pod has no cluster DNS, the policy denies ingress and egress (read while a
# command runs: the CLI releases the thread, so the Pod goes, when it ends)
config deny.json "" ', "network": {"mode": "deny", "allowlist": ["203.0.113.0/24"]}'
"$b4box" exec -c deny.json --thread cli-deny -- sleep 3 >/dev/null 2>"$dir/err" &
bg=$!
pods='{"items": []}'
for _ in $(seq 100); do
        pods=$(api "/api/v1/namespaces/b4-sandboxes/pods")
        grep -Eq '"dnsPolicy": ?"None"' <<<"$pods" && break
        sleep 0.05
done
pols=$(api "/apis/networking.k8s.io/v1/namespaces/b4-sandboxes/networkpolicies")
wait $bg; rc=$?
cat >"$dir/deny.py" <<'PY'
import json, sys
pols = json.loads(sys.argv[2])["items"]
ids = {p["spec"]["podSelector"]["matchLabels"]["b4.run/thread"] for p in pols}
pods = [p for p in json.loads(sys.argv[1])["items"]
        if p["metadata"]["labels"].get("b4.run/thread") in ids]
assert pods and all(p["spec"]["dnsPolicy"] == "None" for p in pods), pods
assert all(p["spec"]["dnsConfig"]["nameservers"] == ["127.0.0.1"] for p in pods)
assert all(p["spec"]["automountServiceAccountToken"] is False for p in pods)
assert pols and all(p["spec"]["policyTypes"] == ["Ingress", "Egress"] for p in pols)
assert all(p["spec"].get("ingress", []) == [] for p in pols)
assert all("53" not in json.dumps(p["spec"]["egress"]) for p in pols)
assert any("203.0.113.0/24" in json.dumps(p["spec"]["egress"]) for p in pols)
PY
check "deny mode: dnsPolicy None, the policy denies ingress, egress has no DNS rule" \
        '[ $rc -eq 0 ] && "$py" "$dir/deny.py" "$pods" "$pols"'

# the failure table: an image that cannot be pulled is a named error, fast
ctl POST /_fake/pods '{"failures": [{"image": "^bad/", "reason": "ErrImagePull", "message": "pull access denied for bad/img"}]}' >/dev/null
printf '{"sandbox": {"provider": {"type": "kubernetes", "scope": "kubeprov", "image": "bad/img:1", "kubeconfig": "%s", "namespace": "b4-sandboxes", "startupTimeoutMs": 30000}}}\n' \
        "$B4BOX_TEST_KUBE_CONFIG" >bad.json
t0=$(ms)
"$b4box" exec -c bad.json --thread cli-bad -- true >/dev/null 2>"$dir/err"; rc=$?
t1=$(ms)
check "ErrImagePull: a named error within 5 s, not the 30 s timeout" \
        '[ $rc -ne 0 ] && grep -q "pod \"b4-sbx-[0-9a-f]*\" ErrImagePull: pull access denied for bad/img" "$dir/err" && [ $((t1 - t0)) -lt 5000 ]' ||
        sed 's/^/# /' "$dir/err"
ctl POST /_fake/pods '{"failures": []}' >/dev/null

# a Pod that does not start in time: the startup timeout
ctl POST /_fake/pods '{"startDelayMs": 4000}' >/dev/null
config slow.json ', "startupTimeoutMs": 1000'
t0=$(ms)
"$b4box" exec -c slow.json --thread cli-slow -- true >/dev/null 2>"$dir/err"; rc=$?
t1=$(ms)
check "startupTimeoutMs: not Running within 1000ms, in under 3 s" \
        '[ $rc -ne 0 ] && grep -q "not Running within 1000ms" "$dir/err" && [ $((t1 - t0)) -lt 3000 ]' ||
        sed 's/^/# /' "$dir/err"
ctl POST /_fake/pods '{"startDelayMs": 80}' >/dev/null

# preflight buckets: a denial, a failed review (evaluationError), an API failure (500);
# every review still runs
ctl POST /_fake/rules '{"rules": [
  {"verb": "delete", "resource": "persistentvolumeclaims", "allowed": false},
  {"verb": "get", "resource": "pods", "subresource": "exec", "allowed": false, "evaluationError": "webhook down"},
  {"verb": "update", "resource": "networkpolicies", "reviewCode": 500}], "enforce": false}' >/dev/null
ctl POST /_fake/counters/reset >/dev/null
out=$("$b4box" check -c b4box.json 2>&1); rc=$?
reviews=$(counter reviews)
check "check: denials, failed reviews and API failures in separate buckets" \
        '[ $rc -ne 0 ] && grep -q "Missing Kubernetes permissions in namespace \"b4-sandboxes\": delete core/persistentvolumeclaims" <<<"$out" &&
         grep -q "Kubernetes authorization review failed in namespace \"b4-sandboxes\": get core/pods/exec (evaluationError: webhook down), update networking.k8s.io/networkpolicies (" <<<"$out" &&
         ! grep -q "not reachable" <<<"$out"' || printf '%s\n' "$out" | sed 's/^/# /'
check "check: all 14 reviews ran although some failed" '[ "$reviews" = 14 ]'
ctl POST /_fake/rules '{"rules": [], "enforce": false}' >/dev/null

# transport failures: nothing listens
printf '{"sandbox": {"provider": {"type": "kubernetes", "scope": "kubeprov", "image": "i", "apiServer": "https://127.0.0.1:9", "caFile": "%s", "tokenFile": "%s/token"}}}\n' \
        "$KUBE_FAKE_STATE/ca.crt" "$KUBE_FAKE_STATE" >down.json
out=$("$b4box" check -c down.json 2>&1); rc=$?
check "check: an unreachable API server is the transport bucket, every review listed" \
        '[ $rc -ne 0 ] && grep -q "Kubernetes API not reachable while reviewing permissions in namespace \"b4-sandboxes\": create core/persistentvolumeclaims" <<<"$out" &&
         [ "$(grep -o "core/\|networking.k8s.io/" <<<"$out" | wc -l)" -ge 14 ] && ! grep -q "Missing Kubernetes" <<<"$out"' ||
        printf '%s\n' "$out" | sed 's/^/# /'

# a managed workspace (sandbox.workspace): materialised into the PVC through the agent
mkdir -p "$dir/src" && echo "from the source" >"$dir/src/README.txt"
config managed.json "" ', "workspace": {"source": {"directory": "src", "include": ["README.txt"]}}'
out=$("$b4box" exec -c managed.json --thread cli-managed -- cat /workspace/README.txt 2>"$dir/err"); rc=$?
check "a managed workspace is materialised in the Pod's /workspace" \
        '[ $rc -eq 0 ] && [ "$out" = "from the source" ]' || sed 's/^/# /' "$dir/err"

# b4box kube reap: mark an unreferenced PVC, clear a referenced one's marker, delete one
# marked longer than the TTL; --dry-run writes nothing
pvc_of() { "$py" -c 'import hashlib, json, sys
print("b4-sbx-vol-" + hashlib.sha256(json.dumps(["b4-sandbox-scope-v1", sys.argv[1], sys.argv[2]],
      separators=(",", ":"), ensure_ascii=False).encode()).hexdigest()[:40])' kubeprov "$1"; }
annot() { # annot PVC: its marker, or "none"
        api "/api/v1/namespaces/b4-sandboxes/persistentvolumeclaims/$1" | "$py" -c 'import json, sys
o = json.load(sys.stdin)
print("gone" if o.get("kind") == "Status" or o["metadata"].get("deletionTimestamp") else
      (o["metadata"].get("annotations") or {}).get("b4box.io/unreferenced-since", "none"))'
}
mark_old() { # mark_old PVC: a marker from 2020
        curl -sS -o /dev/null --cacert "$KUBE_FAKE_STATE/ca.crt" -X PATCH \
                -H "Authorization: Bearer $(awk 'NR == 1 { print $1 }' "$KUBE_FAKE_STATE/token")" \
                -H 'Content-Type: application/merge-patch+json' \
                --data '{"metadata": {"annotations": {"b4box.io/unreferenced-since": "2020-01-01T00:00:00Z"}}}' \
                "$KUBE_FAKE_URL/api/v1/namespaces/b4-sandboxes/persistentvolumeclaims/$1"
}
live=$(pvc_of reap-live) gone=$(pvc_of reap-gone)
"$b4box" exec -c b4box.json --thread reap-live -- true >/dev/null 2>&1
"$b4box" exec -c b4box.json --thread reap-gone -- true >/dev/null 2>&1
"$b4box" release -c b4box.json reap-gone >/dev/null 2>&1
for _ in $(seq 60); do # the fake's terminating time
        api "/api/v1/namespaces/b4-sandboxes/pods" | grep -q "$(sed 's/-vol//' <<<"$gone")" || break
        sleep 0.05
done
out=$("$b4box" kube reap -c b4box.json --dry-run 2>&1); rc=$?
check "kube reap --dry-run: would mark the unreferenced PVC, writes nothing" \
        '[ $rc -eq 0 ] && grep -qx "would mark $gone" <<<"$out" && ! grep -q "$live" <<<"$out" && [ "$(annot "$gone")" = none ]' ||
        printf '%s\n' "$out" | sed 's/^/# /'
out=$("$b4box" kube reap -c b4box.json 2>&1); rc=$?
check "kube reap: marks the unreferenced PVC with this run's time, leaves the referenced one" \
        '[ $rc -eq 0 ] && grep -qx "mark $gone" <<<"$out" && grep -Eq "^20[0-9-]+T[0-9:]+Z$" <<<"$(annot "$gone")" && [ "$(annot "$live")" = none ]' ||
        printf '%s\n' "$out" | sed 's/^/# /'
mark_old "$gone"
mark_old "$live"
out=$("$b4box" kube reap -c b4box.json --ttl-hours 1 2>&1); rc=$?
check "kube reap: deletes the PVC marked past the TTL, clears the referenced one's marker" \
        '[ $rc -eq 0 ] && grep -qx "delete $gone" <<<"$out" && grep -qx "clear $live" <<<"$out" && [ "$(annot "$gone")" = gone ] && [ "$(annot "$live")" = none ] &&
         grep -q "1 cleared, 1 deleted" <<<"$out"' || printf '%s\n' "$out" | sed 's/^/# /'
"$b4box" kube reap -c b4box.json --ttl-hours 0 >/dev/null 2>"$dir/err"; rc=$?
check "kube reap: --ttl-hours 0 is a usage error" '[ $rc -eq 2 ] && grep -q "from 1 to 87600" "$dir/err"'

# hostUsers false: the Pod gets its own user namespace, pidsLimit is enforced and says so
config userns.json ', "hostUsers": false' ', "security": {"pidsLimit": 16}'
out=$("$b4box" check -c userns.json 2>&1)
check "hostUsers false: check reports the pids limit enforced" \
        'grep -Eq "^pids limit +enforced +16 processes \(RLIMIT_NPROC .*hostUsers: false" <<<"$out"' ||
        printf '%s\n' "$out" | grep pids | sed 's/^/# /'
out=$("$b4box" exec -c userns.json --thread cli-userns -- sh -c 'for i in $(seq 40); do sleep 2 & done; wait; echo started' 2>"$dir/err"); rc=$?
pod=$(api "/api/v1/namespaces/b4-sandboxes/pods/$(pvc_of cli-userns | sed 's/-vol//')")
check "hostUsers false: the Pod says hostUsers false, 40 processes do not fit in 16" \
        '"$py" -c "import json, sys; assert json.loads(sys.argv[1])[\"spec\"][\"hostUsers\"] is False" "$pod" &&
         [ $rc -ne 0 ] && [ -z "$out" ] && grep -Eqi "fork|resource temporarily unavailable" "$dir/err"' ||
        { echo "# rc=$rc out=$out"; sed 's/^/# /' "$dir/err" | head -5; }
out=$("$b4box" exec -c b4box.json --thread cli-nouserns -- sh -c 'for i in $(seq 40); do sleep 1 & done; wait; echo started' 2>"$dir/err"); rc=$?
check "without hostUsers false no process limit is set (nothing it could count)" \
        '[ $rc -eq 0 ] && [ "$out" = started ]' || sed 's/^/# /' "$dir/err" | head -3

echo "1..$n"
[ "$failed" -eq 0 ]
