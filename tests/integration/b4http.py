#!/usr/bin/env python3
# The HTTP test harness t0700-fs.py and t0780-readers.py share: TAP output, a `b4box serve`
# on a unix socket per configuration (Server), one request per connection, refusal codes.
import http.client
import json
import os
import socket
import subprocess
import tempfile
import time

B4BOX = os.environ["B4BOX"]
TAP = {"n": 0, "failed": 0}
WORK = tempfile.mkdtemp(prefix="b4http.")
SERVERS = []
MIB = 1024 * 1024


def ok(cond, name):
    TAP["n"] += 1
    if not cond:
        TAP["failed"] += 1
    print(("ok %d - %s" if cond else "not ok %d - %s") % (TAP["n"], name), flush=True)
    return cond


def diag(msg):
    for line in str(msg).splitlines():
        print("# " + line, flush=True)


class Server:
    def __init__(self, name, config):
        self.dir = os.path.join(WORK, name)
        os.makedirs(self.dir)
        self.sock = os.path.join(self.dir, "sock")
        self.token = None
        cfg = os.path.join(self.dir, "b4box.json")
        with open(cfg, "w") as f:
            json.dump(config, f)
        self.log = open(os.path.join(self.dir, "server.log"), "ab")
        self.proc = subprocess.Popen([B4BOX, "-c", cfg, "--state", os.path.join(self.dir, "state"),
                                      "serve", "--listen", "unix:" + self.sock],
                                     stdin=subprocess.DEVNULL, stdout=self.log, stderr=self.log)
        SERVERS.append(self)

    def up(self):
        for _ in range(200):
            try:
                if self.request("GET", "/healthz")[0] == 200:
                    return True
            except OSError:
                pass
            if self.proc.poll() is not None:
                break
            time.sleep(0.05)
        return False

    def request(self, method, path, body=None, token=None, raw=None):
        """One request in one write (a refusal before the body is read closes the connection:
        http.client's separate body write would then fail), the whole answer read back."""
        data = raw if raw is not None else (b"" if body is None else json.dumps(body).encode())
        head = "%s %s HTTP/1.1\r\nHost: b4\r\nConnection: close\r\n" % (method, path)
        if body is not None or raw is not None:
            head += "Content-Type: application/json\r\nContent-Length: %d\r\n" % len(data)
        if token or self.token:
            head += "Authorization: Bearer %s\r\n" % (token or self.token)
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        sock.settimeout(120)
        try:
            sock.connect(self.sock)
            try:
                sock.sendall(head.encode() + b"\r\n" + data)
            except (BrokenPipeError, ConnectionResetError):
                pass  # answered before the whole body was read: the answer is below
            r = http.client.HTTPResponse(sock)
            r.begin()
            text = r.read()
        finally:
            sock.close()
        try:
            return r.status, json.loads(text) if text else None
        except ValueError:
            return r.status, text

    def fs(self, thread, op, body, token=None):
        return self.request("POST", "/threads/%s/fs/%s" % (thread, op), body, token=token)

    def stop(self):
        """SIGTERM; the first stop reports the exit status (a sanitizer report fails it)."""
        if self.proc.poll() is None:
            self.proc.terminate()
            rc = self.proc.wait()
            if not ok(rc == 0, "%s: the server exits cleanly" % os.path.basename(self.dir)):
                with open(os.path.join(self.dir, "server.log"), "rb") as f:
                    diag(f.read()[-3000:].decode(errors="replace"))


def code(answer):
    status, body = answer
    if isinstance(body, dict) and "error" in body:
        return status, body["error"].get("details", {}).get("code")
    return status, None
