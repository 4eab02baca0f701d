#!/usr/bin/python3
"""A wire-faithful fake Kubernetes API server for b4box's tests (issue 15, tests/kube/README.md).

Python 3 stdlib only, run as root with Debian's /usr/bin/python3. It shares no code with the C
client on purpose: bugs must not cancel out. Real clients (kubectl, @kubernetes/client-node,
python3-kubernetes) run the scenarios of tests/kube against it to keep it honest.

Command line (stable; tests/kube/README.md has the long form):

    kube-apiserver.py --state DIR [--listen 127.0.0.1] [--port 0] [--namespace NS]...
                      [--token-file FILE] [--cert F --key F --ca F] [--alpn h2,http/1.1]
                      [--schedule-ms 20] [--start-ms 80] [--terminating-ms 300]
                      [--pvc-bind-ms 0] [--bookmark-interval 1.0] [--history 2000]
                      [--rules FILE] [--log FILE] [--nodes 1] [--verbose]

At start it writes into DIR: ca.crt ca.key server.crt server.key (made by openssl unless passed
in), client.crt client.key (user "fake-cert-user", group system:masters), token (unless
--token-file: one "TOKEN [USER]" a line, re-read on every request, so rewriting the file
rotates tokens), admin-token, kubeconfig (contexts "fake" = token user, current, and
"fake-cert" = client certificate), and last, atomically, server.json:
{"port","url","ca","kubeconfig","tokenFile","adminToken","pid","stateDir"}. The same JSON is
printed as one line on stdout. SIGTERM/SIGINT stop it; the state dir is left for the caller.

Control API, on the same port, only with "Authorization: Bearer <admin-token>", JSON in and out:
    GET  /_fake/state                 resourceVersion, settings, faults, counters
    GET  /_fake/counters              {"reads","writes","watches","execs","reviews",
    POST /_fake/counters/reset         "discovery","byVerb":{"list pods":n}} (reset returns them)
                                      "connections": TLS connections that carried an API
                                      request (the control API's are not counted), "tlsResumed":
                                      those whose handshake resumed a session
    GET  /_fake/log?since=N           {"entries":[...],"next":N}; POST /_fake/log/reset
    POST /_fake/faults                {"code":429,"count":1,"retryAfter":1,"verb":"create",
                                       "resource":"pods","path":"regex","delayMs":0,"drop":false,
                                       "loseAnswer":false,"cutAnswer":false,"keptOnly":false}:
                                       loseAnswer handles the request, then closes the connection
                                       instead of answering; cutAnswer closes it halfway through
                                       the answer's body; keptOnly matches only a request on a
                                       connection that already carried one
    DELETE /_fake/faults              clear them
    POST /_fake/watch/drop            {"count":1}: cut that many watch streams (open ones first)
    POST /_fake/exec/drop             {"count":1,"afterMs":0}: cut that many exec streams
    POST /_fake/pods                  {"scheduleDelayMs","startDelayMs","terminatingMs",
                                       "failures":[{"name":"re","image":"re","reason":"R",
                                       "message":"m","exitCode":1}]}
    POST /_fake/pvcs                  {"bindDelayMs", "pending":[{"name":"re","storageClass":"re"}]}
    POST /_fake/rules                 {"rules":[{"verb","resource","subresource","group",
                                       "namespace","name","user","allowed","reason",
                                       "evaluationError","reviewCode"}],"enforce":true,
                                       "bookmarkInterval":1.0}
    POST /_fake/compact               forget the watch history (older resourceVersions → 410)

Behind exec is a real sandbox per exec (a private mount, PID and UTS namespace, the host's
root read-only under a per-Pod writable top level, the Pod's volumes bound at their
mountPaths, runAsUser/runAsGroup/fsGroup, workingDir), forked from a zygote process made at
start; the command's whole tree dies with the stream.
"""

import argparse
import base64
import bisect
import copy
import ctypes
import errno
import hashlib
import http.server
import json
import os
import random
import re
import secrets
import select
import shutil
import signal
import socket
import socketserver
import ssl
import subprocess
import sys
import threading
import time
import traceback
import urllib.parse
import uuid

# ---------------------------------------------------------------------------------------------
# Status bodies and errors


def status_body(code, reason, message, details=None):
    body = {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
            "message": message, "reason": reason}
    if details is not None:
        body["details"] = details
    body["code"] = code
    return body


class ApiError(Exception):
    """An answer that is a Status: raised anywhere, written by the handler."""

    def __init__(self, code, reason, message, details=None, headers=None):
        super().__init__(message)
        self.code, self.reason, self.message = code, reason, message
        self.details, self.headers = details, headers or {}

    def body(self):
        return status_body(self.code, self.reason, self.message, self.details)


def not_found(res, name):
    d = {"name": name, "kind": res.plural}
    if res.group:
        d["group"] = res.group
    return ApiError(404, "NotFound", '%s "%s" not found' % (res.qualified, name), d)


def already_exists(res, name):
    d = {"name": name, "kind": res.plural}
    if res.group:
        d["group"] = res.group
    return ApiError(409, "AlreadyExists", '%s "%s" already exists' % (res.qualified, name), d)


def conflict(res, name, why="the object has been modified; please apply your changes to the "
             "latest version and try again"):
    d = {"name": name, "kind": res.plural}
    if res.group:
        d["group"] = res.group
    return ApiError(409, "Conflict", 'Operation cannot be fulfilled on %s "%s": %s'
                    % (res.qualified, name, why), d)


def bad_request(message):
    return ApiError(400, "BadRequest", message)


def invalid(res, name, causes):
    """causes: [(field, reason, message)] → 422 Invalid exactly as the API server words it."""
    parts = ["%s: %s" % (f, m) for f, _, m in causes]
    text = parts[0] if len(parts) == 1 else "[" + ", ".join(parts) + "]"
    d = {"name": name, "kind": res.kind}
    if res.group:
        d["group"] = res.group
    d["causes"] = [{"reason": r, "message": m, "field": f} for f, r, m in causes]
    if not name:
        del d["name"]
    return ApiError(422, "Invalid", '%s "%s" is invalid: %s' % (res.kind, name, text), d)


def now_rfc3339(t=None):
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(time.time() if t is None else t))


# ---------------------------------------------------------------------------------------------
# Resources and discovery


class Resource:
    def __init__(self, group, version, plural, singular, kind, namespaced, verbs, short=(),
                 categories=(), subresources=()):
        self.group, self.version, self.plural, self.singular = group, version, plural, singular
        self.kind, self.namespaced, self.verbs = kind, namespaced, verbs
        self.short, self.categories, self.subresources = list(short), list(categories), subresources
        self.api_version = version if not group else group + "/" + version
        self.qualified = plural if not group else plural + "." + group

    def discovery(self):
        out = {"name": self.plural, "singularName": self.singular, "namespaced": self.namespaced,
               "kind": self.kind, "verbs": self.verbs}
        if self.short:
            out["shortNames"] = self.short
        if self.categories:
            out["categories"] = self.categories
        out["storageVersionHash"] = base64.b64encode(
            hashlib.sha256(self.qualified.encode()).digest()[:8]).decode()
        return out


RW = ["create", "delete", "deletecollection", "get", "list", "patch", "update", "watch"]
RESOURCES = {
    ("", "pods"): Resource("", "v1", "pods", "pod", "Pod", True, RW, ["po"], ["all"],
                           [("pods/exec", "PodExecOptions", ["create", "get"]),
                            ("pods/status", "Pod", ["get", "patch", "update"])]),
    ("", "persistentvolumeclaims"): Resource("", "v1", "persistentvolumeclaims",
                                             "persistentvolumeclaim", "PersistentVolumeClaim",
                                             True, RW, ["pvc"]),
    ("", "namespaces"): Resource("", "v1", "namespaces", "namespace", "Namespace", False,
                                 ["create", "delete", "get", "list", "patch", "update", "watch"],
                                 ["ns"]),
    ("", "events"): Resource("", "v1", "events", "event", "Event", True, RW, ["ev"]),
    ("networking.k8s.io", "networkpolicies"): Resource("networking.k8s.io", "v1",
                                                       "networkpolicies", "networkpolicy",
                                                       "NetworkPolicy", True, RW, ["netpol"]),
}
SSAR = Resource("authorization.k8s.io", "v1", "selfsubjectaccessreviews",
                "selfsubjectaccessreview", "SelfSubjectAccessReview", False, ["create"])
GROUPS = {"networking.k8s.io": "v1", "authorization.k8s.io": "v1"}


def resource_list(group, version):
    out = []
    for (g, _), r in sorted(RESOURCES.items(), key=lambda kv: kv[1].plural):
        if g != group:
            continue
        out.append(r.discovery())
        for name, kind, verbs in r.subresources:
            out.append({"name": name, "singularName": "", "namespaced": True, "kind": kind,
                        "verbs": verbs})
    if group == "authorization.k8s.io":
        out.append(SSAR.discovery())
    return {"kind": "APIResourceList", "apiVersion": "v1",
            "groupVersion": version if not group else group + "/" + version, "resources": out}


def group_list():
    groups = []
    for g, v in GROUPS.items():
        gv = {"groupVersion": g + "/" + v, "version": v}
        groups.append({"name": g, "versions": [gv], "preferredVersion": gv})
    return {"kind": "APIGroupList", "apiVersion": "v1", "groups": groups}


VERSION = {"major": "1", "minor": "32", "gitVersion": "v1.32.4-b4box-fake",
           "gitCommit": "0" * 40, "gitTreeState": "clean", "buildDate": "2026-01-01T00:00:00Z",
           "goVersion": "go1.23.8", "compiler": "gc", "platform": "linux/amd64"}

# ---------------------------------------------------------------------------------------------
# Validation (the subset of pkg/apis/core/validation the provider and the clients meet)

DNS1123_SUBDOMAIN = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")
DNS1123_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")
QUALIFIED_NAME = re.compile(r"^([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]$")
LABEL_VALUE = re.compile(r"^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$")
SUBDOMAIN_MSG = ("a lowercase RFC 1123 subdomain must consist of lower case alphanumeric "
                 "characters, '-' or '.', and must start and end with an alphanumeric character "
                 "(e.g. 'example.com', regex used for validation is "
                 "'[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')")
LABEL_VALUE_MSG = ("a valid label must be an empty string or consist of alphanumeric characters, "
                   "'-', '_' or '.', and must start and end with an alphanumeric character (e.g. "
                   "'MyValue',  or 'my_value',  or '12345', regex used for validation is "
                   "'(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')")
NAME_PART_MSG = ("name part must consist of alphanumeric characters, '-', '_' or '.', and must "
                 "start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or "
                 "'123-abc', regex used for validation is "
                 "'([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')")


def check_qualified_key(key, field, causes):
    prefix, _, name = key.rpartition("/")
    if "/" in key and (not prefix or len(prefix) > 253 or not DNS1123_SUBDOMAIN.match(prefix)):
        causes.append((field, "FieldValueInvalid", 'Invalid value: "%s": prefix part %s'
                       % (key, SUBDOMAIN_MSG)))
    elif not name or len(name) > 63 or not QUALIFIED_NAME.match(name):
        causes.append((field, "FieldValueInvalid",
                       'Invalid value: "%s": %s' % (key, NAME_PART_MSG)))


def validate_meta(obj, res, causes):
    meta = obj.get("metadata")
    if not isinstance(meta, dict):
        causes.append(("metadata.name", "FieldValueRequired",
                       "Required value: name or generateName is required"))
        return
    name = meta.get("name")
    if not name:
        causes.append(("metadata.name", "FieldValueRequired",
                       "Required value: name or generateName is required"))
    else:
        pattern, limit = ((DNS1123_LABEL, 63) if res.kind == "Namespace"
                          else (DNS1123_SUBDOMAIN, 253))
        if not isinstance(name, str) or len(name) > limit or not pattern.match(name):
            causes.append(("metadata.name", "FieldValueInvalid",
                           'Invalid value: "%s": %s' % (name, SUBDOMAIN_MSG)))
    labels = meta.get("labels") or {}
    if not isinstance(labels, dict):
        causes.append(("metadata.labels", "FieldValueInvalid", "Invalid value: not a map"))
        labels = {}
    for k, v in labels.items():
        check_qualified_key(k, "metadata.labels", causes)
        if not isinstance(v, str) or len(v) > 63 or not LABEL_VALUE.match(v):
            causes.append(("metadata.labels", "FieldValueInvalid",
                           'Invalid value: "%s": %s' % (v, LABEL_VALUE_MSG)))
    annotations = meta.get("annotations") or {}
    total = 0
    for k, v in annotations.items():
        check_qualified_key(k, "metadata.annotations", causes)
        total += len(k) + len(v if isinstance(v, str) else "")
    if total > 256 * 1024:
        causes.append(("metadata.annotations", "FieldValueTooLong",
                       "Too long: must have at most 262144 bytes"))


def validate_pod(obj, causes):
    spec = obj.get("spec") or {}
    containers = spec.get("containers") or []
    if not containers:
        causes.append(("spec.containers", "FieldValueRequired", "Required value"))
    volumes = {v.get("name") for v in spec.get("volumes") or []}
    for i, c in enumerate(containers):
        if not c.get("name"):
            causes.append(("spec.containers[%d].name" % i, "FieldValueRequired", "Required value"))
        if not c.get("image"):
            causes.append(("spec.containers[%d].image" % i, "FieldValueRequired",
                           "Required value"))
        for j, m in enumerate(c.get("volumeMounts") or []):
            if m.get("name") not in volumes:
                causes.append(("spec.containers[%d].volumeMounts[%d].name" % (i, j),
                               "FieldValueNotFound", 'Not found: "%s"' % m.get("name")))
            mp = m.get("mountPath")
            if not mp:
                causes.append(("spec.containers[%d].volumeMounts[%d].mountPath" % (i, j),
                               "FieldValueRequired", "Required value"))
            elif not mp.startswith("/") or ".." in mp.split("/"):
                causes.append(("spec.containers[%d].volumeMounts[%d].mountPath" % (i, j),
                               "FieldValueInvalid", 'Invalid value: "%s": must be an absolute '
                               "path without '..'" % mp))
    if spec.get("dnsPolicy") == "None" and not (spec.get("dnsConfig") or {}).get("nameservers"):
        causes.append(("spec.dnsConfig.nameservers", "FieldValueRequired",
                       "Required value: must provide at least one DNS nameserver when "
                       "`dnsPolicy` is None"))


def validate_pvc(obj, causes):
    spec = obj.get("spec") or {}
    if not spec.get("accessModes"):
        causes.append(("spec.accessModes", "FieldValueRequired",
                       "Required value: at least 1 access mode is required"))
    if not ((spec.get("resources") or {}).get("requests") or {}).get("storage"):
        causes.append(("spec.resources[storage]", "FieldValueRequired", "Required value"))


def validate_np(obj, causes):
    spec = obj.get("spec")
    if not isinstance(spec, dict):
        return
    for kind in ("ingress", "egress"):
        for i, rule in enumerate(spec.get(kind) or []):
            for j, peer in enumerate(rule.get("to" if kind == "egress" else "from") or []):
                block = peer.get("ipBlock")
                if block is not None and not re.match(r"^[0-9a-fA-F:.]+/\d{1,3}$",
                                                      str(block.get("cidr", ""))):
                    field = "spec.%s[%d].%s[%d].ipBlock.cidr" % (
                        kind, i, "to" if kind == "egress" else "from", j)
                    causes.append((field, "FieldValueInvalid", 'Invalid value: "%s": must be '
                                   "a valid CIDR value, (e.g. 10.9.8.0/24 or 2001:db8::/64)"
                                   % block.get("cidr", "")))


VALIDATORS = {"Pod": validate_pod, "PersistentVolumeClaim": validate_pvc,
              "NetworkPolicy": validate_np}


def validate(obj, res):
    causes = []
    validate_meta(obj, res, causes)
    v = VALIDATORS.get(res.kind)
    if v:
        v(obj, causes)
    if causes:
        raise invalid(res, (obj.get("metadata") or {}).get("name") or "", causes)


# ---------------------------------------------------------------------------------------------
# Known fields (k8s.io/api 1.32) for fieldValidation: Strict → 400, Warn (the default) → a 299
# Warning header, Ignore → nothing. ANY is any value, MAP a free-form map, [x] a list of x.

ANY, MAP = "any", "map"


def fields(*names, **typed):
    out = {n: ANY for n in names}
    out.update(typed)
    return out


LABEL_SELECTOR = fields(matchLabels=MAP, matchExpressions=[fields("key", "operator", "values")])
OBJECT_META = fields("name", "generateName", "namespace", "uid", "resourceVersion", "generation",
                     "creationTimestamp", "deletionTimestamp", "deletionGracePeriodSeconds",
                     "finalizers", "managedFields", "selfLink", labels=MAP, annotations=MAP,
                     ownerReferences=[fields("apiVersion", "kind", "name", "uid", "controller",
                                             "blockOwnerDeletion")])
PROFILE = fields("type", "localhostProfile")
SECURITY_CONTEXT = fields("privileged", "seLinuxOptions", "windowsOptions", "runAsUser",
                          "runAsGroup", "runAsNonRoot", "readOnlyRootFilesystem",
                          "allowPrivilegeEscalation", "procMount",
                          capabilities=fields("add", "drop"), seccompProfile=PROFILE,
                          appArmorProfile=PROFILE)
POD_SECURITY_CONTEXT = fields("seLinuxOptions", "windowsOptions", "runAsUser", "runAsGroup",
                              "runAsNonRoot", "supplementalGroups", "supplementalGroupsPolicy",
                              "fsGroup", "sysctls", "fsGroupChangePolicy", "seLinuxChangePolicy",
                              seccompProfile=PROFILE, appArmorProfile=PROFILE)
CONTAINER = fields("name", "image", "command", "args", "workingDir", "ports", "envFrom",
                   "resizePolicy", "restartPolicy", "volumeDevices", "livenessProbe",
                   "readinessProbe", "startupProbe", "lifecycle", "terminationMessagePath",
                   "terminationMessagePolicy", "imagePullPolicy", "stdin", "stdinOnce", "tty",
                   env=[fields("name", "value", "valueFrom")],
                   resources=fields("claims", limits=MAP, requests=MAP),
                   volumeMounts=[fields("name", "readOnly", "recursiveReadOnly", "mountPath",
                                        "subPath", "mountPropagation", "subPathExpr")],
                   securityContext=SECURITY_CONTEXT)
VOLUME = fields("name", "hostPath", "secret", "nfs", "iscsi", "glusterfs", "rbd", "flexVolume",
                "cinder", "cephfs", "flocker", "downwardAPI", "fc", "azureFile", "configMap",
                "vsphereVolume", "quobyte", "azureDisk", "photonPersistentDisk", "projected",
                "portworxVolume", "scaleIO", "storageos", "csi", "ephemeral", "gcePersistentDisk",
                "awsElasticBlockStore", "gitRepo",
                emptyDir=fields("medium", "sizeLimit"),
                persistentVolumeClaim=fields("claimName", "readOnly"),
                image=fields("reference", "pullPolicy"))
POD_SPEC = fields("restartPolicy", "terminationGracePeriodSeconds", "activeDeadlineSeconds",
                  "dnsPolicy", "serviceAccountName", "serviceAccount",
                  "automountServiceAccountToken", "nodeName", "hostNetwork", "hostPID",
                  "hostIPC", "shareProcessNamespace", "hostname", "subdomain", "affinity",
                  "schedulerName", "tolerations", "hostAliases", "priorityClassName", "priority",
                  "readinessGates", "runtimeClassName", "enableServiceLinks", "preemptionPolicy",
                  "topologySpreadConstraints", "setHostnameAsFQDN", "hostUsers",
                  "schedulingGates", "resourceClaims", "resources", "ephemeralContainers",
                  nodeSelector=MAP, overhead=MAP, volumes=[VOLUME], containers=[CONTAINER],
                  initContainers=[CONTAINER], securityContext=POD_SECURITY_CONTEXT,
                  imagePullSecrets=[fields("name")], os=fields("name"),
                  dnsConfig=fields("nameservers", "searches", "options"))
PEER = fields(podSelector=LABEL_SELECTOR, namespaceSelector=LABEL_SELECTOR,
              ipBlock=fields("cidr", "except"))
PORTS = [fields("protocol", "port", "endPort")]
SCHEMAS = {
    "Pod": fields("apiVersion", "kind", "status", metadata=OBJECT_META, spec=POD_SPEC),
    "PersistentVolumeClaim": fields("apiVersion", "kind", "status", metadata=OBJECT_META,
                                    spec=fields("accessModes", "selector", "volumeName",
                                                "storageClassName", "volumeMode", "dataSource",
                                                "dataSourceRef", "volumeAttributesClassName",
                                                resources=fields(limits=MAP, requests=MAP))),
    "NetworkPolicy": fields("apiVersion", "kind", "status", metadata=OBJECT_META,
                            spec=fields("policyTypes", podSelector=LABEL_SELECTOR,
                                        ingress=[fields(ports=PORTS, **{"from": [PEER]})],
                                        egress=[fields(ports=PORTS, to=[PEER])])),
    "Namespace": fields("apiVersion", "kind", "spec", "status", metadata=OBJECT_META),
}


def unknown_fields(value, schema, path=""):
    """→ the dotted paths (with [i] for list items) of fields the schema does not know."""
    if schema in (ANY, MAP) or value is None:
        return []
    if isinstance(schema, list):
        if not isinstance(value, list):
            return []
        out = []
        for i, item in enumerate(value):
            out += unknown_fields(item, schema[0], "%s[%d]" % (path, i))
        return out
    if not isinstance(value, dict):
        return []
    out = []
    for k, v in value.items():
        if k.startswith("$"):
            continue
        sub = "%s.%s" % (path, k) if path else k
        if k not in schema:
            out.append(sub)
        else:
            out += unknown_fields(v, schema[k], sub)
    return out


# ---------------------------------------------------------------------------------------------
# Selectors


def split_top(s):
    out, depth, cur = [], 0, ""
    for ch in s:
        if ch == "(":
            depth += 1
        elif ch == ")":
            depth -= 1
        if ch == "," and depth == 0:
            out.append(cur)
            cur = ""
        else:
            cur += ch
    if cur:
        out.append(cur)
    return out


def parse_label_selector(s):
    """→ list of (key, op, values); 400 for what labels.Parse refuses."""
    reqs = []
    for part in split_top(s or ""):
        p = part.strip()
        if not p:
            continue
        m = re.match(r"^(\S+)\s+(in|notin)\s*\((.*)\)$", p)
        if m:
            vals = [v.strip() for v in m.group(3).split(",") if v.strip()]
            reqs.append((m.group(1), m.group(2), vals))
        elif p.startswith("!"):
            reqs.append((p[1:].strip(), "!", []))
        elif "!=" in p:
            k, v = p.split("!=", 1)
            reqs.append((k.strip(), "!=", [v.strip()]))
        elif "==" in p:
            k, v = p.split("==", 1)
            reqs.append((k.strip(), "=", [v.strip()]))
        elif "=" in p:
            k, v = p.split("=", 1)
            reqs.append((k.strip(), "=", [v.strip()]))
        else:
            reqs.append((p, "exists", []))
    for k, _, vals in reqs:
        causes = []
        check_qualified_key(k, "key", causes)
        if causes or any(not LABEL_VALUE.match(v) or len(v) > 63 for v in vals):
            raise bad_request("unable to parse requirement: %s" % (causes[0][2] if causes else
                                                                   "invalid label value"))
    return reqs


def labels_match(reqs, labels):
    for k, op, vals in reqs:
        have = k in labels
        v = labels.get(k)
        if op == "=" and v != vals[0]:
            return False
        if op == "!=" and have and v == vals[0]:
            return False
        if op == "in" and v not in vals:
            return False
        if op == "notin" and have and v in vals:
            return False
        if op == "exists" and not have:
            return False
        if op == "!" and have:
            return False
    return True


FIELDS = {"Pod": ("metadata.name", "metadata.namespace", "spec.nodeName", "status.phase",
                  "spec.restartPolicy"),
          "PersistentVolumeClaim": ("metadata.name", "metadata.namespace"),
          "NetworkPolicy": ("metadata.name", "metadata.namespace"),
          "Namespace": ("metadata.name", "status.phase"),
          "Event": ("metadata.name", "metadata.namespace", "involvedObject.kind",
                    "involvedObject.name", "involvedObject.namespace", "involvedObject.uid",
                    "reason", "type", "source", "reportingComponent")}


def parse_field_selector(s, res):
    reqs = []
    for p in (s or "").split(","):
        p = p.strip()
        if not p:
            continue
        m = re.match(r"^([^=!]+)(==|=|!=)(.*)$", p)
        if not m:
            raise bad_request('invalid selector: \'%s\'; can\'t understand \'%s\'' % (s, p))
        f, op, v = m.group(1).strip(), m.group(2), m.group(3).strip()
        if f not in FIELDS.get(res.kind, ()):
            raise bad_request('field label not supported: %s' % f)
        reqs.append((f, op != "!=", v))
    return reqs


def field_value(obj, path):
    cur = obj
    for part in path.split("."):
        cur = cur.get(part) if isinstance(cur, dict) else None
    return cur or ""


def fields_match(reqs, obj):
    return all((field_value(obj, f) == v) == eq for f, eq, v in reqs)


# ---------------------------------------------------------------------------------------------
# Patches: JSON merge patch (RFC 7386), JSON patch (RFC 6902), strategic merge patch (subset)


def merge_patch(target, patch):
    if not isinstance(patch, dict):
        return copy.deepcopy(patch)
    out = copy.deepcopy(target) if isinstance(target, dict) else {}
    for k, v in patch.items():
        if v is None:
            out.pop(k, None)
        else:
            out[k] = merge_patch(out.get(k), v)
    return out


class PatchError(Exception):
    pass


def pointer_parts(ptr):
    if ptr == "":
        return []
    if not ptr.startswith("/"):
        raise PatchError('invalid JSON pointer "%s"' % ptr)
    return [p.replace("~1", "/").replace("~0", "~") for p in ptr[1:].split("/")]


def pointer_parent(doc, parts):
    cur = doc
    for p in parts[:-1]:
        if isinstance(cur, list):
            try:
                cur = cur[int(p)]
            except (ValueError, IndexError):
                raise PatchError("doc is missing path: %s" % "/".join(parts))
        elif isinstance(cur, dict) and p in cur:
            cur = cur[p]
        else:
            raise PatchError("doc is missing path: /%s: missing value" % "/".join(parts))
    return cur


def pointer_get(doc, ptr):
    parts = pointer_parts(ptr)
    if not parts:
        return doc
    parent = pointer_parent(doc, parts)
    last = parts[-1]
    if isinstance(parent, list):
        try:
            return parent[int(last)]
        except (ValueError, IndexError):
            raise PatchError("doc is missing path: %s" % ptr)
    if not isinstance(parent, dict) or last not in parent:
        raise PatchError("doc is missing path: %s" % ptr)
    return parent[last]


def json_patch(doc, ops):
    doc = copy.deepcopy(doc)
    if not isinstance(ops, list):
        raise PatchError("json patch must be a list of operations")
    for op in ops:
        kind, path = op.get("op"), op.get("path", "")
        parts = pointer_parts(path)
        if kind == "test":
            try:
                have = pointer_get(doc, path)
            except PatchError:
                have = None
            if have != op.get("value"):
                raise PatchError("testing value %s failed: test failed" % path)
            continue
        if kind in ("move", "copy"):
            value = copy.deepcopy(pointer_get(doc, op.get("from", "")))
            if kind == "move":
                json_patch_remove(doc, pointer_parts(op.get("from", "")))
            json_patch_add(doc, parts, value)
        elif kind == "add":
            json_patch_add(doc, parts, copy.deepcopy(op.get("value")))
        elif kind == "remove":
            json_patch_remove(doc, parts)
        elif kind == "replace":
            pointer_get(doc, path)
            json_patch_remove(doc, parts)
            json_patch_add(doc, parts, copy.deepcopy(op.get("value")))
        else:
            raise PatchError('Unexpected kind: %s' % kind)
    return doc


def json_patch_add(doc, parts, value):
    if not parts:
        raise PatchError("cannot replace the whole document")
    parent = pointer_parent(doc, parts)
    last = parts[-1]
    if isinstance(parent, list):
        if last == "-":
            parent.append(value)
        else:
            try:
                i = int(last)
            except ValueError:
                raise PatchError("invalid index %s" % last)
            if i < 0 or i > len(parent):
                raise PatchError("add operation does not apply: index out of range")
            parent.insert(i, value)
    elif isinstance(parent, dict):
        parent[last] = value
    else:
        raise PatchError("add operation does not apply: doc is missing path")


def json_patch_remove(doc, parts):
    parent = pointer_parent(doc, parts)
    last = parts[-1]
    try:
        if isinstance(parent, list):
            del parent[int(last)]
        else:
            del parent[last]
    except (KeyError, ValueError, IndexError, TypeError):
        raise PatchError("remove operation does not apply: doc is missing path: /%s"
                         % "/".join(parts))


# strategic merge: lists merged by these keys (the patchMergeKey tags of k8s.io/api), others
# replaced; "$patch" and "$deleteFromPrimitiveList/..." understood, "$setElementOrder/..." and
# "$retainKeys" accepted and ignored.
MERGE_KEYS = {"containers": "name", "initContainers": "name", "ephemeralContainers": "name",
              "volumes": "name", "volumeMounts": "mountPath", "env": "name",
              "ports": "containerPort", "conditions": "type", "imagePullSecrets": "name",
              "ownerReferences": "uid", "tolerations": None, "finalizers": "$primitive",
              "hostAliases": "ip", "topologySpreadConstraints": "topologyKey"}


def strategic_merge(target, patch, key_name=None):
    if not isinstance(patch, dict):
        return copy.deepcopy(patch)
    if patch.get("$patch") == "replace":
        return {k: copy.deepcopy(v) for k, v in patch.items() if k != "$patch"}
    out = copy.deepcopy(target) if isinstance(target, dict) else {}
    for k, v in patch.items():
        if k.startswith("$setElementOrder/") or k in ("$retainKeys", "$patch"):
            continue
        if k.startswith("$deleteFromPrimitiveList/"):
            name = k.split("/", 1)[1]
            out[name] = [x for x in out.get(name) or [] if x not in v]
            continue
        if v is None:
            out.pop(k, None)
        elif isinstance(v, list) and k in MERGE_KEYS and MERGE_KEYS[k]:
            out[k] = strategic_merge_list(out.get(k) or [], v, MERGE_KEYS[k])
        else:
            out[k] = strategic_merge(out.get(k), v, k)
    return out


def strategic_merge_list(target, patch, key):
    if key == "$primitive":
        out = list(target)
        for x in patch:
            if x not in out:
                out.append(x)
        return out
    out = [copy.deepcopy(x) for x in target]
    for item in patch:
        if not isinstance(item, dict) or key not in item:
            if isinstance(item, dict) and item.get("$patch") == "replace":
                return []
            out.append(copy.deepcopy(item))
            continue
        idx = next((i for i, x in enumerate(out) if isinstance(x, dict)
                    and x.get(key) == item[key]), None)
        if item.get("$patch") == "delete":
            if idx is not None:
                del out[idx]
        elif idx is None:
            out.append(strategic_merge({}, item))
        else:
            out[idx] = strategic_merge(out[idx], item)
    return out


# ---------------------------------------------------------------------------------------------
# Protobuf: just enough to read kubectl's SelfSubjectAccessReview (envelope "k8s\0" + Unknown)


def pb_fields(buf):
    i, out = 0, []
    while i < len(buf):
        key, i = pb_varint(buf, i)
        num, wt = key >> 3, key & 7
        if wt == 0:
            val, i = pb_varint(buf, i)
        elif wt == 2:
            n, i = pb_varint(buf, i)
            if i + n > len(buf):
                raise ValueError("truncated protobuf")
            val, i = buf[i:i + n], i + n
        elif wt == 1:
            val, i = buf[i:i + 8], i + 8
        elif wt == 5:
            val, i = buf[i:i + 4], i + 4
        else:
            raise ValueError("unsupported wire type %d" % wt)
        out.append((num, val))
    return out


def pb_varint(buf, i):
    shift = val = 0
    while True:
        if i >= len(buf) or shift > 63:
            raise ValueError("bad varint")
        b = buf[i]
        i += 1
        val |= (b & 0x7F) << shift
        shift += 7
        if not b & 0x80:
            return val, i


def ssar_from_protobuf(body):
    if not body.startswith(b"k8s\x00"):
        raise ValueError("missing k8s protobuf envelope")
    raw = b"".join(v for n, v in pb_fields(body[4:]) if n == 2)
    spec = {}
    for n, v in pb_fields(raw):
        if n != 2:
            continue
        for sn, sv in pb_fields(v):
            if sn == 1:
                names = {1: "namespace", 2: "verb", 3: "group", 4: "version", 5: "resource",
                         6: "subresource", 7: "name"}
                spec["resourceAttributes"] = {names[fn]: fv.decode() for fn, fv in pb_fields(sv)
                                              if fn in names}
            elif sn == 2:
                names = {1: "path", 2: "verb"}
                spec["nonResourceAttributes"] = {names[fn]: fv.decode()
                                                 for fn, fv in pb_fields(sv) if fn in names}
    return {"apiVersion": "authorization.k8s.io/v1", "kind": "SelfSubjectAccessReview",
            "metadata": {}, "spec": spec}


# ---------------------------------------------------------------------------------------------
# The store: objects, one global resourceVersion, watch history


def obj_key(res, ns, name):
    return (res.group, res.plural, ns if res.namespaced else "", name)


class Store:
    def __init__(self, history):
        self.lock = threading.RLock()
        self.cond = threading.Condition(self.lock)
        self.rv = 1
        self.objects = {}
        self.history = []
        self.history_max = history
        self.floor = 1
        self.stopping = False

    def next_rv(self):
        self.rv += 1
        return self.rv

    def record(self, etype, res, obj, old):
        """Under lock: append a watch event for obj (already stamped with the new rv)."""
        self.history.append((self.rv, etype, res, copy.deepcopy(obj), old))
        if len(self.history) > self.history_max:
            drop = len(self.history) - self.history_max
            self.floor = self.history[drop - 1][0]
            del self.history[:drop]
        self.cond.notify_all()

    def put(self, res, obj, etype, old=None):
        """Under lock: stamp a fresh rv, store, record."""
        meta = obj["metadata"]
        meta["resourceVersion"] = str(self.next_rv())
        self.objects[obj_key(res, meta.get("namespace", ""), meta["name"])] = obj
        self.record(etype, res, obj, old)
        return obj

    def remove(self, res, obj):
        meta = obj["metadata"]
        self.objects.pop(obj_key(res, meta.get("namespace", ""), meta["name"]), None)
        obj = copy.deepcopy(obj)
        obj["metadata"]["resourceVersion"] = str(self.next_rv())
        self.record("DELETED", res, obj, None)
        return obj

    def get(self, res, ns, name):
        return self.objects.get(obj_key(res, ns, name))

    def items(self, res, ns=None):
        out = [o for (g, p, n, _), o in self.objects.items()
               if g == res.group and p == res.plural and (ns is None or n == ns)]
        out.sort(key=lambda o: (o["metadata"].get("namespace", ""), o["metadata"]["name"]))
        return out

    def compact(self):
        with self.lock:
            self.floor = self.rv
            self.history = []
            self.cond.notify_all()


# ---------------------------------------------------------------------------------------------
# Settings the control API changes


class Settings:
    def __init__(self, args):
        self.lock = threading.Lock()
        self.schedule_ms = args.schedule_ms
        self.start_ms = args.start_ms
        self.terminating_ms = args.terminating_ms
        self.pvc_bind_ms = args.pvc_bind_ms
        self.bookmark_interval = args.bookmark_interval
        self.pod_failures = []
        self.pvc_pending = []
        self.rules = []
        self.enforce = True
        self.faults = []
        self.drop_watches = 0
        self.drop_execs = []
        if args.rules:
            with open(args.rules) as f:
                self.rules = json.load(f).get("rules", [])

    def public(self):
        return {"scheduleDelayMs": self.schedule_ms, "startDelayMs": self.start_ms,
                "terminatingMs": self.terminating_ms, "pvcBindDelayMs": self.pvc_bind_ms,
                "bookmarkInterval": self.bookmark_interval, "podFailures": self.pod_failures,
                "pvcPending": self.pvc_pending, "rules": self.rules, "enforce": self.enforce,
                "faults": self.faults, "dropWatches": self.drop_watches,
                "dropExecs": self.drop_execs}


class Counters:
    CLASSES = ("reads", "writes", "watches", "execs", "reviews", "discovery", "unauthorized",
               "connections", "tlsResumed")

    def __init__(self):
        self.lock = threading.Lock()
        self.reset()

    def reset(self):
        with self.lock:
            old = getattr(self, "data", None)
            self.data = {c: 0 for c in self.CLASSES}
            self.data["byVerb"] = {}
            self.data["h2Negotiated"] = 0
            return old

    def count(self, cls, verb_key=None):
        with self.lock:
            self.data[cls] = self.data.get(cls, 0) + 1
            if verb_key:
                self.data["byVerb"][verb_key] = self.data["byVerb"].get(verb_key, 0) + 1

    def snapshot(self):
        with self.lock:
            return copy.deepcopy(self.data)


VERB_CLASS = {"get": "reads", "list": "reads", "create": "writes", "update": "writes",
              "patch": "writes", "delete": "writes", "deletecollection": "writes",
              "watch": "watches", "exec": "execs"}


class RequestLog:
    def __init__(self, path, limit=20000):
        self.lock = threading.Lock()
        self.entries = []
        self.seq = 0
        self.limit = limit
        self.file = open(path, "a") if path else None

    def add(self, entry):
        with self.lock:
            self.seq += 1
            entry["seq"] = self.seq
            self.entries.append(entry)
            if len(self.entries) > self.limit:
                del self.entries[:len(self.entries) - self.limit]
            if self.file:
                self.file.write(json.dumps(entry) + "\n")
                self.file.flush()

    def since(self, seq):
        with self.lock:
            return [e for e in self.entries if e["seq"] > seq], self.seq

    def reset(self):
        with self.lock:
            self.entries = []


# ---------------------------------------------------------------------------------------------
# Object defaults and the parts the controllers and the "kubelet" own


GENERATE_CHARS = "bcdfghjklmnpqrstvwxz2456789"


def container_status_base(c, pod):
    return {"name": c["name"], "image": c["image"], "imageID": "", "ready": False,
            "started": False, "restartCount": 0, "state": {"waiting": {"reason":
                                                                      "ContainerCreating"}},
            "lastState": {}}


def default_pod(obj):
    spec = obj.setdefault("spec", {})
    spec.setdefault("restartPolicy", "Always")
    spec.setdefault("terminationGracePeriodSeconds", 30)
    spec.setdefault("dnsPolicy", "ClusterFirst")
    spec.setdefault("schedulerName", "default-scheduler")
    spec.setdefault("serviceAccountName", "default")
    spec.setdefault("serviceAccount", spec["serviceAccountName"])
    spec.setdefault("securityContext", {})
    spec.setdefault("enableServiceLinks", True)
    spec.setdefault("preemptionPolicy", "PreemptLowerPriority")
    spec.setdefault("priority", 0)
    for c in spec.get("containers") or []:
        c.setdefault("imagePullPolicy", "Always" if c.get("image", "").endswith(":latest")
                     or ":" not in c.get("image", "").rsplit("/", 1)[-1] else "IfNotPresent")
        c.setdefault("terminationMessagePath", "/dev/termination-log")
        c.setdefault("terminationMessagePolicy", "File")
        c.setdefault("resources", {})
    for v in spec.get("volumes") or []:
        if "emptyDir" in v and v["emptyDir"] is None:
            v["emptyDir"] = {}
    obj["status"] = {"phase": "Pending", "qosClass": qos_class(spec)}


def qos_class(spec):
    res = [c.get("resources") or {} for c in spec.get("containers") or []]
    if not any(r.get("limits") or r.get("requests") for r in res):
        return "BestEffort"
    if all((r.get("limits") or {}).get("cpu") and (r.get("limits") or {}).get("memory")
           and (r.get("requests") or r.get("limits")) == r.get("limits") for r in res):
        return "Guaranteed"
    return "Burstable"


def default_pvc(obj, settings):
    spec = obj.setdefault("spec", {})
    spec.setdefault("volumeMode", "Filesystem")
    if "storageClassName" not in spec:
        spec["storageClassName"] = "standard"
    obj["metadata"].setdefault("finalizers", ["kubernetes.io/pvc-protection"])
    obj["status"] = {"phase": "Pending"}


def default_np(obj):
    spec = obj.setdefault("spec", {})
    spec.setdefault("podSelector", {})
    if "policyTypes" not in spec:
        spec["policyTypes"] = ["Ingress"] + (["Egress"] if "egress" in spec else [])


def default_ns(obj):
    obj.setdefault("spec", {"finalizers": ["kubernetes"]})
    obj["status"] = {"phase": "Active"}
    obj["metadata"].setdefault("labels", {})["kubernetes.io/metadata.name"] = \
        obj["metadata"]["name"]


# ---------------------------------------------------------------------------------------------
# The API server proper


class Fake:
    def __init__(self, args, state):
        self.args = args
        self.state = state
        self.store = Store(args.history)
        self.settings = Settings(args)
        self.counters = Counters()
        self.log = RequestLog(args.log)
        self.token_file = args.token_file or os.path.join(state, "token")
        self.token_cache = (None, {})
        self.admin_token = None
        self.pod_side = {}
        self.event_names = {}
        self.attachments = {}
        self.execs = {}
        self.exec_lock = threading.Lock()
        self.pod_ip = 10
        for ns in ["default", "kube-system", "kube-public", "kube-node-lease"] + \
                (args.namespace or []):
            self.create_namespace(ns)

    # -- auth ---------------------------------------------------------------------------------

    def tokens(self):
        try:
            st = os.stat(self.token_file)
        except OSError:
            return {}
        stamp = (st.st_mtime_ns, st.st_size, st.st_ino)
        if self.token_cache[0] != stamp:
            table = {}
            with open(self.token_file) as f:
                for line in f:
                    parts = line.split()
                    if parts and not parts[0].startswith("#"):
                        table[parts[0]] = parts[1] if len(parts) > 1 else "fake-user"
            self.token_cache = (stamp, table)
        return self.token_cache[1]

    def authenticate(self, headers, peercert):
        auth = headers.get("Authorization", "")
        if auth.startswith("Bearer "):
            return self.tokens().get(auth[7:].strip())
        if peercert:
            for rdn in peercert.get("subject", ()):
                for k, v in rdn:
                    if k == "commonName":
                        return v
        return None

    def authorize(self, user, verb, group, resource, subresource, ns, name):
        """→ (allowed, reason, evaluationError, reviewCode) from the first matching rule."""
        for r in self.settings.rules:
            def m(field, value):
                want = r.get(field, "*")
                return want == "*" or want == value
            if (m("verb", verb) and m("resource", resource) and m("group", group)
                    and m("subresource", subresource or "") and m("namespace", ns or "")
                    and m("name", name or "") and m("user", user or "")):
                return (bool(r.get("allowed", False)), r.get("reason", ""),
                        r.get("evaluationError", ""), r.get("reviewCode"))
        return True, "RBAC: allowed by ClusterRoleBinding \"fake-admin\" of ClusterRole " \
                     "\"cluster-admin\" to User \"%s\"" % user, "", None

    # -- namespaces ---------------------------------------------------------------------------

    def create_namespace(self, name):
        res = RESOURCES[("", "namespaces")]
        with self.store.lock:
            if self.store.get(res, "", name):
                return
            obj = {"apiVersion": "v1", "kind": "Namespace",
                   "metadata": {"name": name, "uid": str(uuid.uuid4()),
                                "creationTimestamp": now_rfc3339()}}
            default_ns(obj)
            self.store.put(res, obj, "ADDED")

    def require_namespace(self, ns):
        if not self.store.get(RESOURCES[("", "namespaces")], "", ns):
            raise ApiError(404, "NotFound", 'namespaces "%s" not found' % ns,
                           {"name": ns, "kind": "namespaces"})

    # -- CRUD ---------------------------------------------------------------------------------

    def create(self, res, ns, body, dry_run=False):
        if not isinstance(body, dict):
            raise bad_request("%s in version \"%s\" cannot be handled as a %s: body is not an "
                              "object" % (res.kind, res.version, res.kind))
        if body.get("kind") not in (None, res.kind) or body.get("apiVersion") not in (
                None, res.api_version):
            raise bad_request("%s in version \"%s\" cannot be handled as a %s: the object "
                              "has kind %s, apiVersion %s" % (res.kind, res.version, res.kind,
                                                              body.get("kind"),
                                                              body.get("apiVersion")))
        obj = copy.deepcopy(body)
        obj["apiVersion"], obj["kind"] = res.api_version, res.kind
        meta = obj.setdefault("metadata", {})
        if not isinstance(meta, dict):
            raise invalid(res, "", [("metadata", "FieldValueInvalid", "Invalid value: not an "
                                     "object")])
        if res.namespaced:
            if meta.get("namespace") not in (None, "", ns):
                raise bad_request("the namespace of the provided object does not match the "
                                  "namespace sent on the request")
            meta["namespace"] = ns
        if not meta.get("name") and meta.get("generateName"):
            meta["name"] = meta["generateName"] + "".join(random.choice(GENERATE_CHARS)
                                                          for _ in range(5))
        for k in ("uid", "resourceVersion", "creationTimestamp", "deletionTimestamp",
                  "deletionGracePeriodSeconds", "generation", "managedFields", "selfLink"):
            meta.pop(k, None)
        validate(obj, res)
        with self.store.lock:
            if res.namespaced:
                self.require_namespace(ns)
            if self.store.get(res, ns, meta["name"]):
                raise already_exists(res, meta["name"])
            meta["uid"] = str(uuid.uuid4())
            meta["creationTimestamp"] = now_rfc3339()
            if res.kind == "Pod":
                default_pod(obj)
            elif res.kind == "PersistentVolumeClaim":
                default_pvc(obj, self.settings)
            elif res.kind == "NetworkPolicy":
                default_np(obj)
                meta["generation"] = 1
            elif res.kind == "Namespace":
                default_ns(obj)
            if dry_run:
                return obj
            if res.kind == "Pod":
                self.pod_side[meta["uid"]] = {"created": time.monotonic()}
            if res.kind == "PersistentVolumeClaim":
                self.pod_side[meta["uid"]] = {"created": time.monotonic()}
            return copy.deepcopy(self.store.put(res, obj, "ADDED"))

    def get(self, res, ns, name):
        with self.store.lock:
            obj = self.store.get(res, ns, name)
            if obj is None:
                raise not_found(res, name)
            return copy.deepcopy(obj)

    def list(self, res, ns, query):
        lsel = parse_label_selector(query.get("labelSelector", [""])[0])
        fsel = parse_field_selector(query.get("fieldSelector", [""])[0], res)
        limit = int(query.get("limit", ["0"])[0] or 0)
        if query.get("resourceVersion", [""])[0] == "0":
            limit = 0
        cont = query.get("continue", [""])[0]
        with self.store.lock:
            rv = str(self.store.rv)
            items = [copy.deepcopy(o) for o in self.store.items(res, ns)
                     if labels_match(lsel, o["metadata"].get("labels") or {})
                     and fields_match(fsel, o)]
        start = 0
        if cont:
            try:
                token = json.loads(base64.urlsafe_b64decode(cont.encode()))
                after = token["after"]
            except (ValueError, KeyError, TypeError):
                raise bad_request("continue key is not valid: incorrect encoded start "
                                  "resourceVersion (version meta.k8s.io/v1)")
            start = next((i for i, o in enumerate(items) if (o["metadata"].get("namespace", ""),
                          o["metadata"]["name"]) > tuple(after)), len(items))
        page = items[start:]
        meta = {"resourceVersion": rv}
        if limit and len(page) > limit:
            last = page[limit - 1]["metadata"]
            meta["continue"] = base64.urlsafe_b64encode(json.dumps(
                {"after": [last.get("namespace", ""), last["name"]]}).encode()).decode()
            meta["remainingItemCount"] = len(page) - limit
            page = page[:limit]
        for o in page:
            o.pop("kind", None)
            o.pop("apiVersion", None)
        return {"kind": res.kind + "List", "apiVersion": res.api_version, "metadata": meta,
                "items": page}

    def check_update(self, res, old, new):
        """The immutable-field rules of an update: 422 like the real validation."""
        name = old["metadata"]["name"]
        if res.kind == "Pod":
            a, b = copy.deepcopy(old["spec"]), copy.deepcopy(new.get("spec") or {})
            for s in (a, b):
                for c in s.get("containers") or []:
                    c.pop("image", None)
                s.pop("activeDeadlineSeconds", None)
                s.pop("tolerations", None)
                s.pop("nodeName", None)
            default_pod({"spec": b})
            if a != b:
                raise invalid(res, name, [("spec", "FieldValueForbidden",
                                           "Forbidden: pod updates may not change fields other "
                                           "than `spec.containers[*].image`,"
                                           "`spec.initContainers[*].image`,"
                                           "`spec.activeDeadlineSeconds`,`spec.tolerations` "
                                           "(only additions to existing tolerations),"
                                           "`spec.terminationGracePeriodSeconds` (allow it to be "
                                           "set to 1 if it was previously negative)")])
        if res.kind == "PersistentVolumeClaim":
            a, b = copy.deepcopy(old["spec"]), copy.deepcopy(new.get("spec") or {})
            for s in (a, b):
                s.pop("resources", None)
                s.pop("volumeName", None)
                s.pop("volumeAttributesClassName", None)
            b.setdefault("volumeMode", "Filesystem")
            b.setdefault("storageClassName", a.get("storageClassName"))
            if a != b:
                raise invalid(res, name, [("spec", "FieldValueForbidden",
                                           "Forbidden: spec is immutable after creation except "
                                           "resources.requests and volumeAttributesClassName "
                                           "for bound claims")])

    def replace(self, res, ns, name, new, old, require_rv, dry_run=False):
        """Under lock: the shared tail of update and patch."""
        meta = new.get("metadata")
        if not isinstance(meta, dict):
            raise invalid(res, name, [("metadata", "FieldValueRequired", "Required value")])
        if meta.get("name", name) != name:
            raise bad_request("the name of the object (%s) does not match the name on the URL "
                              "(%s)" % (meta.get("name"), name))
        if res.namespaced and meta.get("namespace") not in (None, "", ns):
            raise bad_request("the namespace of the provided object does not match the "
                              "namespace sent on the request")
        rv = meta.get("resourceVersion")
        if require_rv and not rv:
            raise invalid(res, name, [("metadata.resourceVersion", "FieldValueInvalid",
                                       "Invalid value: 0x0: must be specified for an update")])
        if rv and rv != old["metadata"]["resourceVersion"]:
            raise conflict(res, name)
        if meta.get("uid") and meta["uid"] != old["metadata"]["uid"]:
            raise conflict(res, name, "Precondition failed: UID in precondition: %s, UID in "
                           "object meta: %s" % (meta["uid"], old["metadata"]["uid"]))
        new = copy.deepcopy(new)
        new["apiVersion"], new["kind"] = res.api_version, res.kind
        new["metadata"]["name"] = name
        if res.namespaced:
            new["metadata"]["namespace"] = ns
        validate(new, res)
        self.check_update(res, old, new)
        for k in ("uid", "creationTimestamp", "deletionTimestamp", "deletionGracePeriodSeconds",
                  "generation"):
            if k in old["metadata"]:
                new["metadata"][k] = old["metadata"][k]
            else:
                new["metadata"].pop(k, None)
        new["metadata"].pop("resourceVersion", None)
        new["metadata"].pop("managedFields", None)
        if "status" in old:
            new["status"] = copy.deepcopy(old["status"])
        if res.kind == "Pod":
            node = old["spec"].get("nodeName") or new["spec"].pop("nodeName", None)
            new["spec"]["nodeName"] = node
            if new["spec"]["nodeName"] is None:
                del new["spec"]["nodeName"]
            default_pod_keep_status(new, old)
        if res.kind == "PersistentVolumeClaim":
            new["spec"].setdefault("volumeMode", "Filesystem")
            new["spec"].setdefault("storageClassName", old["spec"].get("storageClassName"))
            if old["spec"].get("volumeName"):
                new["spec"]["volumeName"] = old["spec"]["volumeName"]
        if res.kind == "NetworkPolicy":
            default_np(new)
            if new.get("spec") != old.get("spec"):
                new["metadata"]["generation"] = old["metadata"].get("generation", 1) + 1
        cmp_old = copy.deepcopy(old)
        cmp_old["metadata"].pop("resourceVersion", None)
        if new == cmp_old:
            return copy.deepcopy(old)
        if dry_run:
            new["metadata"]["resourceVersion"] = old["metadata"]["resourceVersion"]
            return new
        if old["metadata"].get("deletionTimestamp") and not new["metadata"].get("finalizers"):
            self.store.put(res, new, "MODIFIED", old)
            return copy.deepcopy(self.store.remove(res, new))
        return copy.deepcopy(self.store.put(res, new, "MODIFIED", old))

    def update(self, res, ns, name, body, dry_run=False):
        if not isinstance(body, dict):
            raise bad_request("body is not an object")
        with self.store.lock:
            old = self.store.get(res, ns, name)
            if old is None:
                raise not_found(res, name)
            return self.replace(res, ns, name, body, old, True, dry_run)

    def patch(self, res, ns, name, ctype, body, dry_run=False):
        ctype = ctype.split(";")[0].strip()
        with self.store.lock:
            old = self.store.get(res, ns, name)
            if old is None:
                raise not_found(res, name)
            try:
                doc = json.loads(body or b"null")
            except ValueError as e:
                raise bad_request("error decoding patch: %s" % e)
            current = copy.deepcopy(old)
            if ctype == "application/merge-patch+json":
                if not isinstance(doc, dict):
                    raise bad_request("error decoding patch: merge patch must be an object")
                new = merge_patch(current, doc)
            elif ctype == "application/strategic-merge-patch+json":
                if not isinstance(doc, dict):
                    raise bad_request("error decoding patch: strategic merge patch must be an "
                                      "object")
                new = strategic_merge(current, doc)
            elif ctype == "application/json-patch+json":
                try:
                    new = json_patch(current, doc)
                except PatchError as e:
                    raise ApiError(422, "Invalid", "the server rejected our request due to an "
                                   "error in our request", {"causes": [
                                       {"reason": "FieldValueInvalid", "message": str(e),
                                        "field": "patch"}]})
            elif ctype == "application/apply-patch+yaml":
                raise ApiError(415, "UnsupportedMediaType", "the fake API server has no "
                               "server-side apply")
            else:
                raise ApiError(415, "UnsupportedMediaType", "the body of the request was in an "
                               "unknown format - accepted media types include: application/"
                               "json-patch+json, application/merge-patch+json, application/"
                               "strategic-merge-patch+json")
            if not isinstance(new, dict):
                raise bad_request("patch result is not an object")
            return self.replace(res, ns, name, new, old, False, dry_run)

    def delete(self, res, ns, name, opts):
        with self.store.lock:
            obj = self.store.get(res, ns, name)
            if obj is None:
                raise not_found(res, name)
            pre = opts.get("preconditions") or {}
            if pre.get("uid") and pre["uid"] != obj["metadata"]["uid"]:
                raise conflict(res, name, "Precondition failed: UID in precondition: %s, UID in "
                               "object meta: %s" % (pre["uid"], obj["metadata"]["uid"]))
            if pre.get("resourceVersion") and pre["resourceVersion"] != \
                    obj["metadata"]["resourceVersion"]:
                raise conflict(res, name, "Precondition failed: ResourceVersion in precondition: "
                               "%s, ResourceVersion in object meta: %s"
                               % (pre["resourceVersion"], obj["metadata"]["resourceVersion"]))
            if opts.get("dryRun"):
                return 200, copy.deepcopy(obj)
            policy = opts.get("propagationPolicy")
            if opts.get("orphanDependents") is True:
                policy = "Orphan"
            deferred = policy == "Foreground"
            if res.kind == "Pod":
                grace = opts.get("gracePeriodSeconds")
                if grace is None:
                    grace = obj["spec"].get("terminationGracePeriodSeconds", 30)
                grace = max(int(grace), 0)
                if grace == 0 or not obj["spec"].get("nodeName"):
                    self.on_gone(res, obj, policy)
                    return 200, copy.deepcopy(self.store.remove(res, obj))
                side = self.pod_side.setdefault(obj["metadata"]["uid"], {})
                until = time.monotonic() + min(grace, self.settings.terminating_ms / 1000.0)
                side["terminate_at"] = min(side.get("terminate_at", until), until)
                side["policy"] = policy
                if obj["metadata"].get("deletionTimestamp"):
                    return 200, copy.deepcopy(obj)
                new = copy.deepcopy(obj)
                new["metadata"]["deletionTimestamp"] = now_rfc3339(time.time() + grace)
                new["metadata"]["deletionGracePeriodSeconds"] = grace
                self.store.put(res, new, "MODIFIED", obj)
                for c in obj["spec"]["containers"]:
                    self.event(obj, "Normal", "Killing", "Stopping container %s" % c["name"])
                return (202 if deferred else 200), copy.deepcopy(new)
            if obj["metadata"].get("finalizers"):
                if obj["metadata"].get("deletionTimestamp"):
                    return 200, copy.deepcopy(obj)
                new = copy.deepcopy(obj)
                new["metadata"]["deletionTimestamp"] = now_rfc3339()
                new["metadata"]["deletionGracePeriodSeconds"] = 0
                if res.kind == "Namespace":
                    new["status"] = {"phase": "Terminating"}
                self.pod_side.setdefault(obj["metadata"]["uid"], {})["policy"] = policy
                self.store.put(res, new, "MODIFIED", obj)
                return (202 if deferred else 200), copy.deepcopy(new)
            self.on_gone(res, obj, policy)
            return 200, copy.deepcopy(self.store.remove(res, obj))

    def deletecollection(self, res, ns, query, opts):
        listed = self.list(res, ns, query)
        for item in listed["items"]:
            try:
                self.delete(res, item["metadata"].get("namespace", ""), item["metadata"]["name"],
                            opts)
            except ApiError as e:
                if e.code != 404:
                    raise
        return listed

    def on_gone(self, res, obj, policy):
        """Under lock, as obj leaves the store: the garbage collector and the kubelet's part."""
        uid = obj["metadata"]["uid"]
        side = self.pod_side.pop(uid, {})
        policy = policy or side.get("policy")
        if res.kind == "Pod":
            self.kill_execs(uid)
            shutil.rmtree(os.path.join(self.state, "pods", uid), ignore_errors=True)
        if res.kind == "PersistentVolumeClaim":
            self.attachments.pop(uid, None)
            shutil.rmtree(os.path.join(self.state, "volumes", "pvc-" + uid), ignore_errors=True)
        if policy == "Orphan":
            return
        for (g, p, n, name), o in list(self.store.objects.items()):
            refs = o["metadata"].get("ownerReferences") or []
            if any(r.get("uid") == uid for r in refs):
                r = next(r for r in RESOURCES.values() if r.group == g and r.plural == p)
                try:
                    self.delete(r, n, name, {})
                except ApiError:
                    pass

    # -- the controllers and the kubelet: one loop advancing every object --------------------

    def controller_loop(self):
        while True:
            with self.store.lock:
                if self.store.stopping:
                    return
                busy = True
                try:
                    self.reconcile()
                    busy = self.anything_pending()
                except Exception:
                    traceback.print_exc()
                self.store.cond.wait(0.02 if busy else 1.0)

    def anything_pending(self):
        """Under lock: does any object still move on its own? If not the loop sleeps until a
        change (every store write wakes it) or a second has passed."""
        for pvc in self.store.items(RESOURCES[("", "persistentvolumeclaims")]):
            if pvc["metadata"].get("deletionTimestamp") or pvc["status"].get("phase") != "Bound":
                return True
        for pod in self.store.items(RESOURCES[("", "pods")]):
            phase = pod["status"].get("phase")
            if pod["metadata"].get("deletionTimestamp") or phase not in (
                    "Running", "Failed", "Succeeded") or self.pod_failure(pod) or (
                    phase == "Running" and pod["spec"].get("activeDeadlineSeconds") is not None):
                return True
        return any(ns["metadata"].get("deletionTimestamp")
                   for ns in self.store.items(RESOURCES[("", "namespaces")]))

    def reconcile(self):
        now = time.monotonic()
        pods = RESOURCES[("", "pods")]
        pvcs = RESOURCES[("", "persistentvolumeclaims")]
        nss = RESOURCES[("", "namespaces")]
        for pvc in self.store.items(pvcs):
            self.reconcile_pvc(pvcs, pods, pvc, now)
        for pod in self.store.items(pods):
            self.reconcile_pod(pods, pvcs, pod, now)
        for ns in self.store.items(nss):
            if ns["metadata"].get("deletionTimestamp"):
                name = ns["metadata"]["name"]
                left = [o for r in RESOURCES.values() if r.namespaced
                        for o in self.store.items(r, name)]
                for o in left:
                    r = next(r for r in RESOURCES.values() if r.kind == o["kind"])
                    if not o["metadata"].get("deletionTimestamp"):
                        self.delete(r, name, o["metadata"]["name"], {})
                if not left:
                    self.on_gone(nss, ns, None)
                    self.store.remove(nss, ns)

    def reconcile_pvc(self, pvcs, pods, pvc, now):
        meta, uid = pvc["metadata"], pvc["metadata"]["uid"]
        side = self.pod_side.setdefault(uid, {"created": now})
        if meta.get("deletionTimestamp"):
            users = [p for p in self.store.items(pods, meta["namespace"])
                     if meta["name"] in pod_claims(p)]
            if not users:
                self.on_gone(pvcs, pvc, None)
                self.store.remove(pvcs, pvc)
            return
        if pvc["status"].get("phase") == "Bound":
            return
        for rule in self.settings.pvc_pending:
            if re.search(rule.get("name", "^$") if "name" in rule else ".", meta["name"]) and \
                    re.search(rule.get("storageClass", "."),
                              pvc["spec"].get("storageClassName") or ""):
                return
        if now - side["created"] < self.settings.pvc_bind_ms / 1000.0:
            return
        new = copy.deepcopy(pvc)
        new["spec"]["volumeName"] = "pvc-" + uid
        ann = new["metadata"].setdefault("annotations", {})
        ann["pv.kubernetes.io/bind-completed"] = "yes"
        ann["pv.kubernetes.io/bound-by-controller"] = "yes"
        ann["volume.kubernetes.io/storage-provisioner"] = "rancher.io/local-path"
        new["status"] = {"phase": "Bound", "accessModes": pvc["spec"].get("accessModes"),
                         "capacity": {"storage": pvc["spec"]["resources"]["requests"]["storage"]}}
        os.makedirs(os.path.join(self.state, "volumes", "pvc-" + uid), mode=0o777, exist_ok=True)
        os.chmod(os.path.join(self.state, "volumes", "pvc-" + uid), 0o777)
        self.store.put(pvcs, new, "MODIFIED", pvc)

    def pod_failure(self, pod):
        for rule in self.settings.pod_failures:
            if "name" in rule and not re.search(rule["name"], pod["metadata"]["name"]):
                continue
            images = [c.get("image", "") for c in pod["spec"].get("containers") or []]
            if "image" in rule and not any(re.search(rule["image"], i) for i in images):
                continue
            return rule
        return None

    def reconcile_pod(self, pods, pvcs, pod, now):
        meta, uid = pod["metadata"], pod["metadata"]["uid"]
        side = self.pod_side.setdefault(uid, {"created": now})
        if meta.get("deletionTimestamp"):
            if now >= side.get("terminate_at", now):
                self.on_gone(pods, pod, side.get("policy"))
                self.store.remove(pods, pod)
            return
        status = pod["status"]
        spec_node = pod["spec"].get("nodeName")
        failure = self.pod_failure(pod)
        reason = failure.get("reason") if failure else None
        if not spec_node:
            why = None
            if reason == "Unschedulable":
                why = failure.get("message") or "0/1 nodes are available: 1 Insufficient cpu."
            for claim in pod_claims(pod):
                pvc = self.store.get(pvcs, meta["namespace"], claim)
                if pvc is None:
                    why = 'persistentvolumeclaim "%s" not found' % claim
                elif pvc["metadata"].get("deletionTimestamp"):
                    why = 'persistentvolumeclaim "%s" is being deleted' % claim
                elif pvc["status"].get("phase") != "Bound":
                    why = "pod has unbound immediate PersistentVolumeClaims"
                elif "ReadWriteOncePod" in (pvc["spec"].get("accessModes") or []) and any(
                        claim in pod_claims(p) and p["spec"].get("nodeName")
                        for p in self.store.items(pods, meta["namespace"])
                        if p["metadata"]["uid"] != meta["uid"]):
                    why = "0/1 nodes are available: 1 node has pod using PersistentVolumeClaim " \
                          "with the same name and ReadWriteOncePod access mode. preemption: " \
                          "0/1 nodes are available: 1 Preemption is not helpful for scheduling."
            fitting = [n for n in NODES if node_fits(pod, n)]
            if why is None and not fitting:
                why = "0/%d nodes are available: %d node(s) didn't match Pod's node " \
                      "affinity/selector. preemption: 0/%d nodes are available: %d Preemption " \
                      "is not helpful for scheduling." % ((len(NODES),) * 4)
            if why is None and now - side["created"] < self.settings.schedule_ms / 1000.0:
                return
            if why is not None:
                if why.startswith("0/"):
                    message = why
                else:
                    message = "0/%d nodes are available: %s. preemption: 0/%d nodes are " \
                              "available: %d Preemption is not helpful for scheduling." % (
                                  len(NODES), why, len(NODES), len(NODES))
                old = (status.get("conditions") or [{}])[0]
                if old.get("reason") == "Unschedulable" and old.get("message") == message:
                    return
                status = copy.deepcopy(pod["status"])
                status["conditions"] = [{"type": "PodScheduled", "status": "False",
                                         "lastProbeTime": None,
                                         "lastTransitionTime": now_rfc3339(),
                                         "reason": "Unschedulable", "message": message}]
                self.put_status(pods, pod, status)
                self.event(pod, "Warning", "FailedScheduling", message, "default-scheduler")
                return
            load = {n: 0 for n in fitting}
            for p in self.store.items(pods):
                if p["spec"].get("nodeName") in load and \
                        p["status"].get("phase") not in ("Failed", "Succeeded"):
                    load[p["spec"]["nodeName"]] += 1
            node = min(fitting, key=lambda n: (load[n], NODES.index(n)))
            new = copy.deepcopy(pod)
            new["spec"]["nodeName"] = node
            new["status"]["conditions"] = [{"type": "PodScheduled", "status": "True",
                                            "lastProbeTime": None,
                                            "lastTransitionTime": now_rfc3339()}]
            side["scheduled"] = now
            self.store.put(pods, new, "MODIFIED", pod)
            self.event(pod, "Normal", "Scheduled", "Successfully assigned %s/%s to %s"
                       % (meta["namespace"], meta["name"], node), "default-scheduler")
            return
        scheduled = side.setdefault("scheduled", now)
        attached = self.attached_elsewhere(pods, pvcs, pod) \
            if status.get("phase") == "Pending" else None
        if attached:
            if "containerStatuses" not in status:
                self.pod_starting(pods, pod, copy.deepcopy(status))
            if side.get("attach") != attached:
                side["attach"] = attached
                self.event(pod, "Warning", "FailedAttachVolume", attached,
                           "attachdetach-controller")
            side["scheduled"] = now
            return
        if now - scheduled < self.settings.start_ms / 1000.0:
            if "containerStatuses" not in status:
                self.pod_starting(pods, pod, copy.deepcopy(status))
            return
        if status.get("phase") in ("Failed", "Succeeded") and not reason:
            return
        if reason == "Disappear":
            self.on_gone(pods, pod, None)
            self.store.remove(pods, pod)
            return
        if reason:
            self.pod_failing(pods, pod, copy.deepcopy(status), failure, side, now)
            return
        nonroot = self.nonroot_problem(pod)
        if nonroot:
            failure = {"reason": "CreateContainerConfigError", "message": nonroot}
            self.pod_failing(pods, pod, copy.deepcopy(status), failure, side, now)
            return
        if status.get("phase") != "Running":
            self.pod_running(pods, pod, copy.deepcopy(status))
            return
        deadline = pod["spec"].get("activeDeadlineSeconds")
        if deadline is not None and now - scheduled >= float(deadline):
            self.kill_execs(uid)
            status = copy.deepcopy(pod["status"])
            status.update({"phase": "Failed", "reason": "DeadlineExceeded",
                           "message": "Pod was active on the node longer than the specified "
                                      "deadline",
                           "conditions": self.pod_conditions(False, "containers with unready "
                                                             "status: [%s]" % " ".join(
                                                                 c["name"] for c in
                                                                 pod["spec"]["containers"]))})
            for cs in status.get("containerStatuses") or []:
                cs.update({"ready": False, "started": False, "state": {"terminated": {
                    "exitCode": 137, "reason": "Error", "startedAt": now_rfc3339(),
                    "finishedAt": now_rfc3339()}}})
            self.put_status(pods, pod, status)
            self.event(pod, "Normal", "DeadlineExceeded", status["message"])

    def attached_elsewhere(self, pods, pvcs, pod):
        """The attach/detach controller: a ReadWriteOnce volume is attached to one node at a
        time, detached once no live Pod there uses it; a Pod on another node waits in
        ContainerCreating → the Multi-Attach message. None when this Pod may start."""
        meta, node = pod["metadata"], pod["spec"]["nodeName"]
        for claim in pod_claims(pod):
            pvc = self.store.get(pvcs, meta["namespace"], claim)
            if pvc is None or "ReadWriteOnce" not in (pvc["spec"].get("accessModes") or []):
                continue
            uid = pvc["metadata"]["uid"]
            at = self.attachments.get(uid)
            if at is not None and at != node:
                users = [p["metadata"]["name"] for p in self.store.items(pods, meta["namespace"])
                         if p["spec"].get("nodeName") == at and claim in pod_claims(p)
                         and p["status"].get("phase") not in ("Failed", "Succeeded")]
                if users:
                    return 'Multi-Attach error for volume "%s" Volume is already used by ' \
                           'pod(s) %s' % (pvc["spec"].get("volumeName", ""), ", ".join(users))
            self.attachments[uid] = node
        return None

    def nonroot_problem(self, pod):
        psc = pod["spec"].get("securityContext") or {}
        for c in pod["spec"].get("containers") or []:
            csc = c.get("securityContext") or {}
            nonroot = csc.get("runAsNonRoot", psc.get("runAsNonRoot"))
            uid = csc.get("runAsUser", psc.get("runAsUser"))
            if nonroot and not uid:
                return "container has runAsNonRoot and image will run as root (pod: \"%s_%s(%s)\""\
                       ", container: %s)" % (pod["metadata"]["name"], pod["metadata"]["namespace"],
                                             pod["metadata"]["uid"], c["name"])
        return None

    def event(self, obj, etype, reason, message, component="kubelet"):
        """Under lock: a core/v1 Event about obj, deduplicated like the event recorder's
        aggregation (same object, reason and message → count + 1)."""
        events = RESOURCES[("", "events")]
        meta = obj["metadata"]
        key = (meta["uid"], etype, reason, message)
        name = self.event_names.get(key)
        now = now_rfc3339()
        old = self.store.get(events, meta["namespace"], name) if name else None
        if old is not None:
            new = copy.deepcopy(old)
            new["count"] = old.get("count", 1) + 1
            new["lastTimestamp"] = now
            self.store.put(events, new, "MODIFIED", old)
            return
        name = "%s.%s" % (meta["name"], secrets.token_hex(8))
        self.event_names[key] = name
        source = {"component": component}
        host = (obj.get("spec") or {}).get("nodeName") or NODES[0]
        if component == "kubelet":
            source["host"] = host
        ev = {"apiVersion": "v1", "kind": "Event",
              "metadata": {"name": name, "namespace": meta["namespace"],
                           "uid": str(uuid.uuid4()), "creationTimestamp": now},
              "involvedObject": {"kind": obj.get("kind", "Pod"), "namespace": meta["namespace"],
                                 "name": meta["name"], "uid": meta["uid"],
                                 "apiVersion": obj.get("apiVersion", "v1"),
                                 "resourceVersion": meta.get("resourceVersion", "")},
              "reason": reason, "message": message, "source": source,
              "firstTimestamp": now, "lastTimestamp": now, "count": 1, "type": etype,
              "eventTime": None, "reportingComponent": component,
              "reportingInstance": host if component == "kubelet" else ""}
        self.store.put(events, ev, "ADDED")

    def put_status(self, pods, pod, status):
        if status == pod["status"]:
            return
        new = copy.deepcopy(pod)
        new["status"] = status
        self.store.put(pods, new, "MODIFIED", pod)

    def pod_conditions(self, ready, message=None):
        t = now_rfc3339()
        conds = [{"type": "PodReadyToStartContainers", "status": "True"},
                 {"type": "Initialized", "status": "True"},
                 {"type": "Ready", "status": "True" if ready else "False"},
                 {"type": "ContainersReady", "status": "True" if ready else "False"},
                 {"type": "PodScheduled", "status": "True"}]
        for c in conds:
            c["lastProbeTime"] = None
            c["lastTransitionTime"] = t
            if c["status"] == "False":
                c["reason"], c["message"] = "ContainersNotReady", message
        return conds

    def pod_starting(self, pods, pod, status):
        names = [c["name"] for c in pod["spec"]["containers"]]
        status.update({"hostIP": "127.0.0.1", "hostIPs": [{"ip": "127.0.0.1"}],
                       "startTime": now_rfc3339(),
                       "conditions": self.pod_conditions(False, "containers with unready status: "
                                                         "[%s]" % " ".join(names)),
                       "containerStatuses": [container_status_base(c, pod)
                                             for c in pod["spec"]["containers"]]})
        self.put_status(pods, pod, status)
        for c in pod["spec"]["containers"]:
            self.event(pod, "Normal", "Pulling", 'Pulling image "%s"' % c["image"])

    def pod_running(self, pods, pod, status):
        self.pod_ip += 1
        ip = "10.244.0.%d" % (self.pod_ip % 250 + 2)
        t = now_rfc3339()
        statuses = []
        for c in pod["spec"]["containers"]:
            digest = hashlib.sha256(c["image"].encode()).hexdigest()
            statuses.append({"name": c["name"], "image": image_ref(c["image"]),
                             "imageID": "%s@sha256:%s" % (image_ref(c["image"]).rsplit(":", 1)[0],
                                                         digest),
                             "containerID": "containerd://" + secrets.token_hex(32),
                             "ready": True, "started": True, "restartCount": 0,
                             "state": {"running": {"startedAt": t}}, "lastState": {}})
        status.update({"phase": "Running", "hostIP": "127.0.0.1", "hostIPs": [{"ip": "127.0.0.1"}],
                       "podIP": ip, "podIPs": [{"ip": ip}],
                       "startTime": status.get("startTime", t),
                       "conditions": self.pod_conditions(True), "containerStatuses": statuses})
        self.prepare_pod_dirs(pod)
        self.put_status(pods, pod, status)
        for c in pod["spec"]["containers"]:
            self.event(pod, "Normal", "Pulled",
                       'Successfully pulled image "%s" in 1ms' % c["image"])
            self.event(pod, "Normal", "Created", "Created container: %s" % c["name"])
            self.event(pod, "Normal", "Started", "Started container %s" % c["name"])

    def pod_failing(self, pods, pod, status, failure, side, now):
        reason = failure["reason"]
        names = [c["name"] for c in pod["spec"]["containers"]]
        image = pod["spec"]["containers"][0]["image"]
        if reason in ("ErrImagePull", "ImagePullBackOff"):
            flip = int((now - side["scheduled"]) / 1.0) % 2
            if reason == "ImagePullBackOff":
                flip = 1 - flip
            if flip == 0:
                wait = {"reason": "ErrImagePull", "message": failure.get("message") or
                        'rpc error: code = NotFound desc = failed to pull and unpack image "%s": '
                        'failed to resolve reference "%s": %s: not found'
                        % (image_ref(image), image_ref(image), image_ref(image))}
            else:
                wait = {"reason": "ImagePullBackOff",
                        "message": 'Back-off pulling image "%s"' % image}
            state, last, phase, restarts = {"waiting": wait}, {}, "Pending", 0
        elif reason == "CrashLoopBackOff":
            restarts = int((now - side["scheduled"]) / 0.5) + 1
            state = {"waiting": {"reason": "CrashLoopBackOff", "message":
                                 "back-off 10s restarting failed container=%s pod=%s_%s(%s)"
                                 % (names[0], pod["metadata"]["name"],
                                    pod["metadata"]["namespace"], pod["metadata"]["uid"])}}
            last = {"terminated": {"exitCode": int(failure.get("exitCode", 1)),
                                   "reason": "Error", "message": failure.get("message", ""),
                                   "startedAt": now_rfc3339(), "finishedAt": now_rfc3339(),
                                   "containerID": "containerd://" + "0" * 64}}
            phase = "Running"
        elif reason in ("Failed", "Evicted"):
            state = {"terminated": {"exitCode": int(failure.get("exitCode", 1)),
                                    "reason": "Error", "startedAt": now_rfc3339(),
                                    "finishedAt": now_rfc3339()}}
            last, phase, restarts = {}, "Failed", 0
        else:
            state = {"waiting": {"reason": reason, "message": failure.get("message") or reason}}
            last, phase, restarts = {}, "Pending", 0
        statuses = []
        for c in pod["spec"]["containers"]:
            s = container_status_base(c, pod)
            s.update({"state": state, "lastState": last, "restartCount": restarts})
            statuses.append(s)
        old = pod["status"].get("containerStatuses") or [{}]
        if old[0].get("state") == state and old[0].get("restartCount") == restarts:
            return
        status.update({"phase": phase, "hostIP": "127.0.0.1", "startTime":
                       status.get("startTime", now_rfc3339()),
                       "conditions": self.pod_conditions(False, "containers with unready status: "
                                                         "[%s]" % " ".join(names)),
                       "containerStatuses": statuses})
        if reason == "Evicted":
            status["reason"] = "Evicted"
            status["message"] = failure.get("message") or "The node was low on resource: memory."
        self.put_status(pods, pod, status)
        waiting = state.get("waiting") or {}
        if waiting.get("reason") == "ErrImagePull":
            self.event(pod, "Warning", "Failed", "Failed to pull image \"%s\": %s"
                       % (image, waiting["message"]))
        elif waiting.get("reason") in ("ImagePullBackOff", "CrashLoopBackOff"):
            self.event(pod, "Normal" if reason != "CrashLoopBackOff" else "Warning", "BackOff",
                       waiting["message"] if reason != "CrashLoopBackOff" else
                       "Back-off restarting failed container %s in pod %s_%s(%s)"
                       % (names[0], pod["metadata"]["name"], pod["metadata"]["namespace"],
                          pod["metadata"]["uid"]))
        if waiting.get("reason"):
            self.event(pod, "Warning", "Failed", "Error: " + waiting["reason"])

    def prepare_pod_dirs(self, pod):
        base = os.path.join(self.state, "pods", pod["metadata"]["uid"])
        for v in pod["spec"].get("volumes") or []:
            if "emptyDir" in v:
                d = os.path.join(base, "volumes", v["name"])
                os.makedirs(d, exist_ok=True)
                os.chmod(d, 0o777)
        os.makedirs(os.path.join(base, "rootfs"), exist_ok=True)
        os.chmod(os.path.join(base, "rootfs"), 0o755)

    # -- exec ---------------------------------------------------------------------------------

    def exec_spec(self, pod, container, argv):
        """The sandbox a command of this Pod runs in (see sandbox_main)."""
        uid = pod["metadata"]["uid"]
        base = os.path.join(self.state, "pods", uid)
        psc = pod["spec"].get("securityContext") or {}
        csc = container.get("securityContext") or {}
        volumes = {v["name"]: v for v in pod["spec"].get("volumes") or []}
        pvcs = RESOURCES[("", "persistentvolumeclaims")]
        mounts = []
        for m in container.get("volumeMounts") or []:
            v = volumes[m["name"]]
            if "persistentVolumeClaim" in v:
                pvc = self.store.get(pvcs, pod["metadata"]["namespace"],
                                     v["persistentVolumeClaim"]["claimName"])
                if pvc is None:
                    raise ApiError(500, "InternalError", "volume %s has no claim" % m["name"])
                src = os.path.join(self.state, "volumes", "pvc-" + pvc["metadata"]["uid"])
                ro = bool(m.get("readOnly") or v["persistentVolumeClaim"].get("readOnly"))
            elif "emptyDir" in v:
                src = os.path.join(base, "volumes", m["name"])
                ro = bool(m.get("readOnly"))
            else:
                raise ApiError(500, "InternalError", "volume %s: only emptyDir and "
                               "persistentVolumeClaim volumes are backed by the fake" % m["name"])
            if psc.get("fsGroup") is not None and not ro:
                give_group(src, int(psc["fsGroup"]))
            if m.get("subPath"):
                src = os.path.join(src, m["subPath"])
                os.makedirs(src, exist_ok=True)
            mounts.append({"source": src, "target": m["mountPath"], "readOnly": ro})
        env = {"PATH": "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
               "HOSTNAME": pod["metadata"]["name"]}
        for e in container.get("env") or []:
            if "value" in e:
                env[e["name"]] = e["value"]
        run_uid = csc.get("runAsUser", psc.get("runAsUser", 0))
        env.setdefault("HOME", "/root" if run_uid == 0 else "/")
        groups = list(psc.get("supplementalGroups") or [])
        if psc.get("fsGroup") is not None:
            groups.append(psc["fsGroup"])
        caps = csc.get("capabilities") or {}
        return {"rootfs": os.path.join(base, "rootfs"), "mounts": mounts, "argv": argv,
                "env": env, "cwd": container.get("workingDir") or "/", "uid": run_uid,
                "gid": csc.get("runAsGroup", psc.get("runAsGroup", 0)), "groups": groups,
                "readOnlyRoot": bool(csc.get("readOnlyRootFilesystem")),
                "noNewPrivs": csc.get("allowPrivilegeEscalation") is False,
                "dropCaps": caps.get("drop") or [], "hostname": pod["metadata"]["name"],
                "fsGroup": psc.get("fsGroup")}

    def register_exec(self, pod_uid, session):
        with self.exec_lock:
            self.execs.setdefault(pod_uid, set()).add(session)

    def unregister_exec(self, pod_uid, session):
        with self.exec_lock:
            self.execs.get(pod_uid, set()).discard(session)

    def kill_execs(self, pod_uid):
        with self.exec_lock:
            sessions = list(self.execs.pop(pod_uid, ()))
        for s in sessions:
            s.kill()

    def take_watch_drop(self):
        with self.settings.lock:
            if self.settings.drop_watches > 0:
                self.settings.drop_watches -= 1
                return True
        return False

    def take_exec_drop(self):
        with self.settings.lock:
            if self.settings.drop_execs:
                d = self.settings.drop_execs.pop(0)
                return d
        return None


def default_pod_keep_status(new, old):
    spec = new["spec"]
    for k, v in (("restartPolicy", "Always"), ("terminationGracePeriodSeconds", 30),
                 ("dnsPolicy", "ClusterFirst"), ("schedulerName", "default-scheduler"),
                 ("serviceAccountName", "default"), ("securityContext", {}),
                 ("enableServiceLinks", True), ("preemptionPolicy", "PreemptLowerPriority"),
                 ("priority", 0)):
        spec.setdefault(k, copy.deepcopy(old["spec"].get(k, v)))
    spec.setdefault("serviceAccount", spec["serviceAccountName"])
    for c, oc in zip(spec.get("containers") or [], old["spec"].get("containers") or []):
        for k in ("imagePullPolicy", "terminationMessagePath", "terminationMessagePolicy",
                  "resources"):
            if k in oc:
                c.setdefault(k, copy.deepcopy(oc[k]))


def give_group(path, gid):
    """kubelet's fsGroup ownership change (fsGroupChangePolicy OnRootMismatch: the root only)."""
    st = os.stat(path)
    if st.st_gid != gid:
        os.chown(path, -1, gid)
        os.chmod(path, 0o2777)


NODES = ["fake-node-1"]


def node_labels(node):
    return {"kubernetes.io/hostname": node, "kubernetes.io/os": "linux",
            "kubernetes.io/arch": "amd64", "topology.kubernetes.io/zone": "fake-zone-a"}


def node_fits(pod, node):
    """A node's labels against nodeSelector and required node affinity (In, NotIn, Exists,
    DoesNotExist, matchFields metadata.name), as the scheduler's NodeAffinity filter."""
    spec = pod["spec"]
    labels = node_labels(node)
    for k, v in (spec.get("nodeSelector") or {}).items():
        if labels.get(k) != v:
            return False
    req = (((spec.get("affinity") or {}).get("nodeAffinity") or {})
           .get("requiredDuringSchedulingIgnoredDuringExecution") or {})
    terms = req.get("nodeSelectorTerms") or []
    if not terms:
        return True
    for term in terms:
        ok = True
        for e in term.get("matchExpressions") or []:
            have = labels.get(e.get("key"))
            op, vals = e.get("operator"), e.get("values") or []
            if (op == "In" and have not in vals) or (op == "NotIn" and have in vals) or \
                    (op == "Exists" and have is None) or \
                    (op == "DoesNotExist" and have is not None):
                ok = False
        for f in term.get("matchFields") or []:
            if f.get("key") == "metadata.name" and f.get("operator") == "In" and \
                    node not in (f.get("values") or []):
                ok = False
        if ok:
            return True
    return False


def pod_claims(pod):
    return [v["persistentVolumeClaim"]["claimName"] for v in pod["spec"].get("volumes") or []
            if isinstance(v.get("persistentVolumeClaim"), dict)]


def image_ref(image):
    ref = image if "/" in image.split(":")[0] and "." in image.split("/")[0] else \
        "docker.io/" + (image if "/" in image else "library/" + image)
    last = ref.rsplit("/", 1)[-1]
    if ":" not in last and "@" not in last:
        ref += ":latest"
    return ref


# ---------------------------------------------------------------------------------------------
# Tables (kubectl get asks for meta.k8s.io Table)


def human_age(ts):
    try:
        t = time.mktime(time.strptime(ts, "%Y-%m-%dT%H:%M:%SZ")) - time.timezone
    except (TypeError, ValueError):
        return "<unknown>"
    s = max(int(time.time() - t), 0)
    if s < 120:
        return "%ds" % s
    m = s // 60
    if m < 10:
        return "%dm%ds" % (m, s % 60) if s % 60 else "%dm" % m
    if m < 180:
        return "%dm" % m
    h = m // 60
    return "%dh%dm" % (h, m % 60) if h < 8 else "%dh" % h


def pod_status_text(pod):
    if pod["metadata"].get("deletionTimestamp"):
        return "Terminating"
    st = pod.get("status") or {}
    text = st.get("reason") or st.get("phase", "Pending")
    for cs in st.get("containerStatuses") or []:
        w = (cs.get("state") or {}).get("waiting")
        if w and w.get("reason"):
            text = w["reason"]
    return text


def table_columns(res):
    def col(name, typ="string", priority=0, fmt=""):
        return {"name": name, "type": typ, "format": fmt, "description": name, "priority": priority}
    if res.kind == "Pod":
        return [col("Name", fmt="name"), col("Ready"), col("Status"), col("Restarts", "string"),
                col("Age"), col("IP", priority=1), col("Node", priority=1),
                col("Nominated Node", priority=1), col("Readiness Gates", priority=1)]
    if res.kind == "PersistentVolumeClaim":
        return [col("Name", fmt="name"), col("Status"), col("Volume"), col("Capacity"),
                col("Access Modes"), col("StorageClass"), col("VolumeAttributesClass", priority=1),
                col("Age"), col("VolumeMode", priority=1)]
    if res.kind == "NetworkPolicy":
        return [col("Name", fmt="name"), col("Pod-Selector"), col("Age")]
    if res.kind == "Event":
        return [col("Last Seen"), col("Type"), col("Reason"), col("Object"), col("Message"),
                col("Name", fmt="name", priority=1)]
    return [col("Name", fmt="name"), col("Status"), col("Age")]


def table_cells(res, o):
    meta, st = o["metadata"], o.get("status") or {}
    age = human_age(meta.get("creationTimestamp"))
    if res.kind == "Pod":
        cs = st.get("containerStatuses") or []
        ready = sum(1 for c in cs if c.get("ready"))
        restarts = sum(c.get("restartCount", 0) for c in cs)
        return [meta["name"], "%d/%d" % (ready, len(o["spec"]["containers"])),
                pod_status_text(o), str(restarts), age, st.get("podIP", "<none>"),
                o["spec"].get("nodeName", "<none>"), "<none>", "<none>"]
    if res.kind == "PersistentVolumeClaim":
        modes = ",".join({"ReadWriteOnce": "RWO", "ReadWriteMany": "RWX", "ReadOnlyMany": "ROX",
                          "ReadWriteOncePod": "RWOP"}.get(m, m)
                         for m in st.get("accessModes") or [])
        return [meta["name"], "Terminating" if meta.get("deletionTimestamp") else
                st.get("phase", "Pending"), o["spec"].get("volumeName", ""),
                (st.get("capacity") or {}).get("storage", ""), modes,
                o["spec"].get("storageClassName") or "<unset>", "<unset>", age,
                o["spec"].get("volumeMode", "Filesystem")]
    if res.kind == "Event":
        inv = o.get("involvedObject") or {}
        return [human_age(o.get("lastTimestamp")), o.get("type", ""), o.get("reason", ""),
                "%s/%s" % (inv.get("kind", "").lower(), inv.get("name", "")),
                o.get("message", ""), meta["name"]]
    if res.kind == "NetworkPolicy":
        sel = (o["spec"].get("podSelector") or {}).get("matchLabels") or {}
        return [meta["name"], ",".join("%s=%s" % kv for kv in sorted(sel.items())) or "<none>",
                age]
    return [meta["name"], st.get("phase", ""), age]


def table_of(res, objs, rv, include_object, with_columns=True):
    rows = []
    for o in objs:
        if include_object == "Object":
            full = copy.deepcopy(o)
            full["apiVersion"], full["kind"] = res.api_version, res.kind
            obj = full
        elif include_object == "None":
            obj = None
        else:
            obj = {"kind": "PartialObjectMetadata", "apiVersion": "meta.k8s.io/v1",
                   "metadata": copy.deepcopy(o["metadata"])}
        row = {"cells": table_cells(res, o)}
        if obj is not None:
            row["object"] = obj
        rows.append(row)
    out = {"kind": "Table", "apiVersion": "meta.k8s.io/v1", "metadata": {"resourceVersion": rv}}
    if with_columns:
        out["columnDefinitions"] = table_columns(res)
    out["rows"] = rows
    return out


def wants_table(accept):
    return "as=Table" in (accept or "")


# ---------------------------------------------------------------------------------------------
# WebSocket (RFC 6455, server side) for exec


WS_GUID = "258EAFA5-E914-47DA-95CA-C5AB0DC85B11"
SUBPROTOCOLS = ["v5.channel.k8s.io", "v4.channel.k8s.io", "channel.k8s.io"]
MAX_MESSAGE = 16 << 20
MAX_BODY = 16 << 20


class WsClosed(Exception):
    pass


class WsReader:
    """Incremental frame parser over bytes the exec loop feeds it."""

    def __init__(self):
        self.buf = bytearray()
        self.parts = []
        self.opcode = None

    def feed(self, data):
        self.buf += data

    def messages(self):
        """→ list of (opcode, payload) complete messages; control frames pass straight through."""
        out = []
        while True:
            b = self.buf
            if len(b) < 2:
                return out
            fin, opcode, masked, n = b[0] & 0x80, b[0] & 0x0F, b[1] & 0x80, b[1] & 0x7F
            if b[0] & 0x70:
                raise WsClosed("reserved bits set")
            i = 2
            if n == 126:
                if len(b) < 4:
                    return out
                n, i = int.from_bytes(b[2:4], "big"), 4
            elif n == 127:
                if len(b) < 10:
                    return out
                n, i = int.from_bytes(b[2:10], "big"), 10
            if not masked:
                raise WsClosed("unmasked client frame")
            if n > MAX_MESSAGE:
                raise WsClosed("frame too large")
            if len(b) < i + 4 + n:
                return out
            key = bytes(b[i:i + 4])
            payload = bytes(x ^ key[j % 4] for j, x in enumerate(b[i + 4:i + 4 + n])) \
                if n < 4096 else unmask_fast(bytes(b[i + 4:i + 4 + n]), key)
            del self.buf[:i + 4 + n]
            if opcode >= 8:
                if not fin or n > 125:
                    raise WsClosed("bad control frame")
                out.append((opcode, payload))
                continue
            if opcode == 0:
                if self.opcode is None:
                    raise WsClosed("continuation without a start")
            else:
                if self.opcode is not None:
                    raise WsClosed("new message inside a fragmented one")
                self.opcode = opcode
            self.parts.append(payload)
            if sum(len(p) for p in self.parts) > MAX_MESSAGE:
                raise WsClosed("message too large")
            if fin:
                out.append((self.opcode, b"".join(self.parts)))
                self.parts, self.opcode = [], None


def unmask_fast(data, key):
    n = len(data)
    k = int.from_bytes((key * (n // 4 + 1))[:n], "little")
    return (int.from_bytes(data, "little") ^ k).to_bytes(n, "little")


def ws_frame(opcode, payload):
    n = len(payload)
    if n < 126:
        head = bytes([0x80 | opcode, n])
    elif n < 65536:
        head = bytes([0x80 | opcode, 126]) + n.to_bytes(2, "big")
    else:
        head = bytes([0x80 | opcode, 127]) + n.to_bytes(8, "big")
    return head + payload


def exit_status(argv, code, error, proto):
    """The channel-3 Status, as json.Marshal writes it. v4 and v1 come from the kubelet
    (remotecommand/exec.go); v5 is rewritten by the API server's StreamTranslatorHandler, which
    parsed the kubelet's Status with client-go and wraps what it got (streamtranslator.go:
    codeExitToStatusError for an exit code, NewInternalError for anything else)."""
    if code == 0 and error is None:
        return {"metadata": {}, "status": "Success"}
    if error is not None:
        msg = "Internal error occurred: error executing command in container: failed to exec " \
              "in container: failed to start exec: OCI runtime exec failed: exec failed: " \
              "unable to start container process: %s: unknown" % error
        if proto.startswith("v5"):
            return {"metadata": {}, "status": "Failure", "message": "Internal error occurred: " +
                    msg, "reason": "InternalError", "details": {"causes": [{"message": msg}]},
                    "code": 500}
        inner = msg[len("Internal error occurred: "):]
        return {"metadata": {}, "status": "Failure", "message": msg, "reason": "InternalError",
                "details": {"causes": [{"message": inner}]}, "code": 500}
    if proto.startswith("v5"):
        why = "command terminated with exit code %d" % code
    else:
        why = "error executing command [%s], exit code %d" % (" ".join(argv), code)
    return {"metadata": {}, "status": "Failure",
            "message": "command terminated with non-zero exit code: " + why,
            "reason": "NonZeroExitCode",
            "details": {"causes": [{"reason": "ExitCode", "message": str(code)}]}}


class ExecSession:
    """One exec: the WebSocket on one side, the sandboxed process on the other, one thread."""

    def __init__(self, fake, handler, sock, proto, argv, opts, spec, drop):
        self.fake, self.handler, self.sock, self.proto = fake, handler, sock, proto
        self.argv, self.opts, self.spec, self.drop = argv, opts, spec, drop
        self.pid = None
        self.alive = False
        self.killed = False

    def kill(self):
        """Kill the sandbox helper; its PID 1 follows (PDEATHSIG) and takes the tree along."""
        self.killed = True
        if self.pid and self.alive:
            try:
                os.kill(self.pid, signal.SIGKILL)
            except OSError:
                pass

    def send(self, channel, data):
        self.sock.sendall(ws_frame(2, bytes([channel]) + data))

    def run(self):
        ends = {}
        child = []
        for name, wanted in (("stdin", self.opts["stdin"]), ("stdout", self.opts["stdout"]),
                             ("stderr", self.opts["stderr"])):
            if wanted:
                r, w = os.pipe()
                ours, theirs = (w, r) if name == "stdin" else (r, w)
                ends[name] = ours
                child.append(theirs)
            else:
                child.append(os.open(os.devnull, os.O_RDWR))
        status_r, status_w = os.pipe()
        child.append(status_w)
        self.alive = True
        try:
            self.pid = self.fake.zygote.spawn(self.spec, child)
        finally:
            for fd in child:
                os.close(fd)
        try:
            return self.pump(ends, status_r)
        finally:
            self.kill()
            for fd in list(ends.values()) + [status_r]:
                try:
                    os.close(fd)
                except OSError:
                    pass

    def pump(self, ends, status_r):
        outs = {}
        if "stdout" in ends:
            outs[ends["stdout"]] = 1
        if "stderr" in ends:
            outs[ends["stderr"]] = 2
        for fd in outs:
            os.set_blocking(fd, False)
        stdin_fd = ends.get("stdin")
        if stdin_fd is not None:
            os.set_blocking(stdin_fd, False)
        pending_in = bytearray()
        stdin_eof = False
        status_buf = b""
        status_open = True
        reader = WsReader()
        started = time.monotonic()
        while True:
            if self.killed:
                return
            if self.drop and time.monotonic() - started >= self.drop.get("afterMs", 0) / 1000.0:
                self.sock.shutdown(socket.SHUT_RDWR)
                return
            if not outs and not status_open:
                break
            rlist = [self.sock] + list(outs) + ([status_r] if status_open else [])
            wlist = [stdin_fd] if stdin_fd is not None and pending_in else []
            if self.sock.pending():
                ready_r, ready_w = [self.sock], []
            else:
                ready_r, ready_w, _ = select.select(rlist, wlist, [], 0.05)
            if self.sock in ready_r:
                try:
                    data = self.sock.recv(65536)
                except ssl.SSLWantReadError:
                    data = None
                if data == b"":
                    return
                if data:
                    reader.feed(data)
                    for opcode, payload in reader.messages():
                        if opcode == 8:
                            self.sock.sendall(ws_frame(8, payload[:2]))
                            return
                        if opcode == 9:
                            self.sock.sendall(ws_frame(10, payload))
                            continue
                        if opcode not in (1, 2) or not payload:
                            continue
                        ch, body = payload[0], payload[1:]
                        if ch == 0 and stdin_fd is not None and not stdin_eof:
                            pending_in += body
                        elif ch == 255 and self.proto.startswith("v5") and body[:1] == b"\x00":
                            stdin_eof = True
            if stdin_fd is not None and pending_in:
                try:
                    n = os.write(stdin_fd, pending_in)
                    del pending_in[:n]
                except BlockingIOError:
                    pass
                except OSError:
                    pending_in.clear()
                    stdin_eof = True
            if stdin_fd is not None and stdin_eof and not pending_in:
                os.close(ends.pop("stdin"))
                stdin_fd = None
            for fd in [fd for fd in ready_r if fd in outs]:
                try:
                    data = os.read(fd, 32768)
                except BlockingIOError:
                    continue
                if data:
                    self.send(outs[fd], data)
                else:
                    del outs[fd]
            if status_open and status_r in ready_r:
                data = os.read(status_r, 65536)
                if data:
                    status_buf += data
                else:
                    status_open = False
                    self.alive = False
        code, error = 1, None
        for line in status_buf.splitlines():
            try:
                msg = json.loads(line)
            except ValueError:
                continue
            error = msg.get("error", error)
            code = msg.get("exit", code)
        st = exit_status(self.argv, code, error, self.proto)
        if self.proto == "channel.k8s.io":
            if st["status"] != "Success":
                self.send(3, st["message"].encode())
        else:
            self.send(3, json.dumps(st, separators=(",", ":")).encode())
        self.close_handshake(reader)

    def close_handshake(self, reader):
        self.sock.sendall(ws_frame(8, (1000).to_bytes(2, "big")))
        deadline = time.monotonic() + 2.0
        while time.monotonic() < deadline:
            if not self.sock.pending():
                r, _, _ = select.select([self.sock], [], [], 0.1)
                if not r:
                    continue
            try:
                data = self.sock.recv(65536)
            except (OSError, ssl.SSLError):
                return
            if not data:
                return
            reader.feed(data)
            try:
                if any(op == 8 for op, _ in reader.messages()):
                    return
            except WsClosed:
                return


# ---------------------------------------------------------------------------------------------
# HTTP handler


def parse_bool(v):
    return v.lower() in ("true", "1", "yes", "y") if isinstance(v, str) else bool(v)


class Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    rbufsize = 0
    server_version = "b4box-fake-apiserver"
    sys_version = ""

    def log_message(self, fmt, *args):
        if self.server.fake.args.verbose:
            sys.stderr.write("fake-apiserver: " + fmt % args + "\n")

    def do_GET(self):
        self.dispatch()

    def do_POST(self):
        self.dispatch()

    def do_PUT(self):
        self.dispatch()

    def do_PATCH(self):
        self.dispatch()

    def do_DELETE(self):
        self.dispatch()

    # -- plumbing -----------------------------------------------------------------------------

    def read_exact(self, n):
        """rfile is unbuffered (exec hands the raw socket over): a read may come back short."""
        parts, left = [], n
        while left > 0:
            chunk = self.rfile.read(left)
            if not chunk:
                raise ConnectionResetError("the client closed mid-body")
            parts.append(chunk)
            left -= len(chunk)
        return b"".join(parts)

    def read_body(self):
        """The request body, once (later calls answer the same bytes); 413 past MAX_BODY."""
        if self.body is not None:
            return self.body
        self.body = b""
        if self.headers.get("Transfer-Encoding", "").lower() == "chunked":
            data = b""
            while True:
                size = int(self.rfile.readline().split(b";")[0].strip() or b"0", 16)
                if size == 0:
                    self.rfile.readline()
                    break
                if len(data) + size > MAX_BODY:
                    self.close_connection = True
                    raise ApiError(413, "RequestEntityTooLarge", "the request body is too large")
                data += self.read_exact(size)
                self.rfile.readline()
            self.body = data
            return data
        n = int(self.headers.get("Content-Length") or 0)
        if n > MAX_BODY:
            self.close_connection = True
            raise ApiError(413, "RequestEntityTooLarge", "the request body is too large")
        self.body = self.read_exact(n) if n else b""
        return self.body

    def send_json(self, code, obj, headers=None):
        data = json.dumps(obj).encode()
        lose, self.lose_answer = getattr(self, "lose_answer", False), False
        if lose:
            if lose == "cut":
                self.send_response(code)
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data[:len(data) // 2])
            self.close_connection = True
            self.connection.shutdown(socket.SHUT_RDWR)
            raise ConnectionResetError("injected: the answer lost")
        self.send_response(code)
        self.send_header("Content-Type", "application/json")
        self.send_header("Cache-Control", "no-cache, private")
        self.send_header("Audit-Id", str(uuid.uuid4()))
        for k, v in (headers or {}).items():
            self.send_header(k, str(v))
        for w in self.warnings:
            self.send_header("Warning", w)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)
        self.status_code = code

    def json_body(self, res):
        raw = self.read_body()
        ctype = (self.headers.get("Content-Type") or "application/json").split(";")[0].strip()
        if ctype == "application/vnd.kubernetes.protobuf":
            if res is SSAR:
                try:
                    return ssar_from_protobuf(raw)
                except (ValueError, UnicodeDecodeError) as e:
                    raise bad_request("cannot decode protobuf: %s" % e)
            raise ApiError(415, "UnsupportedMediaType", "the fake API server only reads "
                           "protobuf for selfsubjectaccessreviews")
        if ctype not in ("application/json", "application/yaml", "*/*", ""):
            raise ApiError(415, "UnsupportedMediaType", 'the body of the request was in an '
                           'unknown format - accepted media types include: application/json, '
                           'application/yaml, application/vnd.kubernetes.protobuf')
        try:
            return json.loads(raw or b"null")
        except ValueError as e:
            raise bad_request("%s in version \"%s\" cannot be handled as a %s: %s"
                              % (res.kind, res.version, res.kind, e))

    def dispatch(self):
        fake = self.server.fake
        self.status_code = 0
        self.entry = None
        self.body = None
        self.warnings = []
        url = urllib.parse.urlsplit(self.path)
        path = url.path.rstrip("/") or "/"
        query = urllib.parse.parse_qs(url.query, keep_blank_values=True)
        self.kept = getattr(self, "served", 0) > 0
        self.lose_answer = False
        try:
            if path.startswith("/_fake"):
                return self.control(fake, path, query)
            self.count_connection(fake)
            user = fake.authenticate(self.headers, self.peercert())
            self.entry = {"time": time.time(), "method": self.command, "path": path,
                          "query": url.query, "user": user,
                          "userAgent": self.headers.get("User-Agent", ""),
                          "contentType": self.headers.get("Content-Type", ""),
                          "accept": self.headers.get("Accept", "")}
            if user is None:
                fake.counters.count("unauthorized")
                raise ApiError(401, "Unauthorized", "Unauthorized")
            self.api(fake, user, path, query)
        except ApiError as e:
            if self.entry is not None and "class" not in self.entry:
                self.entry["class"] = "unauthorized" if e.code == 401 else "other"
            if self.body is None and not self.close_connection:
                try:
                    self.read_body()
                except ApiError:
                    pass
            self.send_json(e.code, e.body(), e.headers)
        except (BrokenPipeError, ConnectionResetError, ssl.SSLError, socket.timeout):
            self.close_connection = True
        except Exception as e:
            traceback.print_exc()
            try:
                self.send_json(500, status_body(500, "InternalError", "Internal error occurred: "
                                                "%s" % e, {"causes": [{"message": str(e)}]}))
            except OSError:
                pass
        finally:
            if self.entry is not None:
                self.entry["code"] = self.status_code
                fake.log.add(self.entry)

    def count_connection(self, fake):
        """The first API request of a connection counts it (and whether TLS resumed)."""
        self.served = getattr(self, "served", 0) + 1
        if self.served == 1:
            fake.counters.count("connections")
            if getattr(self.connection, "session_reused", False):
                fake.counters.count("tlsResumed")

    def peercert(self):
        try:
            return self.connection.getpeercert()
        except (AttributeError, ValueError):
            return None

    # -- the API ------------------------------------------------------------------------------

    def route(self, path):
        """→ (kind, res, ns, name, sub): kind in discovery|resource|ssar|version."""
        parts = path.strip("/").split("/")
        if path in ("/version", "/version/"):
            return ("version", None, None, None, None)
        if path == "/api":
            return ("api", None, None, None, None)
        if path == "/apis":
            return ("apis", None, None, None, None)
        if parts[0] == "api" and len(parts) >= 2:
            if parts[1] != "v1":
                raise not_found_path(path)
            group, rest = "", parts[2:]
        elif parts[0] == "apis" and len(parts) >= 2:
            if parts[1] not in GROUPS:
                raise not_found_path(path)
            if len(parts) == 2:
                return ("group", parts[1], None, None, None)
            if parts[2] != GROUPS[parts[1]]:
                raise not_found_path(path)
            group, rest = parts[1], parts[3:]
        else:
            raise not_found_path(path)
        if not rest:
            return ("resources", group, None, None, None)
        ns = None
        if rest[0] == "namespaces" and len(rest) >= 3:
            ns, rest = rest[1], rest[2:]
        if group == "authorization.k8s.io" and rest == ["selfsubjectaccessreviews"] and ns is None:
            return ("ssar", SSAR, None, None, None)
        res = RESOURCES.get((group, rest[0]))
        if res is None or (ns is not None and not res.namespaced) or len(rest) > 3:
            raise not_found_path(path)
        name = rest[1] if len(rest) >= 2 else None
        sub = rest[2] if len(rest) == 3 else None
        if sub not in (None, "exec", "status") or (sub and res.kind != "Pod"):
            raise not_found_path(path)
        return ("resource", res, ns, name, sub)

    def api(self, fake, user, path, query):
        kind, res, ns, name, sub = self.route(path)
        e = self.entry
        if kind in ("version", "api", "apis", "group", "resources"):
            e["class"] = "discovery"
            fake.counters.count("discovery")
            if self.command != "GET":
                raise ApiError(405, "MethodNotAllowed", "the server does not allow this method "
                               "on the requested resource")
            return self.discovery(kind, res)
        if kind == "ssar":
            e.update({"class": "reviews", "verb": "create", "resource": SSAR.plural})
            fake.counters.count("reviews", "create selfsubjectaccessreviews")
            self.faults(fake, "create", SSAR.plural, path)
            if self.command != "POST":
                raise ApiError(405, "MethodNotAllowed", "the server does not allow this method "
                               "on the requested resource")
            return self.ssar(fake, user)
        verb = self.verb_of(res, name, sub, query)
        cls = VERB_CLASS[verb]
        e.update({"class": cls, "verb": verb, "resource": res.plural, "namespace": ns,
                  "name": name, "subresource": sub})
        fake.counters.count(cls, "%s %s%s" % (verb, res.plural, "/" + sub if sub else ""))
        rbac_verb = {"exec": "get" if self.command == "GET" else "create"}.get(verb, verb)
        checks = [rbac_verb] + (["create"] if verb == "exec" and rbac_verb == "get" else [])
        for v in checks:
            allowed, _, _, _ = fake.authorize(user, v, res.group, res.plural, sub, ns, name)
            if fake.settings.enforce and not allowed:
                what = '%s "%s"' % (res.qualified, name) if name else res.qualified
                scope = ' in the namespace "%s"' % ns if ns else ""
                rsrc = res.plural + ("/" + sub if sub else "")
                raise ApiError(403, "Forbidden", '%s is forbidden: User "%s" cannot %s resource '
                               '"%s" in API group "%s"%s' % (what, user, v, rsrc, res.group,
                                                            scope),
                               {"name": name, "kind": res.plural} if name else
                               {"kind": res.plural})
        self.faults(fake, verb, res.plural, path)
        dry = "All" in query.get("dryRun", [])
        if verb == "exec":
            return self.exec(fake, ns, name, query)
        if sub == "status" and verb not in ("get",):
            raise ApiError(405, "MethodNotAllowed", "the fake API server keeps pods/status "
                           "to itself")
        accept = self.headers.get("Accept", "")
        include = query.get("includeObject", ["Metadata"])[0]
        if verb == "get":
            obj = fake.get(res, ns or "", name)
            if wants_table(accept):
                return self.send_json(200, table_of(res, [obj], obj["metadata"]["resourceVersion"],
                                                    include))
            return self.send_json(200, obj)
        if verb == "list":
            out = fake.list(res, ns, query)
            if wants_table(accept):
                out = table_of(res, out["items"], out["metadata"]["resourceVersion"], include)
            return self.send_json(200, out)
        if verb == "watch":
            return self.watch(fake, res, ns, query, accept, include)
        if verb in ("create", "update"):
            body = self.json_body(res)
            self.field_validation(res, query, body)
            if verb == "update":
                return self.send_json(200, fake.update(res, ns or "", name, body, dry))
            if res.kind == "Namespace":
                ns = None
            return self.send_json(201, fake.create(res, ns or "", body, dry))
        if verb == "patch" and not self.headers.get("Content-Type", "").startswith(
                "application/json-patch+json"):
            try:
                doc = json.loads(self.read_body() or b"null")
            except ValueError:
                doc = None
            self.field_validation(res, query, doc)
        if verb == "patch":
            return self.send_json(200, fake.patch(res, ns or "", name,
                                                  self.headers.get("Content-Type", ""),
                                                  self.read_body(), dry))
        opts = self.delete_options(res, query, dry)
        if verb == "delete":
            code, obj = fake.delete(res, ns or "", name, opts)
            return self.send_json(code, obj)
        return self.send_json(200, fake.deletecollection(res, ns, query, opts))

    def field_validation(self, res, query, body):
        """Unknown fields: 400 under fieldValidation=Strict, Warning headers under Warn (the
        API server's default), nothing under Ignore; the log keeps them either way."""
        schema = SCHEMAS.get(res.kind)
        mode = query.get("fieldValidation", ["Warn"])[0]
        if mode not in ("Strict", "Warn", "Ignore"):
            raise bad_request('fieldValidation must be one of "Strict", "Warn" or "Ignore", '
                              'got "%s"' % mode)
        unknown = unknown_fields(body, schema) if schema else []
        if not unknown:
            return
        self.entry["unknownFields"] = unknown
        if mode == "Strict":
            raise bad_request('%s in version "%s" cannot be handled as a %s: strict decoding '
                              'error: %s' % (res.kind, res.version, res.kind, ", ".join(
                                  'unknown field "%s"' % f for f in unknown)))
        if mode == "Warn":
            self.warnings = ['299 - "unknown field \\"%s\\""' % f for f in unknown]

    def verb_of(self, res, name, sub, query):
        m = self.command
        if sub == "exec":
            if m not in ("GET", "POST"):
                raise ApiError(405, "MethodNotAllowed", "exec takes GET or POST")
            return "exec"
        if m == "GET":
            if name:
                return "get"
            return "watch" if parse_bool(query.get("watch", ["false"])[0]) else "list"
        if m == "POST" and not name:
            return "create"
        if m == "PUT" and name:
            return "update"
        if m == "PATCH" and name:
            return "patch"
        if m == "DELETE":
            return "delete" if name else "deletecollection"
        raise ApiError(405, "MethodNotAllowed", "the server does not allow this method on the "
                       "requested resource")

    def delete_options(self, res, query, dry):
        body = self.read_body()
        opts = {}
        if body.strip():
            try:
                opts = json.loads(body)
            except ValueError as e:
                raise bad_request("DeleteOptions: %s" % e)
            if not isinstance(opts, dict):
                raise bad_request("DeleteOptions must be an object")
        if "gracePeriodSeconds" in query:
            opts["gracePeriodSeconds"] = int(query["gracePeriodSeconds"][0])
        if "propagationPolicy" in query:
            opts["propagationPolicy"] = query["propagationPolicy"][0]
        if opts.get("propagationPolicy") not in (None, "Orphan", "Background", "Foreground"):
            raise bad_request('DeleteOptions.meta.k8s.io "" is invalid: propagationPolicy: '
                              'Unsupported value: "%s": supported values: "Foreground", '
                              '"Background", "Orphan", "nil"' % opts["propagationPolicy"])
        if dry:
            opts["dryRun"] = ["All"]
        return opts

    def faults(self, fake, verb, resource, path):
        with fake.settings.lock:
            fault = None
            for f in fake.settings.faults:
                if f.get("count", 1) <= 0 or (f.get("keptOnly") and not self.kept):
                    continue
                if f.get("verb", "*") not in ("*", verb) or \
                        f.get("resource", "*") not in ("*", resource):
                    continue
                if f.get("path") and not re.search(f["path"], path):
                    continue
                f["count"] = f.get("count", 1) - 1
                fault = dict(f)
                break
            fake.settings.faults = [f for f in fake.settings.faults if f.get("count", 1) > 0]
        if not fault:
            return
        self.entry["fault"] = fault
        if fault.get("delayMs"):
            time.sleep(fault["delayMs"] / 1000.0)
        self.lose_answer = "cut" if fault.get("cutAnswer") else bool(fault.get("loseAnswer"))
        if fault.get("drop"):
            self.close_connection = True
            self.connection.shutdown(socket.SHUT_RDWR)
            raise ConnectionResetError("injected drop")
        code = fault.get("code")
        if not code:
            return
        if code == 429:
            ra = int(fault.get("retryAfter", 1))
            raise ApiError(429, "TooManyRequests", "Too many requests, please try again later.",
                           {"retryAfterSeconds": ra}, {"Retry-After": ra})
        if code == 500:
            raise ApiError(500, "InternalError", "Internal error occurred: injected fault",
                           {"causes": [{"message": "injected fault"}]})
        if code == 503:
            raise ApiError(503, "ServiceUnavailable", "the server is currently unable to handle "
                           "the request", None, {"Retry-After": fault.get("retryAfter", 1)})
        if code == 504:
            raise ApiError(504, "Timeout", "the server was unable to return a response in the "
                           "time allotted, but may still be processing the request")
        raise ApiError(code, fault.get("reason", "InternalError"), fault.get("message",
                                                                             "injected fault"))

    def discovery(self, kind, group):
        port = self.server.server_address[1]
        if kind == "version":
            return self.send_json(200, VERSION)
        if kind == "api":
            return self.send_json(200, {"kind": "APIVersions", "versions": ["v1"],
                                        "serverAddressByClientCIDRs": [
                                            {"clientCIDR": "0.0.0.0/0",
                                             "serverAddress": "127.0.0.1:%d" % port}]})
        if kind == "apis":
            return self.send_json(200, group_list())
        if kind == "group":
            gv = {"groupVersion": group + "/" + GROUPS[group], "version": GROUPS[group]}
            return self.send_json(200, {"kind": "APIGroup", "apiVersion": "v1", "name": group,
                                        "versions": [gv], "preferredVersion": gv})
        return self.send_json(200, resource_list(group, "v1" if not group else GROUPS[group]))

    def ssar(self, fake, user):
        body = self.json_body(SSAR)
        if not isinstance(body, dict) or not isinstance(body.get("spec"), dict):
            raise bad_request("SelfSubjectAccessReview needs a spec")
        spec = body["spec"]
        ra, nra = spec.get("resourceAttributes"), spec.get("nonResourceAttributes")
        if not ra and not nra:
            raise invalid(SSAR, "", [("spec.resourceAttributes", "FieldValueRequired",
                                      "Required value: exactly one of nonResourceAttributes or "
                                      "resourceAttributes must be specified")])
        if ra:
            allowed, reason, err, code = fake.authorize(
                user, ra.get("verb", ""), ra.get("group", ""), ra.get("resource", ""),
                ra.get("subresource", ""), ra.get("namespace", ""), ra.get("name", ""))
        else:
            allowed, reason, err, code = fake.authorize(user, nra.get("verb", ""), "",
                                                        "nonresource:" + nra.get("path", ""),
                                                        "", "", "")
        if code:
            raise ApiError(int(code), "InternalError" if int(code) >= 500 else "BadRequest",
                           "Internal error occurred: injected review failure")
        st = {"allowed": allowed}
        if not allowed and reason == "denied":
            st["denied"] = True
        if reason:
            st["reason"] = reason
        if err:
            st["evaluationError"] = err
        out = {"kind": "SelfSubjectAccessReview", "apiVersion": "authorization.k8s.io/v1",
               "metadata": {"creationTimestamp": None}, "spec": spec, "status": st}
        return self.send_json(201, out)

    # -- watch --------------------------------------------------------------------------------

    def watch(self, fake, res, ns, query, accept, include):
        lsel = parse_label_selector(query.get("labelSelector", [""])[0])
        fsel = parse_field_selector(query.get("fieldSelector", [""])[0], res)
        rv_param = query.get("resourceVersion", [""])[0]
        bookmarks = parse_bool(query.get("allowWatchBookmarks", ["false"])[0])
        initial = parse_bool(query.get("sendInitialEvents", ["false"])[0])
        timeout = float(query.get("timeoutSeconds", ["1800"])[0] or 1800)
        table = wants_table(accept)
        store = fake.store
        deadline = time.monotonic() + timeout

        def matches(o):
            if o is None:
                return False
            if ns is not None and o["metadata"].get("namespace") != ns:
                return False
            return labels_match(lsel, o["metadata"].get("labels") or {}) and fields_match(fsel, o)

        first = []
        with store.lock:
            if rv_param in ("", "0") or initial:
                cursor = store.rv
                first = [("ADDED", copy.deepcopy(o)) for o in store.items(res, ns) if matches(o)]
            else:
                try:
                    cursor = int(rv_param)
                except ValueError:
                    raise bad_request("invalid resource version: %s" % rv_param)
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Cache-Control", "no-cache, private")
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()
        self.status_code = 200
        self.close_connection = True

        def emit(etype, obj):
            if table and etype != "ERROR" and etype != "BOOKMARK":
                obj = table_of(res, [obj], obj["metadata"]["resourceVersion"], include)
            elif etype not in ("ERROR",):
                obj = copy.deepcopy(obj)
                obj.setdefault("apiVersion", res.api_version)
                obj.setdefault("kind", res.kind)
            line = json.dumps({"type": etype, "object": obj}).encode() + b"\n"
            self.wfile.write(b"%x\r\n%s\r\n" % (len(line), line))

        for etype, o in first:
            emit(etype, o)
        if initial and bookmarks:
            emit("BOOKMARK", {"kind": res.kind, "apiVersion": res.api_version, "metadata": {
                "resourceVersion": str(cursor), "annotations":
                    {"k8s.io/initial-events-end": "true"}}})
        last_bookmark = time.monotonic()
        while True:
            events, expired, drop = [], None, False
            with store.lock:
                while True:
                    if store.stopping:
                        break
                    if cursor < store.floor:
                        expired = store.floor
                        break
                    if self.client_gone():
                        return
                    if fake.take_watch_drop():
                        drop = True
                        break
                    if store.history and store.history[-1][0] > cursor:
                        break
                    left = deadline - time.monotonic()
                    if left <= 0:
                        break
                    if bookmarks and time.monotonic() - last_bookmark >= \
                            fake.settings.bookmark_interval:
                        break
                    store.cond.wait(min(left, 0.25))
                if expired is None and not drop:
                    start = bisect.bisect_right(store.history, cursor, key=lambda e: e[0])
                    for rv, etype, r, obj, old in store.history[start:]:
                        if r is not res:
                            continue
                        now_m, was_m = matches(obj), matches(old)
                        if etype == "MODIFIED" and was_m and not now_m:
                            events.append(("DELETED", obj))
                        elif etype == "MODIFIED" and now_m and not was_m:
                            events.append(("ADDED", obj))
                        elif now_m:
                            events.append((etype, obj))
                    if store.history:
                        cursor = max(cursor, store.history[-1][0])
            if drop:
                self.connection.shutdown(socket.SHUT_RDWR)
                return
            if expired is not None:
                emit("ERROR", status_body(410, "Expired", "too old resource version: %s (%d)"
                                          % (rv_param or cursor, expired)))
                break
            for etype, obj in events:
                emit(etype, obj)
            if store.stopping or time.monotonic() >= deadline:
                break
            if bookmarks and time.monotonic() - last_bookmark >= fake.settings.bookmark_interval:
                emit("BOOKMARK", {"kind": res.kind, "apiVersion": res.api_version,
                                  "metadata": {"resourceVersion": str(cursor)}})
                last_bookmark = time.monotonic()
        self.wfile.write(b"0\r\n\r\n")

    def client_gone(self):
        """A watch's client sends nothing after its request: readable means closed."""
        sock = self.connection
        try:
            r, _, _ = select.select([sock], [], [], 0)
            if not r and not sock.pending():
                return False
            sock.setblocking(False)
            try:
                return sock.recv(1) == b""
            finally:
                sock.setblocking(True)
                sock.settimeout(300)
        except ssl.SSLWantReadError:
            return False
        except (OSError, ssl.SSLError, ValueError):
            return True

    # -- exec ---------------------------------------------------------------------------------

    def exec(self, fake, ns, name, query):
        pods = RESOURCES[("", "pods")]
        with fake.store.lock:
            pod = copy.deepcopy(fake.store.get(pods, ns, name))
        if pod is None:
            raise not_found(pods, name)
        argv = query.get("command", [])
        opts = {k: parse_bool(query.get(k, ["false"])[0]) for k in ("stdin", "stdout", "stderr",
                                                                     "tty")}
        self.entry["argv"] = argv
        if not (opts["stdin"] or opts["stdout"] or opts["stderr"]):
            raise bad_request("you must specify at least 1 of stdin, stdout, stderr")
        containers = pod["spec"]["containers"]
        cname = query.get("container", [""])[0]
        if not cname:
            if len(containers) != 1:
                raise bad_request("a container name must be specified for pod %s, choose one "
                                  "of: [%s]" % (name, " ".join(c["name"] for c in containers)))
            cname = containers[0]["name"]
        container = next((c for c in containers if c["name"] == cname), None)
        if container is None:
            raise bad_request("container %s is not valid for pod %s" % (cname, name))
        if not pod["spec"].get("nodeName"):
            raise bad_request("pod %s does not have a host assigned" % name)
        running = any(cs.get("name") == cname and "running" in (cs.get("state") or {})
                      for cs in pod.get("status", {}).get("containerStatuses") or [])
        if not running or pod["metadata"].get("deletionTimestamp"):
            raise bad_request('unable to upgrade connection: container not found ("%s")' % cname)
        if not argv:
            raise bad_request("you must specify at least one command for the container")
        if self.headers.get("Upgrade", "").lower() != "websocket":
            raise bad_request("Upgrade request required")
        key = self.headers.get("Sec-WebSocket-Key", "")
        try:
            ok_key = len(base64.b64decode(key, validate=True)) == 16
        except ValueError:
            ok_key = False
        if self.headers.get("Sec-WebSocket-Version") != "13" or not ok_key:
            raise bad_request("websocket: the client is not using the websocket protocol")
        offered = [p.strip() for h in self.headers.get_all("Sec-WebSocket-Protocol") or []
                   for p in h.split(",") if p.strip()]
        self.entry["offered"] = offered
        proto = next((p for p in SUBPROTOCOLS if p in offered), None)
        if proto is None:
            if offered:
                raise ApiError(403, "Forbidden", "unable to upgrade: unable to negotiate "
                               "protocol: client supports %s, server supports %s"
                               % (offered, SUBPROTOCOLS))
            proto = "channel.k8s.io"
        self.entry["subprotocol"] = proto
        with fake.store.lock:
            spec = fake.exec_spec(pod, container, argv)
        accept = base64.b64encode(hashlib.sha1((key + WS_GUID).encode()).digest()).decode()
        self.send_response(101, "Switching Protocols")
        self.send_header("Upgrade", "websocket")
        self.send_header("Connection", "Upgrade")
        self.send_header("Sec-WebSocket-Accept", accept)
        if offered:
            self.send_header("Sec-WebSocket-Protocol", proto)
        self.end_headers()
        self.status_code = 101
        self.close_connection = True
        sock = self.connection
        session = ExecSession(fake, self, sock, proto, argv, opts, spec, fake.take_exec_drop())
        first = 1 if opts["stdout"] else 2 if opts["stderr"] else None
        if first is not None:
            session.send(first, b"")
        fake.register_exec(pod["metadata"]["uid"], session)
        try:
            session.run()
        except (OSError, ssl.SSLError, WsClosed):
            pass
        finally:
            fake.unregister_exec(pod["metadata"]["uid"], session)

    # -- control API --------------------------------------------------------------------------

    @staticmethod
    def wake_controllers(fake):
        with fake.store.lock:
            fake.store.cond.notify_all()

    def control(self, fake, path, query):
        if self.headers.get("Authorization", "") != "Bearer " + fake.admin_token:
            raise ApiError(401, "Unauthorized", "Unauthorized: the control API needs the admin "
                           "token")
        s = fake.settings
        body = {}
        if self.command in ("POST", "PUT"):
            raw = self.read_body()
            try:
                body = json.loads(raw) if raw.strip() else {}
            except ValueError as e:
                raise bad_request("control body: %s" % e)
        m = self.command
        if path == "/_fake/state" and m == "GET":
            with s.lock:
                out = {"resourceVersion": fake.store.rv, "settings": s.public(),
                       "counters": fake.counters.snapshot()}
            return self.send_json(200, out)
        if path == "/_fake/counters" and m == "GET":
            return self.send_json(200, fake.counters.snapshot())
        if path == "/_fake/counters/reset" and m == "POST":
            return self.send_json(200, fake.counters.reset())
        if path == "/_fake/log" and m == "GET":
            entries, nxt = fake.log.since(int(query.get("since", ["0"])[0]))
            return self.send_json(200, {"entries": entries, "next": nxt})
        if path == "/_fake/log/reset" and m == "POST":
            fake.log.reset()
            return self.send_json(200, {})
        if path == "/_fake/faults":
            with s.lock:
                if m == "POST":
                    faults = body if isinstance(body, list) else [body]
                    s.faults.extend(dict(f) for f in faults)
                elif m == "DELETE":
                    s.faults = []
                return self.send_json(200, {"faults": s.faults})
        if path == "/_fake/watch/drop" and m == "POST":
            with s.lock:
                s.drop_watches += int(body.get("count", 1))
            with fake.store.lock:
                fake.store.cond.notify_all()
            return self.send_json(200, {"dropWatches": s.drop_watches})
        if path == "/_fake/exec/drop" and m == "POST":
            with s.lock:
                for _ in range(int(body.get("count", 1))):
                    s.drop_execs.append({"afterMs": int(body.get("afterMs", 0))})
            return self.send_json(200, {"dropExecs": s.drop_execs})
        if path == "/_fake/pods" and m == "POST":
            with s.lock:
                for k, attr in (("scheduleDelayMs", "schedule_ms"), ("startDelayMs", "start_ms"),
                                ("terminatingMs", "terminating_ms")):
                    if k in body:
                        setattr(s, attr, int(body[k]))
                if "failures" in body:
                    s.pod_failures = list(body["failures"])
            self.wake_controllers(fake)
            return self.send_json(200, s.public())
        if path == "/_fake/pvcs" and m == "POST":
            with s.lock:
                if "bindDelayMs" in body:
                    s.pvc_bind_ms = int(body["bindDelayMs"])
                if "pending" in body:
                    s.pvc_pending = list(body["pending"])
            self.wake_controllers(fake)
            return self.send_json(200, s.public())
        if path == "/_fake/rules" and m == "POST":
            with s.lock:
                if "rules" in body:
                    s.rules = list(body["rules"])
                if "enforce" in body:
                    s.enforce = bool(body["enforce"])
                if "bookmarkInterval" in body:
                    s.bookmark_interval = float(body["bookmarkInterval"])
            return self.send_json(200, s.public())
        if path == "/_fake/compact" and m == "POST":
            fake.store.compact()
            return self.send_json(200, {"floor": fake.store.floor})
        raise ApiError(404, "NotFound", "no control endpoint %s %s" % (m, path))


def not_found_path(path):
    return ApiError(404, "NotFound", "the server could not find the requested resource",
                    {"causes": [{"reason": "UnexpectedServerResponse", "message": "404 page not "
                                 "found"}]})


class Server(socketserver.ThreadingMixIn, http.server.HTTPServer):
    daemon_threads = True
    allow_reuse_address = True
    request_queue_size = 128

    def finish_request(self, request, client_address):
        request.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        request.settimeout(10)
        try:
            tls = self.ssl_context.wrap_socket(request, server_side=True)
        except (ssl.SSLError, OSError):
            return
        try:
            if tls.selected_alpn_protocol() == "h2":
                self.fake.counters.count("h2Negotiated")
                return
            tls.settimeout(300)
            self.RequestHandlerClass(tls, client_address, self)
        except (OSError, ssl.SSLError):
            pass
        finally:
            try:
                tls.close()
            except OSError:
                pass


# ---------------------------------------------------------------------------------------------
# Start-up: certificates, token, kubeconfig, server.json


def openssl(*args):
    subprocess.run(["openssl"] + list(args), check=True, stdout=subprocess.DEVNULL,
                   stderr=subprocess.PIPE)


def make_certs(state):
    p = lambda n: os.path.join(state, n)
    openssl("req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1",
            "-nodes", "-keyout", p("ca.key"), "-out", p("ca.crt"), "-days", "30",
            "-subj", "/CN=b4box-fake-apiserver-ca")
    ext = p("server.ext")
    with open(ext, "w") as f:
        f.write("subjectAltName=IP:127.0.0.1,IP:::1,DNS:localhost,DNS:kubernetes,"
                "DNS:kubernetes.default.svc\nextendedKeyUsage=serverAuth\n")
    openssl("req", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes",
            "-keyout", p("server.key"), "-out", p("server.csr"), "-subj", "/CN=kube-apiserver")
    openssl("x509", "-req", "-in", p("server.csr"), "-CA", p("ca.crt"), "-CAkey", p("ca.key"),
            "-CAcreateserial", "-out", p("server.crt"), "-days", "30", "-extfile", ext)
    with open(p("client.ext"), "w") as f:
        f.write("extendedKeyUsage=clientAuth\n")
    openssl("req", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes",
            "-keyout", p("client.key"), "-out", p("client.csr"),
            "-subj", "/O=system:masters/CN=fake-cert-user")
    openssl("x509", "-req", "-in", p("client.csr"), "-CA", p("ca.crt"), "-CAkey", p("ca.key"),
            "-CAcreateserial", "-out", p("client.crt"), "-days", "30", "-extfile",
            p("client.ext"))
    for n in ("server.csr", "client.csr", "server.ext", "client.ext"):
        os.unlink(p(n))
    return p("server.crt"), p("server.key"), p("ca.crt")


def write_atomic(path, text, mode=0o644):
    tmp = path + ".tmp"
    with open(tmp, "w") as f:
        f.write(text)
    os.chmod(tmp, mode)
    os.rename(tmp, path)


def kubeconfig(url, ca, token, state, namespace):
    with open(ca) as f:
        ca_data = base64.b64encode(f.read().encode()).decode()
    cert = os.path.join(state, "client.crt")
    key = os.path.join(state, "client.key")
    return json.dumps({
        "apiVersion": "v1", "kind": "Config", "current-context": "fake", "preferences": {},
        "clusters": [{"name": "fake", "cluster": {"server": url,
                                                  "certificate-authority-data": ca_data}}],
        "users": [{"name": "fake-token", "user": {"token": token}},
                  {"name": "fake-cert", "user": {"client-certificate": cert,
                                                 "client-key": key}}],
        "contexts": [{"name": "fake", "context": {"cluster": "fake", "user": "fake-token",
                                                  "namespace": namespace}},
                     {"name": "fake-cert", "context": {"cluster": "fake", "user": "fake-cert",
                                                       "namespace": namespace}}]}, indent=2)


def main(argv):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--state", required=True)
    ap.add_argument("--listen", default="127.0.0.1")
    ap.add_argument("--port", type=int, default=0)
    ap.add_argument("--namespace", action="append", help="extra namespace (repeatable); the "
                    "first is the kubeconfig's default (else 'default')")
    ap.add_argument("--token-file")
    ap.add_argument("--cert")
    ap.add_argument("--key")
    ap.add_argument("--ca")
    ap.add_argument("--alpn", default="http/1.1")
    ap.add_argument("--schedule-ms", type=int, default=20)
    ap.add_argument("--start-ms", type=int, default=80)
    ap.add_argument("--terminating-ms", type=int, default=300)
    ap.add_argument("--pvc-bind-ms", type=int, default=0)
    ap.add_argument("--bookmark-interval", type=float, default=1.0)
    ap.add_argument("--history", type=int, default=2000)
    ap.add_argument("--nodes", type=int, default=1)
    ap.add_argument("--rules")
    ap.add_argument("--log")
    ap.add_argument("--verbose", action="store_true")
    args = ap.parse_args(argv)
    zygote = Zygote()
    NODES[:] = ["fake-node-%d" % (i + 1) for i in range(max(args.nodes, 1))]
    state = os.path.abspath(args.state)
    os.makedirs(state, exist_ok=True)
    if args.cert:
        cert, key, ca = args.cert, args.key, args.ca
    else:
        cert, key, ca = make_certs(state)
    fake = Fake(args, state)
    fake.zygote = zygote
    if not args.token_file:
        write_atomic(fake.token_file, "fake-token-%s fake-user\n" % secrets.token_hex(16), 0o600)
    token = next(iter(fake.tokens()), None)
    fake.admin_token = "fake-admin-" + secrets.token_hex(16)
    write_atomic(os.path.join(state, "admin-token"), fake.admin_token + "\n", 0o600)

    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    ctx.load_cert_chain(cert, key)
    ctx.load_verify_locations(ca)
    ctx.verify_mode = ssl.CERT_OPTIONAL
    ctx.set_alpn_protocols([p for p in args.alpn.split(",") if p])
    if ":" in args.listen:
        Server.address_family = socket.AF_INET6
    server = Server((args.listen, args.port), Handler)
    server.ssl_context = ctx
    server.fake = fake
    port = server.server_address[1]
    host = args.listen if ":" not in args.listen else "[%s]" % args.listen
    url = "https://%s:%d" % (host, port)
    ns = (args.namespace or ["default"])[0]
    cfg = os.path.join(state, "kubeconfig")
    write_atomic(cfg, kubeconfig(url, ca, token or "", state, ns), 0o600)
    info = {"port": port, "url": url, "ca": os.path.abspath(ca), "kubeconfig": cfg,
            "tokenFile": os.path.abspath(fake.token_file), "adminToken": fake.admin_token,
            "pid": os.getpid(), "stateDir": state}
    write_atomic(os.path.join(state, "port"), "%d\n" % port)
    write_atomic(os.path.join(state, "server.json"), json.dumps(info) + "\n")
    print(json.dumps(info), flush=True)

    def stop(signum, frame):
        with fake.store.lock:
            fake.store.stopping = True
            fake.store.cond.notify_all()
        threading.Thread(target=server.shutdown, daemon=True).start()

    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGINT, stop)
    threading.Thread(target=fake.controller_loop, daemon=True).start()
    server.serve_forever(poll_interval=0.2)
    for uid in list(fake.execs):
        fake.kill_execs(uid)
    return 0


# ---------------------------------------------------------------------------------------------
# The sandbox an exec runs in. A zygote forked at start, before any thread, forks one helper
# per exec (fast, and fork-safe); the helper builds the namespaces and reports the exit code on
# the status pipe as {"exit": N} (or {"error": "..."} when the command cannot start).


class Zygote:
    def __init__(self):
        ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        self.pid = os.fork()
        if self.pid == 0:
            ours.close()
            zygote_main(theirs)
        theirs.close()
        self.sock = ours
        self.lock = threading.Lock()

    def spawn(self, spec, fds):
        """fds: the child's stdin, stdout, stderr and status pipe → the helper's pid."""
        with self.lock:
            socket.send_fds(self.sock, [json.dumps(spec).encode()], fds)
            reply = self.sock.recv(64)
        if not reply:
            raise OSError("the sandbox zygote is gone")
        return int(reply)


def zygote_main(sock):
    libc = ctypes.CDLL(None, use_errno=True)
    libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
    signal.signal(signal.SIGCHLD, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    while True:
        try:
            msg, fds, _, _ = socket.recv_fds(sock, 1 << 20, 8)
        except OSError:
            os._exit(0)
        if not msg:
            os._exit(0)
        pid = os.fork()
        if pid == 0:
            try:
                sock.close()
                libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
                signal.signal(signal.SIGCHLD, signal.SIG_DFL)
                os.setsid()
                for i in range(3):
                    os.dup2(fds[i], i)
                spec = json.loads(msg)
                spec["statusFd"] = os.dup(fds[3])
                for fd in fds:
                    os.close(fd)
                try:
                    sandbox_main(spec)
                except Exception as e:
                    os.write(spec["statusFd"], json.dumps(
                        {"error": "the fake's sandbox failed: %r" % e}).encode() + b"\n")
            finally:
                os._exit(127)
        for fd in fds:
            os.close(fd)
        sock.send(str(pid).encode())


CLONE_NEWNS, CLONE_NEWPID, CLONE_NEWUTS = 0x00020000, 0x20000000, 0x04000000
MS_RDONLY, MS_NOSUID, MS_NODEV, MS_NOEXEC = 1, 2, 4, 8
MS_REMOUNT, MS_BIND, MS_REC, MS_PRIVATE = 32, 4096, 16384, 1 << 18
PR_SET_PDEATHSIG, PR_SET_NO_NEW_PRIVS, PR_CAPBSET_DROP = 1, 38, 24
AT_FDCWD, AT_RECURSIVE, MOUNT_ATTR_RDONLY, SYS_MOUNT_SETATTR = -100, 0x8000, 1, 442


class MountAttr(ctypes.Structure):
    _fields_ = [("attr_set", ctypes.c_uint64), ("attr_clr", ctypes.c_uint64),
                ("propagation", ctypes.c_uint64), ("userns_fd", ctypes.c_uint64)]


def sandbox_main(spec):
    libc = ctypes.CDLL(None, use_errno=True)
    status_fd = spec["statusFd"]

    def fail(msg):
        os.write(status_fd, json.dumps({"error": msg}).encode() + b"\n")
        os._exit(127)

    def check(rc, what):
        if rc != 0:
            e = ctypes.get_errno()
            fail("%s: %s" % (what, os.strerror(e)))

    def mount(src, dst, fstype, flags, what):
        check(libc.mount(src.encode() if src else None, dst.encode(),
                         fstype.encode() if fstype else None, ctypes.c_ulong(flags), None), what)

    def readonly(path, recursive):
        attr = MountAttr(MOUNT_ATTR_RDONLY, 0, 0, 0)
        rc = libc.syscall(SYS_MOUNT_SETATTR, AT_FDCWD, path.encode(),
                          AT_RECURSIVE if recursive else 0, ctypes.byref(attr),
                          ctypes.sizeof(attr))
        if rc != 0:
            mount(None, path, None, MS_REMOUNT | MS_BIND | MS_RDONLY, "read-only " + path)

    check(libc.unshare(CLONE_NEWNS | CLONE_NEWPID | CLONE_NEWUTS), "unshare")
    mount(None, "/", None, MS_REC | MS_PRIVATE, "make / private")
    alive_r, alive_w = os.pipe()
    pid = os.fork()
    if pid:
        os.close(alive_r)
        for s in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
            signal.signal(s, signal.SIG_IGN)
        _, st = os.waitpid(pid, 0)
        code = os.waitstatus_to_exitcode(st) if os.WIFEXITED(st) else 128 + os.WTERMSIG(st)
        os.write(status_fd, json.dumps({"exit": code}).encode() + b"\n")
        os._exit(code)
    # PID 1 of the sandbox: when it dies, the kernel kills everything the command started. It
    # dies with the helper (PDEATHSIG); the pipe closes the window before prctl took effect.
    libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
    os.close(alive_w)
    if select.select([alive_r], [], [], 0)[0]:
        os._exit(137)
    libc.sethostname(spec["hostname"].encode(), len(spec["hostname"].encode()))
    root = spec["rootfs"]
    mount(root, root, None, MS_BIND, "bind rootfs")
    for entry in sorted(os.listdir("/")):
        src, dst = "/" + entry, os.path.join(root, entry)
        if entry in ("proc", "tmp", "run", "lost+found"):
            os.makedirs(dst, exist_ok=True)
            continue
        if os.path.islink(src):
            try:
                os.symlink(os.readlink(src), dst)
            except FileExistsError:
                pass
            continue
        if os.path.isdir(src):
            os.makedirs(dst, exist_ok=True)
            mount(src, dst, None, MS_BIND | MS_REC, "bind " + src)
            if entry != "dev":
                readonly(dst, True)
    os.chmod(os.path.join(root, "tmp"), 0o1777)
    mount("proc", os.path.join(root, "proc"), "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC, "proc")
    for m in sorted(spec["mounts"], key=lambda m: m["target"].count("/")):
        dst = os.path.join(root, m["target"].lstrip("/"))
        try:
            os.makedirs(dst, exist_ok=True)
        except OSError as e:
            fail("mountpoint %s: %s" % (m["target"], e.strerror))
        mount(m["source"], dst, None, MS_BIND | MS_REC, "bind volume at " + m["target"])
        if m["readOnly"]:
            readonly(dst, True)
    if spec["readOnlyRoot"]:
        readonly(root, False)
    pid = os.fork()
    if pid == 0:
        run_command(spec, libc, root, fail)
    for s in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP, signal.SIGQUIT):
        signal.signal(s, signal.SIG_IGN)
    os.close(status_fd)
    while True:
        try:
            got, st = os.waitpid(-1, 0)
        except ChildProcessError:
            os._exit(1)
        if got == pid:
            os._exit(os.waitstatus_to_exitcode(st) if os.WIFEXITED(st) else
                     128 + os.WTERMSIG(st))


CAPS = ["CHOWN", "DAC_OVERRIDE", "DAC_READ_SEARCH", "FOWNER", "FSETID", "KILL", "SETGID",
        "SETUID", "SETPCAP", "LINUX_IMMUTABLE", "NET_BIND_SERVICE", "NET_BROADCAST", "NET_ADMIN",
        "NET_RAW", "IPC_LOCK", "IPC_OWNER", "SYS_MODULE", "SYS_RAWIO", "SYS_CHROOT", "SYS_PTRACE",
        "SYS_PACCT", "SYS_ADMIN", "SYS_BOOT", "SYS_NICE", "SYS_RESOURCE", "SYS_TIME",
        "SYS_TTY_CONFIG", "MKNOD", "LEASE", "AUDIT_WRITE", "AUDIT_CONTROL", "SETFCAP",
        "MAC_OVERRIDE", "MAC_ADMIN", "SYSLOG", "WAKE_ALARM", "BLOCK_SUSPEND", "AUDIT_READ",
        "PERFMON", "BPF", "CHECKPOINT_RESTORE"]


def run_command(spec, libc, root, fail):
    os.set_inheritable(spec["statusFd"], False)
    try:
        os.chroot(root)
        os.chdir("/")
    except OSError as e:
        fail("chroot: %s" % e.strerror)
    try:
        os.chdir(spec["cwd"])
    except OSError as e:
        fail('chdir to cwd ("%s") set in config.json failed: %s' % (spec["cwd"], e.strerror))
    drop = spec["dropCaps"]
    for i, name in enumerate(CAPS):
        if "ALL" in drop or name in drop or "CAP_" + name in drop:
            libc.prctl(PR_CAPBSET_DROP, i, 0, 0, 0)
    if spec["noNewPrivs"]:
        libc.prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0)
    try:
        os.setgroups([int(g) for g in spec["groups"]])
        os.setgid(int(spec["gid"]))
        os.setuid(int(spec["uid"]))
    except OSError as e:
        fail("setuid: %s" % e.strerror)
    argv = spec["argv"]
    try:
        os.execvpe(argv[0], argv, spec["env"])
    except OSError as e:
        if e.errno == errno.ENOENT and "/" not in argv[0]:
            fail('exec: "%s": executable file not found in $PATH' % argv[0])
        fail('exec: "%s": %s' % (argv[0], e.strerror.lower()))


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
