#!/usr/bin/python3
"""The fake API server's own tests: what the three real clients do not reach (faults, 410,
bookmarks, dropped watches, token rotation, client certificates, h2 ALPN, failure lifecycles,
counters, protobuf SSAR, v1 exec, exec refusals, the sandbox's walls). A raw HTTPS and
WebSocket client written here for the purpose. Run by with-fake.sh; prints TAP."""
import http.client
import json
import os
import socket
import ssl
import subprocess
import sys
import tempfile
import threading
import time
import urllib.parse

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from fakeclient import (AUTH, CTX, NPS, NS, PODS, PVCS, STATE, URL, Stream, Ws,  # noqa: E402
                        ctl, exec_path, joined, pod, pvc, request, running, sandbox_procs,
                        wait_no_procs, wait_pod)

FAKE_PY = os.environ.get("B4BOX_KUBE_FAKE", os.path.join(
    os.path.dirname(os.path.abspath(__file__)), "..", "fakes", "kube-apiserver.py"))
N = 0
FAILED = 0


def check(name, cond, detail=None):
    global N, FAILED
    N += 1
    print("%s %d - %s" % ("ok" if cond else "not ok", N, name))
    if not cond:
        FAILED += 1
        if detail is not None:
            print("# %r" % (detail,)[:2000])
    sys.stdout.flush()


# ---------------------------------------------------------------------------------------------
# authentication

code, body, _ = request("GET", PODS, token=None)
check("no credentials: 401 with the Unauthorized Status", code == 401 and body == {
    "kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
    "message": "Unauthorized", "reason": "Unauthorized", "code": 401}, body)
code, _, _ = request("GET", PODS, token="wrong")
check("a wrong token: 401", code == 401)
cctx = ssl.create_default_context(cafile=os.environ["FAKE_CA"])
cctx.load_cert_chain(os.path.join(STATE, "client.crt"), os.path.join(STATE, "client.key"))
code, _, _ = request("GET", PODS, token=None, ctx=cctx)
last = ctl("GET", "/log")["entries"][-1]
check("a client certificate authenticates as its CN", code == 200 and
      last["user"] == "fake-cert-user", last)
token_file = os.path.join(STATE, "token")
with open(token_file + ".new", "w") as f:
    f.write("rotated-token-2 fake-user\n")
os.rename(token_file + ".new", token_file)
old, _, _ = request("GET", PODS)
new, _, _ = request("GET", PODS, token="rotated-token-2")
check("token rotation: after the file changes the old token is 401, the new one 200",
      (old, new) == (401, 200), (old, new))
AUTH["token"] = "rotated-token-2"

# one keep-alive connection: an error answered before the body was read must not leave the
# body in the stream, and big or chunked bodies arrive whole
conn = http.client.HTTPSConnection(URL.hostname, URL.port, context=CTX, timeout=20)
conn.request("POST", PVCS, body=json.dumps(pvc("ka")), headers={
    "Authorization": "Bearer wrong", "Content-Type": "application/json"})
first = conn.getresponse()
first.read()
big = pvc("ka")
big["metadata"]["annotations"] = {"b4box.io/blob": "x" * 200000}
conn.request("POST", PVCS, body=json.dumps(big), headers={
    "Authorization": "Bearer " + AUTH["token"], "Content-Type": "application/json"})
second = conn.getresponse()
got = json.loads(second.read())
check("keep-alive: a 401 on a POST, then a 200 kB create on the same connection",
      first.status == 401 and second.status == 201 and
      len(got["metadata"]["annotations"]["b4box.io/blob"]) == 200000, (first.status,
                                                                       second.status))
conn.putrequest("PATCH", PVCS + "/ka")
conn.putheader("Authorization", "Bearer " + AUTH["token"])
conn.putheader("Content-Type", "application/merge-patch+json")
conn.putheader("Transfer-Encoding", "chunked")
conn.endheaders()
payload = json.dumps({"metadata": {"labels": {"chunked": "yes"}}}).encode()
for part in (payload[:10], payload[10:]):
    conn.send(b"%x\r\n%s\r\n" % (len(part), part))
conn.send(b"0\r\n\r\n")
third = conn.getresponse()
got = json.loads(third.read())
check("a chunked request body", third.status == 200 and
      got["metadata"]["labels"] == {"chunked": "yes"}, got)
conn.close()
request("DELETE", PVCS + "/ka")

# ---------------------------------------------------------------------------------------------
# discovery and basic refusals

code, body, _ = request("GET", "/api/v1")
names = {r["name"] for r in body.get("resources", [])}
check("/api/v1 lists pods, pods/exec, persistentvolumeclaims, namespaces",
      {"pods", "pods/exec", "persistentvolumeclaims", "namespaces"} <= names, names)
code, body, _ = request("GET", "/apis")
check("/apis lists networking.k8s.io and authorization.k8s.io",
      {g["name"] for g in body["groups"]} == {"networking.k8s.io", "authorization.k8s.io"})
code, body, _ = request("GET", "/apis/authorization.k8s.io/v1")
check("authorization.k8s.io/v1 has selfsubjectaccessreviews",
      [r["name"] for r in body["resources"]] == ["selfsubjectaccessreviews"])
code, body, _ = request("GET", "/api/v1/namespaces/kube-system")
check("namespaces get: kube-system with its uid and metadata.name label", code == 200 and
      bool(body["metadata"]["uid"]) and
      body["metadata"]["labels"]["kubernetes.io/metadata.name"] == "kube-system")
code, body, _ = request("POST", "/api/v1/namespaces/nowhere/pods", pod("p"))
check("create in a missing namespace: 404 namespaces not found", code == 404 and
      body["message"] == 'namespaces "nowhere" not found', body)
code, body, _ = request("GET", "/api/v1/nodes")
check("an unknown resource: 404", code == 404)
code, body, _ = request("GET", PODS + "?labelSelector=" + urllib.parse.quote("a in (x"))
check("a malformed label selector: 400", code == 400, body)
code, body, _ = request("GET", PODS + "?fieldSelector=spec.foo%3Dx")
check("an unsupported field selector: 400 field label not supported", code == 400 and
      body["message"] == "field label not supported: spec.foo", body)
typo = pod("typo")
typo["spec"]["containers"][0]["securityContext"] = {"readOnlyRootFileSystem": True}
typo["spec"]["restartpolicy"] = "Never"
code, body, _ = request("POST", PODS + "?fieldValidation=Strict", typo)
check("fieldValidation=Strict: unknown fields are 400 strict decoding error", code == 400 and
      body["message"] == 'Pod in version "v1" cannot be handled as a Pod: strict decoding error: '
      'unknown field "spec.containers[0].securityContext.readOnlyRootFileSystem", unknown field '
      '"spec.restartpolicy"', body)
code, body, r = request("POST", PODS, typo)
check("by default (Warn) the create succeeds with one 299 Warning header per field",
      code == 201 and r.headers.get_all("Warning") == [
          '299 - "unknown field \\"spec.containers[0].securityContext.readOnlyRootFileSystem\\""',
          '299 - "unknown field \\"spec.restartpolicy\\""'], r.headers.get_all("Warning"))
last = [e for e in ctl("GET", "/log")["entries"] if e.get("name") is None and
        e.get("verb") == "create"][-1]
check("the request log names the unknown fields", last.get("unknownFields") == [
    "spec.containers[0].securityContext.readOnlyRootFileSystem", "spec.restartpolicy"], last)
code, body, r = request("PATCH", PODS + "/typo?fieldValidation=Strict",
                        {"metadata": {"labelz": {"a": "b"}}},
                        ctype="application/merge-patch+json")
check("a merge patch with an unknown field under Strict: 400", code == 400 and
      'unknown field "metadata.labelz"' in body["message"], body)
request("DELETE", PODS + "/typo?gracePeriodSeconds=0")
code, body, _ = request("POST", PODS, b"{not json")
check("a malformed body: 400 BadRequest", code == 400 and body["reason"] == "BadRequest")

# ---------------------------------------------------------------------------------------------
# counters and faults

ctl("POST", "/counters/reset")
request("POST", PVCS, pvc("c1"))
request("GET", PVCS + "/c1")
request("GET", PVCS)
request("GET", PVCS + "?watch=1&timeoutSeconds=1")
request("PATCH", PVCS + "/c1", {"metadata": {"labels": {"a": "b"}}},
        ctype="application/merge-patch+json")
request("GET", "/api")
c = ctl("POST", "/counters/reset")
check("counters split by class: 2 writes, 2 reads, 1 watch, 1 discovery", (
    c["writes"], c["reads"], c["watches"], c["discovery"], c["byVerb"].get("patch "
    "persistentvolumeclaims")) == (2, 2, 1, 1, 1), c)
check("reset zeroes them", ctl("GET", "/counters")["writes"] == 0)

ctl("POST", "/faults", {"code": 429, "retryAfter": 2, "count": 2, "verb": "list",
                        "resource": "persistentvolumeclaims"})
r1 = request("GET", PVCS)
r2 = request("GET", PVCS)
r3 = request("GET", PVCS)
check("429 twice with Retry-After and the TooManyRequests Status, then 200",
      (r1[0], r2[0], r3[0]) == (429, 429, 200) and r1[2].getheader("Retry-After") == "2" and
      r1[1]["reason"] == "TooManyRequests" and r1[1]["details"] == {"retryAfterSeconds": 2},
      (r1[0], r2[0], r3[0], r1[1]))
check("a fault touches only its verb and resource", request("GET", PVCS + "/c1")[0] == 200)
ctl("POST", "/faults", {"code": 500, "verb": "create"})
code, body, _ = request("POST", PVCS, pvc("c2"))
check("500 InternalError Status", code == 500 and body["reason"] == "InternalError")
check("the faulted create stored nothing", request("GET", PVCS + "/c2")[0] == 404)
ctl("POST", "/faults", {"drop": True, "verb": "get"})
try:
    request("GET", PVCS + "/c1")
    dropped = False
except (http.client.HTTPException, ConnectionError, ssl.SSLError, OSError):
    dropped = True
check("drop: the connection closes without an answer", dropped)
ctl("POST", "/faults", {"delayMs": 300, "verb": "get"})
t0 = time.time()
code, _, _ = request("GET", PVCS + "/c1")
check("delayMs: a slow answer", code == 200 and time.time() - t0 >= 0.3)

# ---------------------------------------------------------------------------------------------
# object semantics

code, body, _ = request("GET", PVCS + "/c1")
rv = body["metadata"]["resourceVersion"]
code, same, _ = request("PUT", PVCS + "/c1", body)
check("an update that changes nothing keeps the resourceVersion",
      code == 200 and same["metadata"]["resourceVersion"] == rv, same)
del body["metadata"]["resourceVersion"]
code, b2, _ = request("PUT", PVCS + "/c1", body)
check("PUT without resourceVersion: 422 must be specified for an update",
      code == 422 and "must be specified for an update" in b2["message"], b2)
code, b3, _ = request("PATCH", PVCS + "/c1", [
    {"op": "test", "path": "/metadata/labels/a", "value": "b"},
    {"op": "replace", "path": "/metadata/labels/a", "value": "c"}],
    ctype="application/json-patch+json")
check("a JSON patch whose test holds applies", code == 200 and
      b3["metadata"]["labels"]["a"] == "c", b3)
code, b4, _ = request("PATCH", PVCS + "/c1", {"spec": {"accessModes": ["ReadWriteMany"]}},
                      ctype="application/merge-patch+json")
check("PVC spec is immutable: 422", code == 422 and "spec is immutable" in b4["message"], b4)
code, b5, _ = request("PATCH", PVCS + "/c1", {"metadata": {"labels": {"a": "d"}}},
                      ctype="application/apply-patch+yaml")
check("server-side apply: 415", code == 415)
code, b6, _ = request("DELETE", PVCS + "/c1", {"preconditions": {"uid": "not-the-uid"}})
check("delete with a wrong uid precondition: 409 Conflict", code == 409 and
      b6["reason"] == "Conflict", b6)

for i in range(3):
    request("POST", NPS, {"metadata": {"name": "np-%d" % i, "labels": {"set": "x"}},
                          "spec": {"podSelector": {}}})
code, page1, _ = request("GET", NPS + "?limit=2")
cont = page1["metadata"].get("continue")
code, page2, _ = request("GET", NPS + "?limit=2&continue=" + urllib.parse.quote(cont or ""))
code, all3, _ = request("GET", NPS + "?limit=2&resourceVersion=0")
check("limit is ignored with resourceVersion=0 (served from the watch cache)",
      len(all3["items"]) == 3 and "continue" not in all3["metadata"], all3["metadata"])
check("limit/continue: 2 + 1 items, remainingItemCount 1",
      [o["metadata"]["name"] for o in page1["items"]] == ["np-0", "np-1"] and
      page1["metadata"].get("remainingItemCount") == 1 and
      [o["metadata"]["name"] for o in page2["items"]] == ["np-2"], (page1["metadata"], page2))
check("list items carry no kind/apiVersion, the list does", page1["kind"] == "NetworkPolicyList"
      and "kind" not in page1["items"][0])
check("NetworkPolicy defaults: policyTypes [Ingress]",
      page1["items"][0]["spec"]["policyTypes"] == ["Ingress"])
code, coll, _ = request("DELETE", NPS + "?labelSelector=set%3Dx")
check("deletecollection by label answers the list and deletes all", code == 200 and
      len(coll["items"]) == 3 and request("GET", NPS)[1]["items"] == [], coll)

code, owner, _ = request("GET", PVCS + "/c1")
request("POST", NPS, {"metadata": {"name": "owned", "ownerReferences": [
    {"apiVersion": "v1", "kind": "PersistentVolumeClaim", "name": "c1",
     "uid": owner["metadata"]["uid"]}]}, "spec": {"podSelector": {}}})
code, d, _ = request("DELETE", PVCS + "/c1?propagationPolicy=Orphan")
time.sleep(0.2)
check("propagationPolicy=Orphan: the owned NetworkPolicy stays",
      request("GET", PVCS + "/c1")[0] == 404 and request("GET", NPS + "/owned")[0] == 200)
request("DELETE", NPS + "/owned")

# the pool adoption race: many replicas patch one object with the same resourceVersion
request("POST", PVCS, pvc("race", {"b4box.io/pool": "p1"}))
rv0 = request("GET", PVCS + "/race")[1]["metadata"]["resourceVersion"]
codes = []


def adopt(i):
    c, _, _ = request("PATCH", PVCS + "/race", {"metadata": {
        "resourceVersion": rv0, "labels": {"b4box.io/pool": None, "b4.run/thread": "t%d" % i}}},
        ctype="application/merge-patch+json")
    codes.append(c)


racers = [threading.Thread(target=adopt, args=(i,)) for i in range(12)]
for t in racers:
    t.start()
for t in racers:
    t.join()
won = request("GET", PVCS + "/race")[1]["metadata"]["labels"]
check("12 concurrent adoptions at one resourceVersion: exactly one 200, eleven 409",
      sorted(codes) == [200] + [409] * 11 and "b4box.io/pool" not in won, (codes, won))
request("DELETE", PVCS + "/race")

# ---------------------------------------------------------------------------------------------
# SSAR: protobuf as kubectl sends it, rule buckets


def pb_str(field, s):
    b = s.encode() if isinstance(s, str) else s
    return bytes([field << 3 | 2, len(b)]) + b


attrs = pb_str(1, NS) + pb_str(2, "create") + pb_str(3, "") + pb_str(5, "pods") + \
    pb_str(6, "exec")
ssar_raw = pb_str(2, pb_str(1, attrs))
envelope = b"k8s\x00" + pb_str(1, pb_str(1, "authorization.k8s.io/v1") +
                               pb_str(2, "SelfSubjectAccessReview")) + pb_str(2, ssar_raw)
ctl("POST", "/rules", {"rules": [
    {"verb": "create", "resource": "pods", "subresource": "exec", "allowed": False},
    {"verb": "list", "resource": "pods", "reviewCode": 500},
    {"verb": "watch", "resource": "pods", "allowed": False, "evaluationError": "webhook down"}]})
SSAR = "/apis/authorization.k8s.io/v1/selfsubjectaccessreviews"
code, body, _ = request("POST", SSAR, envelope, ctype="application/vnd.kubernetes.protobuf")
check("a protobuf SSAR decodes; the denied rule answers allowed false (JSON)", code == 201 and
      body["status"] == {"allowed": False} and
      body["spec"]["resourceAttributes"]["subresource"] == "exec", body)


def review(verb, resource="pods"):
    return request("POST", SSAR, {"apiVersion": "authorization.k8s.io/v1",
                                  "kind": "SelfSubjectAccessReview", "spec": {
                                      "resourceAttributes": {"namespace": NS, "verb": verb,
                                                             "resource": resource}}})


check("reviewCode 500: the review itself fails", review("list")[0] == 500)
code, body, _ = review("watch")
check("evaluationError is passed through", body["status"].get("evaluationError") ==
      "webhook down", body)
check("no rule: allowed", review("get")[1]["status"]["allowed"] is True)
code, body, _ = request("GET", PODS + "?watch=1&timeoutSeconds=1")
check("the table is enforced on real requests: watch 403", code == 403 and
      'cannot watch resource "pods"' in body["message"], body)
ctl("POST", "/rules", {"rules": []})

# ---------------------------------------------------------------------------------------------
# watch

ctl("POST", "/rules", {"bookmarkInterval": 0.2})
code, lst, _ = request("GET", PODS)
w = Stream(PODS + "?watch=1&allowWatchBookmarks=true&labelSelector=w%3D1&resourceVersion=" +
           lst["metadata"]["resourceVersion"])
request("POST", PODS, pod("wp", labels={"w": "0"}))
request("PATCH", PODS + "/wp", {"metadata": {"labels": {"w": "1"}}},
        ctype="application/merge-patch+json")
request("PATCH", PODS + "/wp", {"metadata": {"labels": {"w": "2"}}},
        ctype="application/merge-patch+json")
evs, how = w.events(lambda e: sum(1 for x in e if x["type"] == "BOOKMARK") >= 1 and
                    any(x["type"] == "DELETED" for x in e))
types = [e["type"] for e in evs if e["type"] != "BOOKMARK"]
check("a selector watch: ADDED when the label starts matching, DELETED when it stops",
      types[0] == "ADDED" and types[-1] == "DELETED" and "ADDED" not in types[1:],
      [e["type"] for e in evs])
bm = [e for e in evs if e["type"] == "BOOKMARK"]
check("BOOKMARK events carry only a resourceVersion", bm and
      set(bm[0]["object"]["metadata"]) == {"resourceVersion"} and
      bm[0]["object"]["kind"] == "Pod", bm[:1])
w.close()
ctl("POST", "/rules", {"bookmarkInterval": 1.0})
t0 = time.time()
w = Stream(PODS + "?watch=1&timeoutSeconds=1")
evs, how = w.events(seconds=5)
check("timeoutSeconds ends the stream cleanly after the initial ADDED", how == "end" and
      [e["type"] for e in evs] == ["ADDED"] and 0.9 <= time.time() - t0 < 3, (how, evs))
w.close()
w = Stream(PODS + "?watch=1&sendInitialEvents=true&allowWatchBookmarks=true"
           "&resourceVersionMatch=NotOlderThan&timeoutSeconds=2")
evs, how = w.events(lambda e: any(x["type"] == "BOOKMARK" for x in e))
check("sendInitialEvents: ADDED then the initial-events-end bookmark", evs and
      evs[-1]["type"] == "BOOKMARK" and evs[-1]["object"]["metadata"]["annotations"] ==
      {"k8s.io/initial-events-end": "true"}, evs)
w.close()
w = Stream(PODS + "?watch=1&resourceVersion=" + lst["metadata"]["resourceVersion"])
ctl("POST", "/watch/drop", {"count": 1})
evs, how = w.events(seconds=3)
check("a dropped watch is cut mid-stream (no final chunk)", how == "cut", (how, evs))
w.close()
old_rv = lst["metadata"]["resourceVersion"]
ctl("POST", "/compact")
w = Stream(PODS + "?watch=1&resourceVersion=" + old_rv)
evs, how = w.events(seconds=3)
check("a compacted resourceVersion: one ERROR event, 410 Expired, then the end",
      how == "end" and len(evs) == 1 and evs[0]["type"] == "ERROR" and
      evs[0]["object"]["code"] == 410 and evs[0]["object"]["reason"] == "Expired" and
      evs[0]["object"]["message"].startswith("too old resource version: " + old_rv), evs)
w.close()
request("DELETE", PODS + "/wp?gracePeriodSeconds=0")

# ---------------------------------------------------------------------------------------------
# Pod and PVC lifecycles

request("POST", PODS, pod("needs-pvc", claim="later"))
o = wait_pod("needs-pvc", lambda o: o["status"].get("conditions"))
cond = (o["status"].get("conditions") or [{}])[0]
check("a Pod whose PVC is missing stays Pending, Unschedulable, naming the claim",
      o["status"]["phase"] == "Pending" and cond.get("reason") == "Unschedulable" and
      'persistentvolumeclaim "later" not found' in cond.get("message", ""), o["status"])
request("POST", PVCS, pvc("later"))
o = wait_pod("needs-pvc", running)
check("once the PVC exists (and binds) the Pod runs", running(o), o["status"])
code, evs, _ = request("GET", "/api/v1/namespaces/default/events?fieldSelector=" +
                       urllib.parse.quote("involvedObject.name=needs-pvc"))
reasons = [(e["type"], e["reason"], e["source"]["component"]) for e in evs["items"]]
check("Events: FailedScheduling (Warning, default-scheduler), then Scheduled, Pulling, Started",
      ("Warning", "FailedScheduling", "default-scheduler") in reasons and
      ("Normal", "Scheduled", "default-scheduler") in reasons and
      ("Normal", "Started", "kubelet") in reasons, reasons)
ctl("POST", "/pvcs", {"pending": [{"name": "^stuck$"}]})
request("POST", PVCS, pvc("stuck"))
request("POST", PODS, pod("on-stuck", claim="stuck"))
o = wait_pod("on-stuck", lambda o: o["status"].get("conditions"))
check("a PVC that never binds: pod has unbound immediate PersistentVolumeClaims",
      "unbound immediate PersistentVolumeClaims" in o["status"]["conditions"][0]["message"])
check("and the PVC says Pending", request("GET", PVCS + "/stuck")[1]["status"]["phase"] ==
      "Pending")
ctl("POST", "/pods", {"failures": [
    {"image": "^nosuch/", "reason": "ErrImagePull"},
    {"name": "^crash", "reason": "CrashLoopBackOff", "exitCode": 2},
    {"name": "^nofit", "reason": "Unschedulable"}]})
request("POST", PODS, pod("pull", image="nosuch/image:1"))
o = wait_pod("pull", lambda o: (o["status"].get("containerStatuses") or [{}])[0].get(
    "state", {}).get("waiting", {}).get("reason") == "ErrImagePull")
w1 = o["status"]["containerStatuses"][0]["state"]["waiting"]
o = wait_pod("pull", lambda o: o["status"]["containerStatuses"][0]["state"]["waiting"][
    "reason"] == "ImagePullBackOff", 4)
check("ErrImagePull, then ImagePullBackOff (kubelet's back-off)", w1["reason"] == "ErrImagePull"
      and o["status"]["containerStatuses"][0]["state"]["waiting"]["reason"] ==
      "ImagePullBackOff" and o["status"]["phase"] == "Pending", o["status"])
request("POST", PODS, pod("crash-1"))
o = wait_pod("crash-1", lambda o: (o["status"].get("containerStatuses") or [{}])[0].get(
    "restartCount", 0) >= 2)
cs = o["status"]["containerStatuses"][0]
check("CrashLoopBackOff: restarts grow, lastState.terminated has the exit code",
      cs["state"]["waiting"]["reason"] == "CrashLoopBackOff" and
      cs["lastState"]["terminated"]["exitCode"] == 2, cs)
request("POST", PODS, pod("nofit-1"))
o = wait_pod("nofit-1", lambda o: o["status"].get("conditions"))
check("Unschedulable by name: no node, PodScheduled False", "nodeName" not in o["spec"] and
      o["status"]["conditions"][0]["reason"] == "Unschedulable")
request("POST", PODS, pod("rootish", sc={"runAsNonRoot": True}))
o = wait_pod("rootish", lambda o: (o["status"].get("containerStatuses") or [{}])[0].get(
    "state", {}).get("waiting", {}).get("reason") == "CreateContainerConfigError")
check("runAsNonRoot without runAsUser: CreateContainerConfigError",
      "runAsNonRoot" in o["status"]["containerStatuses"][0]["state"]["waiting"]["message"])
aff = pod("pinned-elsewhere")
aff["spec"]["affinity"] = {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {
    "nodeSelectorTerms": [{"matchExpressions": [{"key": "kubernetes.io/hostname",
                                                 "operator": "In", "values": ["node-9"]}]}]}}}
request("POST", PODS, aff)
aff = pod("pinned-here")
aff["spec"]["affinity"] = {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {
    "nodeSelectorTerms": [{"matchExpressions": [{"key": "kubernetes.io/hostname",
                                                 "operator": "In", "values": ["fake-node-1"]}]}]}}}
request("POST", PODS, aff)
o = wait_pod("pinned-elsewhere", lambda o: o["status"].get("conditions"))
check("required node affinity to another node: Unschedulable",
      "didn't match Pod's node affinity/selector" in o["status"]["conditions"][0]["message"])
check("to fake-node-1 (kubernetes.io/hostname): Running", running(wait_pod("pinned-here",
                                                                          running)))
rwop = pvc("rwop")
rwop["spec"]["accessModes"] = ["ReadWriteOncePod"]
request("POST", PVCS, rwop)
request("POST", PODS, pod("rwop-1", claim="rwop"))
wait_pod("rwop-1", running)
request("POST", PODS, pod("rwop-2", claim="rwop"))
o = wait_pod("rwop-2", lambda o: o["status"].get("conditions"))
check("a second Pod on a ReadWriteOncePod claim: Unschedulable",
      "ReadWriteOncePod" in o["status"]["conditions"][0]["message"], o["status"])
dl = pod("deadline")
dl["spec"]["activeDeadlineSeconds"] = 1
request("POST", PODS, dl)
o = wait_pod("deadline", lambda o: o["status"].get("phase") == "Failed", 5)
check("activeDeadlineSeconds: Failed, DeadlineExceeded", o["status"].get("reason") ==
      "DeadlineExceeded", o["status"])
time.sleep(0.1)
check("and it stays Failed", request("GET", PODS + "/deadline")[1]["status"]["phase"] ==
      "Failed")
ctl("POST", "/pods", {"failures": []})
code, b, _ = request("DELETE", PODS + "?labelSelector=")
check("deletecollection of every Pod", code == 200)
request("DELETE", PVCS + "/stuck")
request("DELETE", PVCS + "/rwop")

# ---------------------------------------------------------------------------------------------
# exec: the protocol

request("POST", PVCS, pvc("ex"))
request("POST", PODS, pod("ex", claim="ex", sc={"runAsUser": 1000, "runAsGroup": 1000,
                                                 "fsGroup": 2000}))
request("POST", PODS, pod("asroot", sc={}, mounts=[{"name": "e", "mountPath": "/data"}]))
wait_pod("ex", running)
wait_pod("asroot", running)
ws = Ws(exec_path("ex", ["sh", "-c", "exit 3"], stdout="true", stderr="true"),
        ("v4.channel.k8s.io", "v5.channel.k8s.io"))
check("the server prefers v5 even when v4 is offered first",
      ws.headers.get("sec-websocket-protocol") == "v5.channel.k8s.io", ws.headers)
frames, close, masked = ws.run()
check("the first message is the empty one on stdout", frames[:1] == [(1, b"")], frames[:2])
st = json.loads(joined(frames, 3))
check("v5 channel 3: the translator's NonZeroExitCode Status exactly", st == {
    "metadata": {}, "status": "Failure", "message": "command terminated with non-zero exit "
    "code: command terminated with exit code 3", "reason": "NonZeroExitCode",
    "details": {"causes": [{"reason": "ExitCode", "message": "3"}]}}, st)
check("then a close frame 1000; server frames are unmasked", close == 1000 and not masked)
ws = Ws(exec_path("ex", ["sh", "-c", "exit 3"], stdout="1"), ("v4.channel.k8s.io",))
frames, close, _ = ws.run()
check("v4 channel 3: the kubelet's NonZeroExitCode Status exactly",
      joined(frames, 3) == b'{"metadata":{},"status":"Failure","message":"command terminated '
      b'with non-zero exit code: error executing command [sh -c exit 3], exit code 3","reason":'
      b'"NonZeroExitCode","details":{"causes":[{"reason":"ExitCode","message":"3"}]}}', frames)
ws = Ws(exec_path("ex", ["true"], stdout="1"), ("v4.channel.k8s.io",))
frames, close, _ = ws.run()
check("v4 success: {\"metadata\":{},\"status\":\"Success\"}", joined(frames, 3) ==
      b'{"metadata":{},"status":"Success"}', frames)
ws = Ws(exec_path("ex", ["sh", "-c", "exit 5"], stderr="True"), ("channel.k8s.io",))
frames, close, _ = ws.run()
check("channel.k8s.io (v1): the bare message on channel 3, first message on stderr",
      frames[0] == (2, b"") and joined(frames, 3).startswith(b"command terminated with "
                                                              b"non-zero exit code"), frames)
ws = Ws(exec_path("ex", ["true"], stdout="true"), None)
frames, close, _ = ws.run()
check("no subprotocol header: channel.k8s.io, nothing on channel 3 for success",
      ws.status == 101 and joined(frames, 3) == b"", (ws.status, frames))
ws = Ws(exec_path("ex", ["true"], stdout="true"), ("base64.channel.k8s.io", "nope"))
check("no common subprotocol: 403", ws.status == 403, ws.status)
ws = Ws(exec_path("ex", ["true"]))
check("no stream requested: 400 with the API server's text", ws.status == 400 and
      ws.body["message"] == "you must specify at least 1 of stdin, stdout, stderr", ws.body)
ws = Ws(exec_path("ex", ["true"], stdout="true").replace("container=sandbox",
                                                          "container=other"))
check("an unknown container: 400", ws.status == 400 and
      ws.body["message"] == "container other is not valid for pod ex", ws.body)
ws = Ws(exec_path("nosuch", ["true"], stdout="true"))
check("an unknown Pod: 404 NotFound", ws.status == 404 and ws.body["reason"] == "NotFound")
ws = Ws(exec_path("ex", ["cat"], stdin="true", stdout="true"))
ws.send_frame(2, b"\x00hel", fin=False)
ws.send_frame(0, b"lo ", fin=False)
ws.send_frame(0, b"world", fin=True)
ws.send_frame(9, b"ping!")
ws.send(255, b"\x00")
frames, close, _ = ws.run()
check("fragmented stdin is reassembled; CLOSE ends cat", joined(frames, 1) == b"hello world",
      frames)
check("a ping gets its pong", ("pong", b"ping!") in frames, frames)
ws = Ws(exec_path("ex", ["sleep", "30"], stdout="true"))
ws.send_frame(8, (1000).to_bytes(2, "big"))
frames, close, _ = ws.run(seconds=5)
check("a client's close frame before the end is echoed; the command is killed",
      close == 1000 and joined(frames, 3) == b"" and wait_no_procs() == 0, (close, frames))
ws = Ws(exec_path("ex", ["cat"], stdin="true", stdout="true"))
ws.send_frame(2, b"\x00data", mask=False)
frames, close, _ = ws.run(seconds=3)
check("an unmasked client frame ends the stream without a status",
      joined(frames, 3) == b"" and wait_no_procs() == 0, frames)
ws = Ws(exec_path("ex", ["sh", "-c", "id -u; id -G; stat -c %g /workspace; pwd"],
                  stdout="true"))
frames, _, _ = ws.run()
check("runAsUser, fsGroup as a supplementary group and the volume's group",
      joined(frames, 1) == b"1000\n1000 2000\n2000\n/\n", joined(frames, 1))

outs = {}


def par(i):
    w = Ws(exec_path("asroot", ["sh", "-c", "echo $0", "p%d" % i], stdout="true"))
    fr, _, _ = w.run()
    outs[i] = joined(fr, 1)


workers = [threading.Thread(target=par, args=(i,)) for i in range(6)]
for t in workers:
    t.start()
for t in workers:
    t.join()
check("6 execs at once each get their own output", outs == {i: b"p%d\n" % i for i in range(6)},
      outs)

# exec: the sandbox's walls
ws = Ws(exec_path("asroot", ["sh", "-c", "echo top > /made-here && cat /made-here; "
                             "touch /etc/b4-fake-probe; echo d > /data/f; ls /proc | "
                             "grep -c '^[0-9]'"], stdout="true", stderr="true"))
frames, _, _ = ws.run()
out = joined(frames, 1).decode()
check("as root without readOnlyRootFilesystem: the top level is writable",
      out.startswith("top\n"), out)
check("but the host's directories stay read-only", "Read-only file system" in
      joined(frames, 2).decode() and not os.path.exists("/etc/b4-fake-probe"), frames)
check("a fresh /proc shows only the exec's own processes", out.split()[-1] in ("3", "4"), out)
ws = Ws(exec_path("asroot", ["cat", "/made-here", "/data/f"], stdout="true"))
frames, _, _ = ws.run()
check("the top level and the emptyDir persist across execs of one Pod",
      joined(frames, 1) == b"top\nd\n", frames)
ws = Ws(exec_path("ex", ["sh", "-c", "sleep 30 & sleep 31 & wait"], stdout="true"))
deadline = time.time() + 5
while sandbox_procs() < 4 and time.time() < deadline:
    time.sleep(0.05)
during = sandbox_procs()
ws.sock.close()
check("closing the socket kills the command's whole tree", during >= 3 and
      wait_no_procs() == 0, (during, sandbox_procs()))
ws = Ws(exec_path("ex", ["sleep", "30"], stdout="true"))
time.sleep(0.3)
request("DELETE", PODS + "/ex?gracePeriodSeconds=0")
frames, close, _ = ws.run(seconds=5)
check("deleting the Pod ends its execs", wait_no_procs() == 0)
ws = Ws(exec_path("asroot", ["no-such"], stdout="true"))
frames, _, _ = ws.run()
st = json.loads(joined(frames, 3))
check("a command that cannot start: InternalError 500 on channel 3 (v5: wrapped twice)",
      st["reason"] == "InternalError" and st["code"] == 500 and
      st["message"].startswith("Internal error occurred: Internal error occurred: error "
                               "executing command in container") and
      'exec: "no-such": executable file not found in $PATH' in st["message"], st)
ws = Ws(exec_path("asroot", ["no-such"], stdout="true"), ("v4.channel.k8s.io",))
frames, _, _ = ws.run()
st = json.loads(joined(frames, 3))
check("v4: the kubelet's InternalError, wrapped once", st["message"].startswith(
    "Internal error occurred: error executing command") and st["details"]["causes"][0][
    "message"].startswith("error executing command in container"), st)
c = ctl("GET", "/counters")
check("execs are counted", c["execs"] >= 10, c)

# ---------------------------------------------------------------------------------------------
# h2: a second fake that offers h2 in ALPN

with tempfile.TemporaryDirectory() as d:
    p = subprocess.Popen([sys.executable, FAKE_PY, "--state", d, "--alpn", "h2,http/1.1"],
                         stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
    info = json.loads(p.stdout.readline())
    h2ctx = ssl.create_default_context(cafile=info["ca"])
    h2ctx.set_alpn_protocols(["h2", "http/1.1"])
    s = h2ctx.wrap_socket(socket.create_connection(("127.0.0.1", info["port"])),
                          server_hostname="127.0.0.1")
    picked = s.selected_alpn_protocol()
    s.settimeout(3)
    try:
        closed = s.recv(1) == b""
    except OSError:
        closed = True
    s.close()
    h1ctx = ssl.create_default_context(cafile=info["ca"])
    h1ctx.set_alpn_protocols(["http/1.1"])
    conn = http.client.HTTPSConnection("127.0.0.1", info["port"], context=h1ctx, timeout=10)
    conn.request("GET", "/_fake/counters", headers={"Authorization": "Bearer " +
                                                    info["adminToken"]})
    counters = json.loads(conn.getresponse().read())
    conn.close()
    p.terminate()
    p.wait()
    check("--alpn h2,http/1.1: a client offering h2 gets it, then a closed connection, counted",
          picked == "h2" and closed and counters["h2Negotiated"] == 1, (picked, counters))

# ---------------------------------------------------------------------------------------------
# --nodes 2: ReadWriteOnce volumes attach to one node at a time

with tempfile.TemporaryDirectory() as d:
    p = subprocess.Popen([sys.executable, FAKE_PY, "--state", d, "--nodes", "2"],
                         stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
    info = json.loads(p.stdout.readline())
    ctx2 = ssl.create_default_context(cafile=info["ca"])
    tok2 = open(info["tokenFile"]).read().split()[0]

    def req2(method, path, body=None):
        return request(method, path, body, token=tok2, ctx=ctx2, port=info["port"])

    def pod2(name, pred, seconds=10):
        deadline = time.time() + seconds
        o = None
        while time.time() < deadline:
            o = req2("GET", PODS + "/" + name)[1]
            if pred(o):
                return o
            time.sleep(0.05)
        return o

    req2("POST", PVCS, pvc("shared"))
    req2("POST", PODS, pod("keeper", claim="shared"))
    keeper = pod2("keeper", running)
    req2("POST", PODS, pod("reader", claim="shared"))
    reader = pod2("reader", lambda o: o["spec"].get("nodeName") and
                  o["status"].get("containerStatuses"))
    time.sleep(0.3)
    reader = req2("GET", PODS + "/reader")[1]
    evs = req2("GET", "/api/v1/namespaces/default/events?fieldSelector=" +
               urllib.parse.quote("involvedObject.name=reader,reason=FailedAttachVolume"))[1]
    check("--nodes 2: an unpinned second Pod lands on the other node and waits, Multi-Attach",
          keeper["spec"]["nodeName"] == "fake-node-1" and
          reader["spec"]["nodeName"] == "fake-node-2" and
          reader["status"]["phase"] == "Pending" and len(evs["items"]) == 1 and
          evs["items"][0]["message"].startswith("Multi-Attach error for volume") and
          "keeper" in evs["items"][0]["message"], (reader["spec"].get("nodeName"),
                                                    reader["status"], evs["items"]))
    pinned = pod("pinned", claim="shared")
    pinned["spec"]["affinity"] = {"nodeAffinity": {
        "requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [{
            "matchExpressions": [{"key": "kubernetes.io/hostname", "operator": "In",
                                  "values": [keeper["spec"]["nodeName"]]}]}]}}}
    req2("POST", PODS, pinned)
    check("a Pod pinned to the keeper's node shares the ReadWriteOnce volume and runs",
          running(pod2("pinned", running)))
    req2("DELETE", PODS + "/keeper?gracePeriodSeconds=0")
    req2("DELETE", PODS + "/pinned?gracePeriodSeconds=0")
    check("once no Pod on the first node uses it, the volume moves and the waiting Pod runs",
          running(pod2("reader", running)))
    p.terminate()
    p.wait()

print("1..%d" % N)
sys.exit(1 if FAILED else 0)
