#!/usr/bin/python3
# Workspace readers over HTTP (docs/http-api.md "Readers") against the fs route they mirror:
# p50/p95 of a 4 KiB read through each, and a reader's open + close, against a `b4box serve`
# this script starts on a unix socket (one keep-alive connection).
#   bench/readers.py BUILD/src/cli/b4box fake|native
import http.client, json, os, shutil, socket, subprocess, sys, tempfile, time
B4BOX, ptype = sys.argv[1], sys.argv[2]
work = tempfile.mkdtemp(prefix="b4rdbench.")
os.mkdir(os.path.join(work, "empty"))
with open(os.path.join(work, "tok"), "w") as f:
    f.write("bench-token-0123456789")
resolver = os.path.join(work, "resolve.sh")
with open(resolver, "w") as f:
    f.write("#!/bin/sh\ncat >/dev/null\necho '{\"workspace\": {\"source\": {\"directory\": \"empty\", \"include\": []}}}'\n")
os.chmod(resolver, 0o755)
cfg = os.path.join(work, "c.json")
json.dump({"sandbox": {"provider": {"type": ptype, "scope": "bench-rd-" + ptype}, "network": {"mode": "deny"},
                       "thread": {"command": [resolver]}, "workspaceRead": "http"},
           "permissions": {"mode": "non-interactive"},
           "threadAccess": {"principals": [{"name": "b", "tokenFile": os.path.join(work, "tok"), "threads": "all",
                                            "operations": ["thread.create", "thread.read", "thread.run", "thread.delete", "thread.workspace"]}]}},
          open(cfg, "w"))
sock = os.path.join(work, "s")
p = subprocess.Popen([B4BOX, "-c", cfg, "--state", os.path.join(work, "st"), "serve", "--listen", "unix:" + sock], stderr=subprocess.DEVNULL)


class Conn(http.client.HTTPConnection):
    def connect(self):
        self.sock = socket.socket(socket.AF_UNIX)
        self.sock.connect(sock)


H = {"Authorization": "Bearer bench-token-0123456789", "Content-Type": "application/json"}
for _ in range(100):
    try:
        c = Conn("b4"); c.request("GET", "/healthz"); c.getresponse().read(); break
    except OSError:
        time.sleep(0.05)
def req(method, path, body=None):
    c.request(method, path, json.dumps(body) if body is not None else None, H)
    r = c.getresponse(); t = r.read(); return r.status, t
def timeit(name, fn, n=300):
    ts = []
    for _ in range(n):
        t0 = time.perf_counter(); st = fn(); ts.append((time.perf_counter() - t0) * 1000); assert st in (200, 204), (name, st)
    ts.sort(); print("%-6s %-28s p50 %.2f ms  p95 %.2f ms" % (ptype, name, ts[len(ts)//2], ts[int(len(ts)*0.95)]))
req("POST", "/threads", {"thread_id": "b"})
req("POST", "/threads/b/fs/write", {"path": "a.txt", "content": "x" * 4096})
rid = json.loads(req("POST", "/threads/b/readers")[1])["readerId"]
timeit("fs route: read 4 KiB", lambda: req("POST", "/threads/b/fs/read", {"path": "a.txt"})[0])
timeit("reader: read 4 KiB", lambda: req("POST", "/threads/b/readers/%s/fs/read" % rid, {"path": "a.txt"})[0])
def open_close():
    r = json.loads(req("POST", "/threads/b/readers")[1])["readerId"]
    return req("DELETE", "/threads/b/readers/" + r)[0]
timeit("reader: open + close", open_close, 100)
req("DELETE", "/threads/b"); p.terminate(); p.wait(); shutil.rmtree(work, ignore_errors=True)
