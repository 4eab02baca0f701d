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
                "${IMAGE:-$B4BOX_TEST_KUBE_IMAGE}" "$B4BOX_TEST_KUBE_CONFIG" "$B4BOX_TEST_KUBE_NAMESPACE" "${2:-}" "${3:-}" >"$1"
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

# preflight buckets: a denial, a failed review (evaluationError), an API failure (500) twice
# (named together, their error once); every review still runs
ctl POST /_fake/rules '{"rules": [
  {"verb": "delete", "resource": "persistentvolumeclaims", "allowed": false},
  {"verb": "get", "resource": "pods", "subresource": "exec", "allowed": false, "evaluationError": "webhook down"},
  {"verb": "list", "resource": "networkpolicies", "reviewCode": 500},
  {"verb": "update", "resource": "networkpolicies", "reviewCode": 500}], "enforce": false}' >/dev/null
ctl POST /_fake/counters/reset >/dev/null
out=$("$b4box" check -c b4box.json 2>&1); rc=$?
reviews=$(counter reviews)
check "check: denials, failed reviews and API failures in separate buckets" \
        '[ $rc -ne 0 ] && grep -q "Missing Kubernetes permissions in namespace \"b4-sandboxes\": delete core/persistentvolumeclaims" <<<"$out" &&
         grep -q "Kubernetes authorization review failed in namespace \"b4-sandboxes\": get core/pods/exec (evaluationError: webhook down), list networking.k8s.io/networkpolicies, update networking.k8s.io/networkpolicies (POST [^ ]*selfsubjectaccessreviews: Internal error occurred: injected review failure (500 InternalError))" <<<"$out" &&
         [ "$(grep -o "injected review failure" <<<"$out" | wc -l)" = 1 ] &&
         ! grep -q "not reachable" <<<"$out"' || printf '%s\n' "$out" | sed 's/^/# /'
check "check: all 15 reviews ran although some failed" '[ "$reviews" = 15 ]'
ctl POST /_fake/rules '{"rules": [], "enforce": false}' >/dev/null

# an optional permission denied (list pods: the shared informer of b4box serve) is a warning
# saying the provider falls back, not a failure
ctl POST /_fake/rules '{"rules": [{"verb": "list", "resource": "pods", "allowed": false}], "enforce": false}' >/dev/null
out=$("$b4box" check -c b4box.json 2>&1); rc=$?
check "check: list pods denied is a warning (the per-acquire watch), not a failure" \
        '[ $rc -eq 0 ] && grep -q "Optional Kubernetes permission list core/pods missing: b4box serve has no shared Pod informer: each acquire watches its Pod" <<<"$out" &&
         ! grep -q "Missing Kubernetes" <<<"$out"' || printf '%s\n' "$out" | sed 's/^/# /'
ctl POST /_fake/rules '{"rules": [], "enforce": false}' >/dev/null

# transport failures: nothing listens
printf '{"sandbox": {"provider": {"type": "kubernetes", "scope": "kubeprov", "image": "i", "apiServer": "https://127.0.0.1:9", "caFile": "%s", "tokenFile": "%s/token"}}}\n' \
        "$KUBE_FAKE_STATE/ca.crt" "$KUBE_FAKE_STATE" >down.json
out=$("$b4box" check -c down.json 2>&1); rc=$?
check "check: an unreachable API server is the transport bucket, its error once for all 15 reviews" \
        '[ $rc -ne 0 ] && grep -q "Kubernetes API not reachable while reviewing permissions in namespace \"b4-sandboxes\" for all 15 reviews: POST [^ ]*selfsubjectaccessreviews: cannot connect to https://127.0.0.1:9: " <<<"$out" &&
         [ "$(grep -o "cannot connect" <<<"$out" | wc -l)" = 1 ] && ! grep -q "Missing Kubernetes\|review failed" <<<"$out"' ||
        printf '%s\n' "$out" | sed 's/^/# /'

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

# managed workspaces (sandbox.workspace): materialised into the PVC through the agent, the
# record on the PVC (b4box.io/workspace-record), the image pinned by digest
mkdir -p "$dir/src" && echo "from the source" >"$dir/src/README.txt"
ws=', "workspace": {"source": {"directory": "src", "include": ["README.txt"]}}'
pinned="debian@sha256:$(printf debian-12 | sha256sum | cut -c1-64)"
status_of() { api "$1" | "$py" -c 'import json, sys; o = json.load(sys.stdin); print(o.get("code", 200) if o.get("kind") == "Status" else 200)'; }
pvc_url() { echo "/api/v1/namespaces/b4-sandboxes/persistentvolumeclaims/$(pvc_of "$1")"; }
record() { # record THREAD: the PVC's workspace record, or "none"
        api "$(pvc_url "$1")" | "$py" -c 'import json, sys
o = json.load(sys.stdin)
print((o.get("metadata", {}).get("annotations") or {}).get("b4box.io/workspace-record", "none"))'
}
patch_pvc() { # patch_pvc THREAD JSON: a merge patch as the kubeconfig's user
        curl -sS -o /dev/null --cacert "$KUBE_FAKE_STATE/ca.crt" -X PATCH \
                -H "Authorization: Bearer $(awk 'NR == 1 { print $1 }' "$KUBE_FAKE_STATE/token")" \
                -H 'Content-Type: application/merge-patch+json' --data "$2" "$KUBE_FAKE_URL$(pvc_url "$1")"
}
gone() { # gone URL: wait until the object is gone (the fake's terminating time)
        for _ in $(seq 100); do [ "$(status_of "$1")" = 404 ] && return 0; sleep 0.05; done
        return 1
}
pod_url() { echo "/api/v1/namespaces/b4-sandboxes/pods/$(pvc_of "$1" | sed 's/-vol//')"; }
release_managed() { # a managed thread's Pod stays after exec: release it, wait for it to go
        "$b4box" release -c managed.json cli-managed >/dev/null 2>&1 && gone "$(pod_url cli-managed)"
}

config managed-tag.json "" "$ws"
ctl POST /_fake/counters/reset >/dev/null
"$b4box" exec -c managed-tag.json --thread cli-tag -- true >/dev/null 2>"$dir/err"; rc=$?
check "a managed thread with a tag image is refused by name before any object is made" \
        '[ $rc -ne 0 ] && grep -q "Image $B4BOX_TEST_KUBE_IMAGE is not pinned by digest: .*<name>@sha256:<64 hex>.*\[B4_E2005\]" "$dir/err" &&
         [ "$(counter writes)" = 0 ] && [ "$(status_of "$(pvc_url cli-tag)")" = 404 ]' || sed 's/^/# /' "$dir/err"

IMAGE=$pinned config managed.json "" "$ws"
out=$("$b4box" exec -c managed.json --thread cli-managed -- cat /workspace/README.txt 2>"$dir/err"); rc=$?
check "a managed workspace is materialised in the Pod's /workspace" \
        '[ $rc -eq 0 ] && [ "$out" = "from the source" ]' || sed 's/^/# /' "$dir/err"
rec=$(record cli-managed)
check "the PVC carries the workspace record: intent, ready, the source, the pinned image" \
        '"$py" -c "import json, re, sys
r = json.loads(sys.argv[1])
assert re.fullmatch(\"[0-9a-f]{64}\", r[\"intent\"]) and r[\"ready\"] is True, r
assert r[\"image\"] == sys.argv[2] and r[\"sourceDigest\"], r" "$rec" "$pinned"' || echo "# $rec"

# the PVC deleted behind b4box (released thread): made again and materialised again, not an
# empty workspace taken as ready
release_managed
api_delete() { curl -sS -o /dev/null --cacert "$KUBE_FAKE_STATE/ca.crt" -X DELETE \
        -H "Authorization: Bearer $(awk 'NR == 1 { print $1 }' "$KUBE_FAKE_STATE/token")" "$KUBE_FAKE_URL$1"; }
api_delete "$(pvc_url cli-managed)"
gone "$(pvc_url cli-managed)"; rc_gone=$?
out=$("$b4box" exec -c managed.json --thread cli-managed -- cat /workspace/README.txt 2>"$dir/err"); rc=$?
check "a reaped PVC is made again and materialised again, its record back" \
        '[ $rc_gone -eq 0 ] && [ $rc -eq 0 ] && [ "$out" = "from the source" ] && [ "$(record cli-managed)" = "$rec" ]' ||
        { echo "# gone=$rc_gone rc=$rc out=$out record=$(record cli-managed)"; sed 's/^/# /' "$dir/err"; }

# the reaper never deletes a PVC with a record, however old its marker
release_managed
mark_old "$(pvc_of cli-managed)"
"$b4box" kube reap -c b4box.json --ttl-hours 1 >/dev/null 2>&1
check "kube reap leaves a managed workspace's PVC alone" '[ "$(status_of "$(pvc_url cli-managed)")" = 200 ]'

# another workspace's record on the PVC: refused by name, left alone
patch_pvc cli-managed '{"metadata": {"annotations": {"b4box.io/workspace-record": "{\"intent\": \"0000000000000000000000000000000000000000000000000000000000000000\", \"ready\": true}"}}}'
"$b4box" exec -c managed.json --thread cli-managed -- true >/dev/null 2>"$dir/err"; rc=$?
check "another workspace's record on the PVC is refused by name" \
        '[ $rc -ne 0 ] && grep -q "Workspace conflict: persistentvolumeclaim \"$(pvc_of cli-managed)\" of thread" "$dir/err" && grep -q 0000000000000000 <<<"$(record cli-managed)"' ||
        sed 's/^/# /' "$dir/err"

# a PVC with no record that b4box did not just make (a b4box from before records, one made by
# hand): refused by name, neither trusted as the workspace nor wiped
uid_of() { api "$(pvc_url "$1")" | "$py" -c 'import json, sys; print(json.load(sys.stdin)["metadata"]["uid"])'; }
uid=$(uid_of cli-managed)
patch_pvc cli-managed '{"metadata": {"annotations": {"b4box.io/workspace-record": null}}}'
"$b4box" exec -c managed.json --thread cli-managed -- true >/dev/null 2>"$dir/err"; rc=$?
check "a PVC without a record is refused by name and kept" \
        '[ $rc -ne 0 ] && grep -q "the workspace storage of thread cli-managed carries no record of its workspace" "$dir/err" &&
         [ "$(uid_of cli-managed)" = "$uid" ] && [ "$(record cli-managed)" = none ]' || sed 's/^/# /' "$dir/err"

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

# warm pools (src/lib/kube/pool.c): only `b4box serve` fills one; one-shot commands with a
# warmPool configured make no pairs, and still run
config pool.json ', "warmPool": {"size": 2, "owner": "cli-oneshot"}'
pool_pvcs() { api "/api/v1/namespaces/b4-sandboxes/persistentvolumeclaims?labelSelector=b4box.io%2Fpool-owner%3Dcli-oneshot" |
        "$py" -c 'import json,sys; print(len(json.load(sys.stdin)["items"]))'; }
out=$("$b4box" check -c pool.json 2>&1); rc=$?
check "warmPool: check runs and makes no pool pair" '[ $rc -eq 0 ] && [ "$(pool_pvcs)" = 0 ]'
out=$("$b4box" exec -c pool.json --thread cli-pool -- sh -c 'echo pooled' 2>"$dir/err"); rc=$?
check "warmPool: a one-shot exec runs cold and makes no pool pair" \
        '[ $rc -eq 0 ] && [ "$out" = pooled ] && [ "$(pool_pvcs)" = 0 ]' || sed 's/^/# /' "$dir/err" | head -3
out=$("$b4box" check -c "$(config bad-pool.json ', "warmPool": {"size": 65}'; echo bad-pool.json)" 2>&1); rc=$?
check "warmPool: size 65 is refused with the documented text" \
        '[ $rc -ne 0 ] && grep -q "sandbox.provider.warmPool.size must be an integer from 0 to 64 (got: 65)." <<<"$out"' ||
        printf '%s\n' "$out" | head -3 | sed 's/^/# /'

echo "1..$n"
[ "$failed" -eq 0 ]
