#!/usr/bin/python3
"""A raw HTTPS, watch and WebSocket client for the fake API server, written here (not a
Kubernetes client library) so the fake's own tests and bench see the bytes: used by
fake-selftest.py and bench-fake.py under with-fake.sh (FAKE_URL, FAKE_STATE, FAKE_ADMIN,
FAKE_CA). AUTH["token"] is the bearer token requests use (a test may rotate it)."""
import base64
import http.client
import json
import os
import socket
import ssl
import time
import urllib.parse

URL = urllib.parse.urlsplit(os.environ["FAKE_URL"])
STATE = os.environ["FAKE_STATE"]
ADMIN = os.environ["FAKE_ADMIN"]
AUTH = {"token": open(os.path.join(STATE, "token")).read().split()[0]}
CTX = ssl.create_default_context(cafile=os.environ["FAKE_CA"])
NS = "default"
DEFAULT = object()


def request(method, path, body=None, token=DEFAULT, ctype="application/json", headers=None,
            ctx=CTX, port=None):
    conn = http.client.HTTPSConnection(URL.hostname, port or URL.port, context=ctx, timeout=20)
    h = {"Content-Type": ctype}
    token = AUTH["token"] if token is DEFAULT else token
    if token:
        h["Authorization"] = "Bearer " + token
    h.update(headers or {})
    data = body if isinstance(body, bytes) or body is None else json.dumps(body).encode()
    conn.request(method, path, body=data, headers=h)
    r = conn.getresponse()
    raw = r.read()
    conn.close()
    try:
        return r.status, json.loads(raw), r
    except ValueError:
        return r.status, raw, r


def ctl(method, path, body=None):
    return request(method, "/_fake" + path, body, token=ADMIN)[1]


def pvc(name, labels=None):
    return {"apiVersion": "v1", "kind": "PersistentVolumeClaim",
            "metadata": {"name": name, "labels": labels or {}},
            "spec": {"accessModes": ["ReadWriteOnce"],
                     "resources": {"requests": {"storage": "1Gi"}}}}


def pod(name, claim=None, image="busybox:1.36", labels=None, sc=None, csc=None, mounts=None):
    volumes, vm = [], list(mounts or [])
    if claim:
        volumes.append({"name": "ws", "persistentVolumeClaim": {"claimName": claim}})
        vm.append({"name": "ws", "mountPath": "/workspace"})
    for m in mounts or []:
        volumes.append({"name": m["name"], "emptyDir": {}})
    return {"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": name, "labels": labels or {}},
            "spec": {"terminationGracePeriodSeconds": 1,
                     "securityContext": sc if sc is not None else {"runAsUser": 1000,
                                                                   "runAsGroup": 1000},
                     "containers": [{"name": "sandbox", "image": image,
                                     "command": ["sleep", "infinity"],
                                     "securityContext": csc or {}, "volumeMounts": vm}],
                     "volumes": volumes}}


PODS = "/api/v1/namespaces/%s/pods" % NS
PVCS = "/api/v1/namespaces/%s/persistentvolumeclaims" % NS
NPS = "/apis/networking.k8s.io/v1/namespaces/%s/networkpolicies" % NS


def wait_pod(name, pred, seconds=10):
    deadline = time.time() + seconds
    obj = None
    while time.time() < deadline:
        code, obj, _ = request("GET", PODS + "/" + name)
        if code == 200 and pred(obj):
            return obj
        time.sleep(0.05)
    return obj


def running(o):
    return o.get("status", {}).get("phase") == "Running"


# -- a raw streaming reader for watch ---------------------------------------------------------

class Stream:
    """A watch read by hand, so a clean end (the 0-length chunk) and a cut differ."""

    def __init__(self, path, token=None):
        raw = socket.create_connection((URL.hostname, URL.port), timeout=10)
        self.sock = CTX.wrap_socket(raw, server_hostname=URL.hostname)
        self.sock.sendall(("GET %s HTTP/1.1\r\nHost: %s\r\nAuthorization: Bearer %s\r\n\r\n"
                           % (path, URL.hostname, token or AUTH["token"])).encode())
        self.buf = b""
        while b"\r\n\r\n" not in self.buf:
            chunk = self.sock.recv(4096)
            if not chunk:
                break
            self.buf += chunk
        head, _, self.buf = self.buf.partition(b"\r\n\r\n")
        self.status = int(head.split()[1])
        self.data = b""

    def _more(self):
        chunk = self.sock.recv(65536)
        if not chunk:
            raise EOFError
        self.buf += chunk

    def _chunk(self):
        while b"\r\n" not in self.buf:
            self._more()
        size_line, _, self.buf = self.buf.partition(b"\r\n")
        n = int(size_line.split(b";")[0], 16)
        while len(self.buf) < n + 2:
            self._more()
        data, self.buf = self.buf[:n], self.buf[n + 2:]
        return data

    def events(self, until=None, seconds=5):
        """Read NDJSON events until `until(events)` or the stream ends; → (events, how): how is
        until, end (the final chunk), cut (EOF without it) or timeout."""
        out = []
        deadline = time.time() + seconds
        try:
            while time.time() < deadline:
                self.sock.settimeout(max(deadline - time.time(), 0.01))
                while b"\n" in self.data:
                    line, _, self.data = self.data.partition(b"\n")
                    out.append(json.loads(line))
                    if until and until(out):
                        return out, "until"
                chunk = self._chunk()
                if chunk == b"":
                    return out, "end"
                self.data += chunk
        except (EOFError, ConnectionError, ssl.SSLError):
            return out, "cut"
        except (socket.timeout, TimeoutError):
            return out, "timeout"
        return out, "timeout"

    def close(self):
        self.sock.close()


# -- a raw WebSocket client for exec ----------------------------------------------------------

class Ws:
    def __init__(self, path, protocols=("v5.channel.k8s.io",), token=None):
        token = token or AUTH["token"]
        raw = socket.create_connection((URL.hostname, URL.port), timeout=10)
        self.sock = CTX.wrap_socket(raw, server_hostname=URL.hostname)
        key = base64.b64encode(os.urandom(16)).decode()
        lines = ["GET %s HTTP/1.1" % path, "Host: %s:%d" % (URL.hostname, URL.port),
                 "Upgrade: websocket", "Connection: Upgrade", "Sec-WebSocket-Key: " + key,
                 "Sec-WebSocket-Version: 13", "Authorization: Bearer " + token]
        if protocols:
            lines.append("Sec-WebSocket-Protocol: " + ", ".join(protocols))
        self.sock.sendall(("\r\n".join(lines) + "\r\n\r\n").encode())
        self.buf = b""
        while b"\r\n\r\n" not in self.buf:
            chunk = self.sock.recv(4096)
            if not chunk:
                break
            self.buf += chunk
        head, _, self.buf = self.buf.partition(b"\r\n\r\n")
        lines = head.decode().split("\r\n")
        self.status = int(lines[0].split()[1])
        self.headers = {l.split(":", 1)[0].lower(): l.split(":", 1)[1].strip() for l in lines[1:]
                        if ":" in l}
        self.body = b""
        if self.status != 101:
            n = int(self.headers.get("content-length", 0))
            while len(self.buf) < n:
                self.buf += self.sock.recv(4096)
            self.body = json.loads(self.buf[:n])

    def send_frame(self, opcode, payload, fin=True, mask=True):
        n = len(payload)
        head = bytes([(0x80 if fin else 0) | opcode])
        mbit = 0x80 if mask else 0
        if n < 126:
            head += bytes([mbit | n])
        elif n < 65536:
            head += bytes([mbit | 126]) + n.to_bytes(2, "big")
        else:
            head += bytes([mbit | 127]) + n.to_bytes(8, "big")
        if mask:
            key = os.urandom(4)
            payload = bytes(b ^ key[i % 4] for i, b in enumerate(payload))
            head += key
        self.sock.sendall(head + payload)

    def send(self, channel, data):
        self.send_frame(2, bytes([channel]) + data)

    def recv_frame(self):
        def need(n):
            while len(self.buf) < n:
                chunk = self.sock.recv(65536)
                if not chunk:
                    raise EOFError
                self.buf += chunk
        need(2)
        opcode, n = self.buf[0] & 0x0F, self.buf[1] & 0x7F
        masked = self.buf[1] & 0x80
        i = 2
        if n == 126:
            need(4)
            n, i = int.from_bytes(self.buf[2:4], "big"), 4
        elif n == 127:
            need(10)
            n, i = int.from_bytes(self.buf[2:10], "big"), 10
        need(i + n)
        payload, self.buf = self.buf[i:i + n], self.buf[i + n:]
        return opcode, payload, masked

    def run(self, seconds=10):
        """Read to the close: → (frames [(channel, data)], close_code, saw_masked)."""
        frames, close, masked_seen = [], None, False
        self.sock.settimeout(seconds)
        try:
            while True:
                op, payload, masked = self.recv_frame()
                masked_seen |= bool(masked)
                if op == 8:
                    close = int.from_bytes(payload[:2], "big") if len(payload) >= 2 else 1005
                    self.send_frame(8, payload[:2])
                    break
                if op == 10:
                    frames.append(("pong", payload))
                elif op == 2:
                    frames.append((payload[0], payload[1:]))
        except (EOFError, OSError):
            pass
        self.sock.close()
        return frames, close, masked_seen


def exec_path(name, argv, **flags):
    q = [("command", a) for a in argv] + [("container", "sandbox")]
    q += [(k, v) for k, v in flags.items()]
    return PODS + "/" + name + "/exec?" + urllib.parse.urlencode(q)


def joined(frames, ch):
    return b"".join(d for c, d in frames if c == ch)


def sandbox_procs():
    n = 0
    for p in os.listdir("/proc"):
        if p.isdigit():
            try:
                if os.readlink("/proc/%s/root" % p).startswith(STATE + "/"):
                    n += 1
            except OSError:
                pass
    return n


def wait_no_procs(seconds=3):
    deadline = time.time() + seconds
    while time.time() < deadline and sandbox_procs():
        time.sleep(0.05)
    return sandbox_procs()


