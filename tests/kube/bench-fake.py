#!/usr/bin/python3
"""The fake's own costs, so a bench against it knows what is the fake and what is the client:
a request on a kept-alive connection, a WebSocket exec of `true` (upgrade to the first message,
and to the close), 300 Pod+PVC pairs to Running, idle CPU with them. Not a meson test:
    tests/kube/with-fake.sh tests/kube/bench-fake.py"""
import http.client
import json
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from fakeclient import (AUTH, CTX, PODS, PVCS, STATE, URL, Ws, exec_path, pod,  # noqa: E402
                        pvc, request, running, wait_pod)

TOKEN = AUTH["token"]


def p50(xs):
    xs = sorted(xs)
    return xs[len(xs) // 2] * 1000, xs[len(xs) * 9 // 10] * 1000


conn = http.client.HTTPSConnection(URL.hostname, URL.port, context=CTX, timeout=20)
times = []
for _ in range(50):
    t = time.perf_counter()
    conn.request("GET", PODS, headers={"Authorization": "Bearer " + TOKEN})
    conn.getresponse().read()
    times.append(time.perf_counter() - t)
print("GET pods, kept-alive connection: p50 %.1f ms, p90 %.1f ms" % p50(times))

request("POST", PODS, pod("bench", sc={}))
wait_pod("bench", running)
first, whole = [], []
for _ in range(20):
    t = time.perf_counter()
    ws = Ws(exec_path("bench", ["true"], stdout="true"))
    ws.sock.settimeout(10)
    ws.recv_frame()
    first.append(time.perf_counter() - t)
    ws.run()
    whole.append(time.perf_counter() - t)
print("exec true: TLS + upgrade + first message p50 %.1f ms, p90 %.1f ms" % p50(first))
print("exec true: to the close (sandbox made and torn down) p50 %.1f ms, p90 %.1f ms"
      % p50(whole))

pid = json.load(open(os.path.join(STATE, "server.json")))["pid"]


def cpu_seconds():
    f = open("/proc/%d/stat" % pid).read().split(")")[1].split()
    return (int(f[11]) + int(f[12])) / os.sysconf("SC_CLK_TCK")


t0 = time.perf_counter()
for i in range(300):
    for path, obj in ((PVCS, pvc("s%d" % i)), (PODS, pod("s%d" % i, claim="s%d" % i))):
        conn.request("POST", path, body=json.dumps(obj), headers={
            "Authorization": "Bearer " + TOKEN, "Content-Type": "application/json"})
        conn.getresponse().read()
created = time.perf_counter() - t0
while time.perf_counter() - t0 < 60:
    conn.request("GET", PODS + "?fieldSelector=status.phase%3DRunning",
                 headers={"Authorization": "Bearer " + TOKEN})
    if len(json.loads(conn.getresponse().read())["items"]) == 301:
        break
    time.sleep(0.1)
print("300 PVC + Pod creates: %.2f s (%.1f ms each); all Running after %.2f s"
      % (created, created / 600 * 1000, time.perf_counter() - t0))
c0 = cpu_seconds()
time.sleep(3)
print("idle CPU of the fake holding 300 Pods and 300 PVCs: %.0f%% of a core"
      % ((cpu_seconds() - c0) / 3 * 100))
