#!/usr/bin/python3
# The handle's filesystem over HTTP (docs/http-api.md "Filesystem") and GET /threads/{id}/check:
# p50/p95 latency of each op against a `b4box serve` this script starts on a unix socket.
#   bench/fs-routes.py BUILD/src/cli/b4box fake|native
# Prints one line per op; the thread it creates is deleted at the end.
import json, os, socket, subprocess, sys, time, http.client, base64, statistics, tempfile, shutil
B4BOX, ptype = sys.argv[1], sys.argv[2]
work = tempfile.mkdtemp(prefix="b4fsbench.")
cfg = os.path.join(work, "c.json")
json.dump({"sandbox": {"provider": {"type": ptype, "scope": "bench-fs-" + ptype}, "network": {"mode": "deny"}}, "permissions": {"mode": "non-interactive"}}, open(cfg, "w"))
sock = os.path.join(work, "s")
p = subprocess.Popen([B4BOX, "-c", cfg, "--state", os.path.join(work, "st"), "serve", "--listen", "unix:" + sock], stderr=subprocess.DEVNULL)
def req(method, path, body=None):
    s = socket.socket(socket.AF_UNIX); s.connect(sock)
    data = json.dumps(body).encode() if body is not None else b""
    s.sendall(("%s %s HTTP/1.1\r\nHost: b4\r\nConnection: close\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n" % (method, path, len(data))).encode() + data)
    r = http.client.HTTPResponse(s); r.begin(); t = r.read(); s.close(); return r.status, t
for _ in range(100):
    try:
        if req("GET", "/healthz")[0] == 200: break
    except OSError: time.sleep(0.05)
req("POST", "/threads", {"thread_id": "b"})
req("POST", "/threads/b/fs/write", {"path": "w", "content": "x"})
def timeit(name, fn, n=200):
    ts = []
    for _ in range(n):
        t0 = time.perf_counter(); st, _ = fn(); ts.append((time.perf_counter() - t0) * 1000); assert st == 200, (name, st)
    ts.sort(); print("%-6s %-28s p50 %.2f ms  p95 %.2f ms" % (ptype, name, ts[len(ts)//2], ts[int(len(ts)*0.95)]))
mib = base64.b64encode(os.urandom(1 << 20)).decode()
timeit("write 1 KiB text", lambda: req("POST", "/threads/b/fs/write", {"path": "k.txt", "content": "a" * 1024}))
timeit("read 1 KiB text", lambda: req("POST", "/threads/b/fs/read", {"path": "k.txt"}))
timeit("stat", lambda: req("POST", "/threads/b/fs/stat", {"path": "k.txt"}))
timeit("write 1 MiB base64", lambda: req("POST", "/threads/b/fs/write", {"path": "m.bin", "content": mib, "encoding": "base64"}), 50)
timeit("read 1 MiB base64", lambda: req("POST", "/threads/b/fs/read", {"path": "m.bin", "encoding": "base64"}), 50)
timeit("read 4 KiB range of 1 MiB", lambda: req("POST", "/threads/b/fs/read", {"path": "m.bin", "encoding": "base64", "offset": 500000, "length": 4096}))
timeit("GET check", lambda: req("GET", "/threads/b/check"), 50)
req("DELETE", "/threads/b"); p.terminate(); p.wait(); shutil.rmtree(work, ignore_errors=True)
