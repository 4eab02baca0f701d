#!/usr/bin/python3
"""Honesty scenario 3: Debian's python3-kubernetes against the fake: the same CRUD, watch and
exec scenario as client-node, exec through stream() over v4.channel.k8s.io (no stdin close,
so the commands read self-delimited input). Run by with-fake.sh; prints TAP."""
import json
import os
import ssl
import sys
import time
import urllib.request

from kubernetes import client, config, watch
from kubernetes.client.rest import ApiException
from kubernetes.stream import stream

NS = "default"
N = 0
FAILED = 0


def check(name, cond, detail=None):
    global N, FAILED
    N += 1
    print("%s %d - %s" % ("ok" if cond else "not ok", N, name))
    if not cond:
        FAILED += 1
        if detail is not None:
            print("# %r" % (detail,))
    sys.stdout.flush()


def ctl(method, path, body=None):
    ctx = ssl.create_default_context(cafile=os.environ["FAKE_CA"])
    req = urllib.request.Request(os.environ["FAKE_URL"] + "/_fake" + path, method=method,
                                 data=json.dumps(body).encode() if body is not None else None,
                                 headers={"Authorization": "Bearer " + os.environ["FAKE_ADMIN"],
                                          "Content-Type": "application/json"})
    with urllib.request.urlopen(req, context=ctx) as r:
        return json.loads(r.read() or b"{}")


def api_status(fn, *args, **kwargs):
    try:
        fn(*args, **kwargs)
        return 0, None
    except ApiException as e:
        return e.status, json.loads(e.body) if e.body else None


config.load_kube_config(config_file=os.environ["KUBECONFIG"])
v1 = client.CoreV1Api()
net = client.NetworkingV1Api()
authz = client.AuthorizationV1Api()
labels = {"app.kubernetes.io/managed-by": "b4", "b4.run/thread": "py1"}
pvc = {"apiVersion": "v1", "kind": "PersistentVolumeClaim",
       "metadata": {"name": "b4-sbx-vol-py1", "labels": labels},
       "spec": {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "1Gi"}}}}
pod = {"apiVersion": "v1", "kind": "Pod",
       "metadata": {"generateName": "b4-sbx-py1-", "labels": labels},
       "spec": {"automountServiceAccountToken": False, "terminationGracePeriodSeconds": 1,
                "securityContext": {"runAsUser": 1000, "runAsGroup": 1000, "fsGroup": 1000,
                                    "runAsNonRoot": True},
                "containers": [{"name": "sandbox", "image": "node:24-slim",
                                "command": ["sleep", "infinity"], "workingDir": "/workspace",
                                "securityContext": {"readOnlyRootFilesystem": True,
                                                    "allowPrivilegeEscalation": False},
                                "volumeMounts": [{"name": "workspace", "mountPath": "/workspace"},
                                                 {"name": "ro", "mountPath": "/ro",
                                                  "readOnly": True}]}],
                "volumes": [{"name": "workspace",
                             "persistentVolumeClaim": {"claimName": "b4-sbx-vol-py1"}},
                            {"name": "ro", "emptyDir": {}}]}}

created_pvc = v1.create_namespaced_persistent_volume_claim(NS, pvc)
check("create_namespaced_persistent_volume_claim", created_pvc.status.phase == "Pending")
code, body = api_status(v1.create_namespaced_persistent_volume_claim, NS, pvc)
check("a second create is 409 AlreadyExists", code == 409 and body["reason"] == "AlreadyExists"
      and body["message"] == 'persistentvolumeclaims "b4-sbx-vol-py1" already exists', body)
created = v1.create_namespaced_pod(NS, pod)
name = created.metadata.name
check("generateName: a 5-character suffix", name.startswith("b4-sbx-py1-") and len(name) == 16,
      name)
code, body = api_status(v1.create_namespaced_pod, NS, {"apiVersion": "v1", "kind": "Pod",
                                                       "metadata": {},
                                                       "spec": {"containers": [{"name": "c"}]}})
check("no name and no image: 422 Invalid with both causes", code == 422 and
      sorted(c["field"] for c in body["details"]["causes"]) ==
      ["metadata.name", "spec.containers[0].image"], body)

w = watch.Watch()
phase = None
for ev in w.stream(v1.list_namespaced_pod, NS, field_selector="metadata.name=" + name,
                   resource_version=created.metadata.resource_version, timeout_seconds=10):
    phase = ev["object"].status.phase
    if phase == "Running":
        w.stop()
check("watch.Watch from the create's resourceVersion sees Running", phase == "Running", phase)

got = v1.read_namespaced_pod(name, NS)
check("read_namespaced_pod: podIP and a running container", bool(got.status.pod_ip) and
      got.status.container_statuses[0].state.running is not None)
listed = v1.list_namespaced_pod(NS, label_selector="b4.run/thread=py1,b4.run/thread!=other")
check("list_namespaced_pod with = and !=", [p.metadata.name for p in listed.items] == [name])
page = v1.list_namespaced_persistent_volume_claim(NS, limit=1)
check("list with limit=1 (one PVC, no continue)", len(page.items) == 1 and
      not page.metadata._continue)

patched = v1.patch_namespaced_pod(name, NS, {"metadata": {"labels": {"b4box.io/probe": "1"}}})
check("patch_namespaced_pod (strategic merge) adds a label",
      patched.metadata.labels.get("b4box.io/probe") == "1")
got.metadata.labels["b4box.io/probe"] = "2"
code, body = api_status(v1.replace_namespaced_pod, name, NS, got)
check("replace with the stale resourceVersion is 409 Conflict", code == 409 and
      body["reason"] == "Conflict", body)
fresh = v1.read_namespaced_pod(name, NS)
fresh.metadata.labels["b4box.io/probe"] = "3"
replaced = v1.replace_namespaced_pod(name, NS, fresh)
check("replace with the current resourceVersion", replaced.metadata.labels["b4box.io/probe"] == "3"
      and int(replaced.metadata.resource_version) > int(fresh.metadata.resource_version))
code, body = api_status(v1.patch_namespaced_pod, name, NS,
                        [{"op": "replace", "path": "/spec/containers/0/name", "value": "other"}])
check("changing an immutable Pod field is 422", code == 422 and body["reason"] == "Invalid", body)

review = authz.create_self_subject_access_review(client.V1SelfSubjectAccessReview(
    spec=client.V1SelfSubjectAccessReviewSpec(resource_attributes=client.V1ResourceAttributes(
        namespace=NS, verb="delete", resource="persistentvolumeclaims"))))
check("SelfSubjectAccessReview: allowed", review.status.allowed is True)
ctl("POST", "/rules", {"rules": [{"verb": "delete", "resource": "persistentvolumeclaims",
                                  "allowed": False, "reason": "denied"}]})
review = authz.create_self_subject_access_review(client.V1SelfSubjectAccessReview(
    spec=client.V1SelfSubjectAccessReviewSpec(resource_attributes=client.V1ResourceAttributes(
        namespace=NS, verb="delete", resource="persistentvolumeclaims"))))
check("a denied rule: allowed false, denied true", review.status.allowed is False and
      review.status.denied is True)
ctl("POST", "/rules", {"rules": []})

out = stream(v1.connect_get_namespaced_pod_exec, name, NS, command=["sh", "-c", "id -u; pwd"],
             container="sandbox", stderr=True, stdin=False, stdout=True, tty=False)
check("stream() exec, preloaded: output", out == "1000\n/workspace\n", out)
resp = stream(v1.connect_get_namespaced_pod_exec, name, NS,
              command=["sh", "-c", "head -c 11 > f; cat f; echo oops >&2; exit 7"],
              container="sandbox", stderr=True, stdin=True, stdout=True, tty=False,
              _preload_content=False)
resp.write_stdin("hello world")
stdout, stderr = "", ""
deadline = time.time() + 10
while resp.is_open() and time.time() < deadline:
    resp.update(timeout=1)
    stdout += resp.read_stdout() if resp.peek_stdout() else ""
    stderr += resp.read_stderr() if resp.peek_stderr() else ""
resp.close()
check("stream() with stdin: output on stdout, stderr apart", stdout == "hello world" and
      stderr == "oops\n", (stdout, stderr))
check("returncode 7 from the channel-3 Status (v4)", resp.returncode == 7, resp.returncode)
out = stream(v1.connect_get_namespaced_pod_exec, name, NS,
             command=["sh", "-c", "touch /ro/x 2>&1; cat /workspace/f"], container="sandbox",
             stderr=True, stdin=False, stdout=True, tty=False)
check("a readOnly emptyDir mount refuses writes; the PVC kept the file",
      "Read-only file system" in out and out.endswith("hello world"), out)
log = ctl("GET", "/log")
protos = {e.get("subprotocol") for e in log["entries"] if e.get("verb") == "exec"}
check("python3-kubernetes speaks v4.channel.k8s.io", protos == {"v4.channel.k8s.io"}, protos)
queries = [e["query"] for e in log["entries"] if e.get("verb") == "exec"]
check("with capitalised booleans in the query", "stdin=False" in queries[0] and
      "stdout=True" in queries[0], queries[0])

deleted = v1.delete_namespaced_pod(name, NS, grace_period_seconds=1,
                                   propagation_policy="Background")
check("delete_namespaced_pod: terminating", deleted.metadata.deletion_timestamp is not None)
v1.delete_namespaced_persistent_volume_claim("b4-sbx-vol-py1", NS)
state = None
for _ in range(100):
    code, body = api_status(v1.read_namespaced_persistent_volume_claim, "b4-sbx-vol-py1", NS)
    pod_code, _ = api_status(v1.read_namespaced_pod, name, NS)
    if code == 404:
        break
    state = (code, pod_code)
    time.sleep(0.05)
check("the PVC lives until its Pod is gone, then 404", code == 404 and pod_code == 404 and
      state is not None and state[0] == 0, state)
code, body = api_status(v1.delete_namespaced_pod, name, NS)
check("deleting it again: 404 NotFound Status", code == 404 and body["details"] ==
      {"name": name, "kind": "pods"}, body)
unknown = [(e["path"], e["unknownFields"]) for e in ctl("GET", "/log")["entries"]
           if e.get("unknownFields")]
check("every object python3-kubernetes sent has only fields the fake's schema knows",
      unknown == [], unknown)
print("1..%d" % N)
sys.exit(1 if FAILED else 0)
