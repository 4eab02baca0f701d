#!/usr/bin/python3
# Streaming runBash (issue 16 items 1, 3, 4) over `b4box serve`: SSE and NDJSON shapes, output
# delivered as it comes (`echo a; sleep 2; echo b`: a >= 1.5 s before exit), NDJSON events
# equal to SSE events, keepalives, refusals decided before the 200, a dropped connection kills
# the command (process and cgroup gone), per-call options and their bounds, accounting
# (oomKilled under a 128 MiB limit, cpuMs against the shell's own `times`). Fake always; the
# native parts when running as root. TAP on stdout.
import json
import os
import re
import shutil
import socket
import subprocess
import sys
import tempfile
import time

B4BOX = os.environ["B4BOX"]
TAP = {"n": 0, "failed": 0}
KEEPALIVE_MS = 300


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
    def __init__(self, work, name, cfg):
        self.dir = os.path.join(work, name)
        os.makedirs(self.dir)
        self.sock = os.path.join(self.dir, "sock")
        with open(os.path.join(self.dir, "b4box.json"), "w") as f:
            json.dump(cfg, f)
        self.log = open(os.path.join(self.dir, "server.log"), "w")
        self.proc = subprocess.Popen(
            [B4BOX, "-c", os.path.join(self.dir, "b4box.json"), "--state",
             os.path.join(self.dir, "state"), "serve", "--listen", "unix:" + self.sock],
            stderr=self.log)
        for _ in range(200):
            if os.path.exists(self.sock):
                try:
                    if self.request("GET", "/healthz")[0] == 200:
                        return
                except OSError:
                    pass
            time.sleep(0.05)
        raise RuntimeError("server did not start")

    def stop(self):
        self.proc.terminate()
        self.proc.wait(30)
        self.log.close()

    def connect(self):
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        s.connect(self.sock)
        return s

    def send(self, s, method, path, body=None, accept=None):
        data = json.dumps(body).encode() if body is not None else b""
        hdr = "%s %s HTTP/1.1\r\nHost: b4\r\nConnection: close\r\n" % (method, path)
        if body is not None:
            hdr += "Content-Type: application/json\r\nContent-Length: %d\r\n" % len(data)
        if accept:
            hdr += "Accept: %s\r\n" % accept
        s.sendall(hdr.encode() + b"\r\n" + data)

    def request(self, method, path, body=None, accept=None):
        """Whole reply: (status, headers dict, body bytes)."""
        s = self.connect()
        self.send(s, method, path, body, accept)
        raw = b""
        while True:
            b = s.recv(65536)
            if not b:
                break
            raw += b
        s.close()
        return parse_reply(raw)


def dechunk(body):
    out, i = b"", 0
    while True:
        j = body.index(b"\r\n", i)
        n = int(body[i:j], 16)
        if n == 0:
            return out
        out += body[j + 2:j + 2 + n]
        i = j + 2 + n + 2


def parse_reply(raw):
    head, _, body = raw.partition(b"\r\n\r\n")
    lines = head.decode().split("\r\n")
    status = int(lines[0].split()[1])
    headers = {k.lower(): v.strip() for k, _, v in (l.partition(":") for l in lines[1:])}
    if headers.get("transfer-encoding") == "chunked":
        body = dechunk(body)
    return status, headers, body


class Reader:
    """A streamed reply read incrementally: events with their arrival times."""

    def __init__(self, srv, path, body, accept):
        self.s = srv.connect()
        srv.send(self.s, "POST", path, body, accept)
        self.buf = b""
        self.format = "sse" if "event-stream" in accept else "ndjson"
        while b"\r\n\r\n" not in self.buf:
            self.buf += self.s.recv(65536)
        head, _, self.buf = self.buf.partition(b"\r\n\r\n")
        lines = head.decode().split("\r\n")
        self.status = int(lines[0].split()[1])
        self.headers = {k.lower(): v.strip() for k, _, v in (l.partition(":") for l in lines[1:])}
        self.chunked = self.headers.get("transfer-encoding") == "chunked"
        self.text = b""  # the de-chunked body so far
        self.events = []  # (time, name, id, data) ; keepalives as ("keepalive", None, None)
        self.eof = False

    def _fill(self):
        b = self.s.recv(65536)
        if not b:
            self.eof = True
        self.buf += b

    def _pump(self):
        if not self.chunked:
            self.text += self.buf
            self.buf = b""
            return
        while True:
            j = self.buf.find(b"\r\n")
            if j < 0:
                return
            n = int(self.buf[:j], 16)
            if n == 0:
                self.eof = True
                self.buf = b""
                return
            if len(self.buf) < j + 2 + n + 2:
                return
            self.text += self.buf[j + 2:j + 2 + n]
            self.buf = self.buf[j + 2 + n + 2:]

    def _parse(self):
        now = time.monotonic()
        sep = b"\n\n" if self.format == "sse" else b"\n"
        while sep in self.text:
            rec, _, self.text = self.text.partition(sep)
            if self.format == "sse":
                if rec.startswith(b":"):
                    self.events.append((now, "keepalive", None, None))
                    continue
                f = {}
                for line in rec.decode().split("\n"):
                    k, _, v = line.partition(": ")
                    f[k] = v
                self.events.append((now, f.get("event"), int(f["id"]) if "id" in f else None,
                                    json.loads(f["data"])))
            else:
                o = json.loads(rec)
                self.events.append((now, o["event"], o.get("id"), o.get("data")))

    def read_until(self, name, timeout=30):
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            self._pump()
            self._parse()
            if any(e[1] == name for e in self.events) or self.eof:
                return True
            self.s.settimeout(max(0.01, deadline - time.monotonic()))
            try:
                self._fill()
            except socket.timeout:
                pass
        return False

    def read_to_end(self, timeout=30):
        deadline = time.monotonic() + timeout
        while not self.eof and time.monotonic() < deadline:
            self._pump()
            self._parse()
            if self.eof:
                break
            self.s.settimeout(max(0.01, deadline - time.monotonic()))
            try:
                self._fill()
            except socket.timeout:
                pass
        self._pump()
        self._parse()
        return self.eof

    def close(self):
        self.s.close()


def stable(events):
    """Events minus keepalives, with the figures that differ from run to run dropped."""
    out = []
    for _, name, eid, data in events:
        if name == "keepalive":
            continue
        if name == "exit":
            data = json.loads(json.dumps(data))
            for res in [data.get("result")] + [r.get("result") for r in data.get("results", [])]:
                for k in ("durationMs", "wallMs", "cpuMs", "peakMemoryBytes", "maxProcesses"):
                    (res or {}).pop(k, None)
        out.append((name, eid, data))
    return out


def fake_part(work):
    srv = Server(work, "fake", {"server": {"streamKeepaliveMs": KEEPALIVE_MS},
                                "sandbox": {"provider": {"type": "fake", "scope": "t0720"}}})
    try:
        srv.request("POST", "/threads", {"thread_id": "f1"})
        st, h, body = srv.request("POST", "/threads/f1/tools/runBash", {"command": "echo hi"})
        ok(st == 200 and h.get("content-type") == "application/json"
           and json.loads(body)["result"]["stdout"] == "hi\n", "fake: no Accept: today's JSON")
        res = json.loads(body)["result"]
        ok(res["cpuMs"] is None and res["peakMemoryBytes"] is None and res["maxProcesses"] is None
           and res["oomKilled"] is None and isinstance(res["wallMs"], int),
           "fake: accounting is null, wallMs a number")
        r = Reader(srv, "/threads/f1/tools/runBash", {"command": "echo hi"}, "text/event-stream")
        r.read_to_end()
        ev = stable(r.events)
        ok(r.status == 200 and r.headers.get("content-type") == "text/event-stream",
           "fake: SSE is a 200 text/event-stream")
        ok(ev[0] == ("stdout", 0, {"offset": 0, "text": "hi\n"}), "fake: the stdout event")
        ok(ev[-1][0] == "exit" and ev[-1][2]["result"]["stdout"] == "hi\n"
           and r.eof, "fake: exit carries the result document, then the stream ends")
        r.close()
        r = Reader(srv, "/threads/f1/runs",
                   {"calls": [{"tool": "runBash", "args": {"command": "echo a"}},
                              {"tool": "runBash", "args": {"command": "printf b"}}]},
                   "application/x-ndjson")
        r.read_until("exit")
        ev = stable(r.events)
        ok([e[2].get("call") for e in ev[:2]] == [0, 1] and ev[1][2]["text"] == "b",
           "fake: a run's chunks name their call")
        ok(ev[-1][0] == "exit" and len(ev[-1][2]["results"]) == 2, "fake: a run's exit is {results}")
        r.close()
        st, h, body = srv.request("POST", "/threads/nope/tools/runBash", {"command": "true"},
                                  accept="text/event-stream")
        ok(st == 404 and h.get("content-type") == "application/json",
           "fake: an unknown thread is a 404 JSON refusal, not a stream")
        st, h, body = srv.request("POST", "/threads/f1/tools/runBash", None,
                                  accept="text/event-stream")
        st2, _, _ = srv.request("POST", "/threads/f1/runs", {"calls": []},
                                accept="application/x-ndjson")
        ok(st2 == 400, "fake: an invalid run is a 400 before any stream")
        options_part(srv, "fake")
    finally:
        srv.stop()


def options_part(srv, name):
    def call(args, accept=None):
        st, h, body = srv.request("POST", "/threads/f1/tools/runBash" if name == "fake"
                                  else "/threads/n1/tools/runBash", args, accept=accept)
        return st, json.loads(body) if body.strip().startswith(b"{") else body

    st, doc = call({"command": "echo $X", "env": {"X": "from-call"}} if name != "fake"
                   else {"command": "echo hi", "env": {"X": "1"}})
    ok(st == 200 and doc["ok"], "%s: env is a per-call option" % name)
    st, doc = call({"command": "true", "env": {"X": 1}})
    ok(st == 200 and not doc["ok"] and doc["error"]["code"] == "invalid_arguments",
       "%s: env values must be strings" % name)
    st, doc = call({"command": "true", "maxOutputBytes": 0})
    ok(st == 200 and not doc["ok"] and "maxOutputBytes" in doc["error"]["message"],
       "%s: maxOutputBytes 0 is refused" % name)
    st, doc = call({"command": "true", "maxOutputBytes": 1 << 40})
    ok(st == 200 and not doc["ok"] and "outputCapBytes" in doc["error"]["message"],
       "%s: maxOutputBytes over the policy's cap is refused naming the bound" % name)
    st, doc = call({"command": "true", "maxOutputBytes": 1 << 40}, accept="text/event-stream")
    ok(st == 400 and doc["error"]["details"]["code"] == "invalid_arguments"
       and "outputCapBytes" in doc["error"]["message"],
       "%s: a streamed call's argument refusal is a 400 before the 200" % name)
    st, doc = call({"command": "true", "cwd": "../etc"})
    ok(st == 200 and not doc["ok"], "%s: cwd outside the workspace is refused" % name)


def cgroup_of(pid):
    try:
        with open("/proc/%d/cgroup" % pid) as f:
            for line in f:
                if line.startswith("0::"):
                    return line[3:].strip()
    except OSError:
        return None
    return None


def pids_of(pattern):
    out = subprocess.run(["pgrep", "-f", pattern], capture_output=True, text=True).stdout
    return [int(p) for p in out.split()]


def timed_lines(argv):
    """Run @argv; each stdout line with the seconds since the start, and the exit code."""
    t0 = time.monotonic()
    p = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    lines = [(time.monotonic() - t0, line) for line in iter(p.stdout.readline, b"")]
    err = p.stderr.read()
    p.wait(60)
    return lines, time.monotonic() - t0, p.returncode, err


def cli_part(srv, work):
    cmd = "echo a; sleep 2; echo b; exit 3"
    for where, argv in (
            ("through --server", [B4BOX, "exec", "--server", "unix:" + srv.sock, "--thread", "n1",
                                  "--", cmd]),
            ("locally", [B4BOX, "-c", os.path.join(srv.dir, "b4box.json"), "--state",
                         os.path.join(work, "cli-state"), "exec", "--thread", "c1", "--", cmd])):
        lines, total, rc, err = timed_lines(argv)
        ok([l for _, l in lines] == [b"a\n", b"b\n"] and rc == 3,
           "native CLI %s: output and exit code (%s, rc %s, %s)" % (where, lines, rc, err))
        ok(len(lines) == 2 and total - lines[0][0] >= 1.5,
           "native CLI %s: 'a' is printed >= 1.5 s before the end" % where)
    srv.request("POST", "/threads/n1/tools/runBash", {"command": "mkdir -p cdir"})
    for where, pre in (("through --server", ["exec", "--server", "unix:" + srv.sock,
                                             "--thread", "n1"]),
                       ("locally", ["-c", os.path.join(srv.dir, "b4box.json"), "--state",
                                    os.path.join(work, "cli-state"), "exec", "--thread", "c1"])):
        if where == "locally":
            subprocess.run([B4BOX] + pre + ["--", "mkdir -p cdir"], capture_output=True)
        lines, total, rc, err = timed_lines(
            [B4BOX] + pre + ["--cwd", "cdir", "--env", "X=y=z", "--max-output", "100", "--",
                             "pwd; echo $X; head -c 1000 /dev/zero | tr '\\0' q"])
        out = b"".join(l for _, l in lines)
        ok(out.startswith(b"/workspace/cdir\ny=z\n") and rc == 0,
           "native CLI %s: --cwd and --env (%r, rc %s, %s)" % (where, out[:60], rc, err))
        if where == "through --server":  # the result is capped; the live stream is not
            ok(out.count(b"q") == 1000, "native CLI %s: the stream carries all the output"
               % where)
    subprocess.run([B4BOX, "-c", os.path.join(srv.dir, "b4box.json"), "--state",
                    os.path.join(work, "cli-state"), "destroy", "c1"], capture_output=True)
    lines, total, rc, err = timed_lines([B4BOX, "exec", "--server", "unix:" + srv.sock,
                                         "--thread", "n1", "--timeout", "300", "--", "sleep 5"])
    ok(rc == 124 and b"timeoutMs: 300ms" in err,
       "native CLI through --server: --timeout is the call's timeoutMs (rc %s)" % rc)


def rss_kib(pid):
    with open("/proc/%d/status" % pid) as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    return 0


def backpressure_part(srv):
    """A client that does not read: the command waits, the server's memory does not grow."""
    before = rss_kib(srv.proc.pid)
    r = Reader(srv, "/threads/n1/tools/runBash",
               {"command": "yes 0123456789abcdef | head -c 64000000; echo; echo done >&2",
                "maxOutputBytes": 4096}, "application/x-ndjson")
    time.sleep(2)  # not reading: the kernel buffers fill, then the 1 MiB queue, then the pipe
    during = rss_kib(srv.proc.pid)
    ok(during - before < 32 * 1024,
       "native: a client that does not read holds the server at +%d KiB (bounded)"
       % (during - before))
    got = 0
    r.read_until("exit", timeout=120)
    for _, name, _, data in r.events:
        if name == "stdout":
            got += len(data["text"])
    ok(got == 64000001, "native: and it gets every byte once it reads (%d)" % got)
    ex = [e for e in r.events if e[1] == "exit"]
    ok(ex and ex[0][3]["result"]["truncated"] and len(ex[0][3]["result"]["stdout"]) < 8192,
       "native: while the result stays capped by maxOutputBytes")
    r.close()


def bigfile_part(srv):
    """readFile's line range on a file over the whole-file cap (256 KiB): 100,000 lines."""
    st, h, body = srv.request("POST", "/threads/n1/tools/runBash",
                              {"command": "seq -f 'line %g' 100000 > big.log; wc -c < big.log"})
    size = int(json.loads(body)["result"]["stdout"])
    st, h, body = srv.request("POST", "/threads/n1/tools/readFile", {"path": "big.log"})
    doc = json.loads(body)
    ok(size > 256 * 1024 and not doc["ok"] and "File too large" in doc["error"]["message"],
       "native: a %d-byte file is over the whole-file cap" % size)
    st, h, body = srv.request("POST", "/threads/n1/tools/readFile",
                              {"path": "big.log", "startLine": 90000, "endLine": 90002})
    doc = json.loads(body)
    ok(doc["ok"] and doc["result"] == "[big.log lines 90000-90002 of 100000]\n"
       "line 90000\nline 90001\nline 90002", "native: readFile lines 90000-90002 of it (%s)"
       % str(doc)[:200])
    st, h, body = srv.request("POST", "/threads/n1/tools/readFile",
                              {"path": "big.log", "startLine": 99999})
    doc = json.loads(body)
    ok(doc["ok"] and doc["result"] == "[big.log lines 99999-100000 of 100000]\n"
       "line 99999\nline 100000", "native: readFile from line 99999 to the end")
    st, h, body = srv.request("POST", "/threads/n1/tools/readFile",
                              {"path": "big.log", "startLine": 100001})
    doc = json.loads(body)
    ok(not doc["ok"] and doc["error"]["message"] ==
       "readFile: startLine 100001 is past the end of big.log (100000 lines)",
       "native: a start past the end is refused with the usual text")
    st, h, body = srv.request("POST", "/threads/n1/tools/readFile",
                              {"path": "big.log", "startLine": 1, "endLine": 60000})
    doc = json.loads(body)
    ok(not doc["ok"] and "are more than 262144 bytes (the size cap)" in doc["error"]["message"],
       "native: a range over the cap is refused naming it (%s)" % doc["error"]["message"])


def native_part(work):
    srv = Server(work, "native", {"server": {"streamKeepaliveMs": KEEPALIVE_MS},
                                  "sandbox": {"provider": {"type": "native", "scope": "t0720"},
                                              "network": {"mode": "deny"},
                                              "resources": {"memoryMb": 128,
                                                            "timeoutMs": 60000}}})
    try:
        srv.request("POST", "/threads", {"thread_id": "n1"})
        runs = {}
        for accept in ("text/event-stream", "application/x-ndjson"):
            r = Reader(srv, "/threads/n1/tools/runBash", {"command": "echo a; sleep 2; echo b"},
                       accept)
            r.read_until("exit")
            r.close()
            ev = [e for e in r.events if e[1] != "keepalive"]
            t_a = next((e[0] for e in ev if e[1] == "stdout" and e[3]["text"] == "a\n"), None)
            t_exit = next((e[0] for e in ev if e[1] == "exit"), None)
            ok(t_a is not None and t_exit is not None and t_exit - t_a >= 1.5,
               "native %s: 'a' arrives >= 1.5 s before exit (%.2f s)"
               % (accept, (t_exit - t_a) if t_a and t_exit else -1))
            ok(sum(1 for e in r.events if e[1] == "keepalive") >= 3,
               "native %s: keepalives arrive every %d ms" % (accept, KEEPALIVE_MS))
            ok([e[2] for e in ev if e[1] == "stdout"] == [0, 2],
               "native %s: ids are byte offsets" % accept)
            runs[accept] = stable(r.events)
        ok(runs["text/event-stream"] == runs["application/x-ndjson"],
           "native: NDJSON events equal SSE events")
        if not ok(runs["text/event-stream"][-1][0] == "exit", "native: the exit event"):
            diag(runs)

        # the run slot: a second streamed call while one is in flight is a 409, not a 200
        r = Reader(srv, "/threads/n1/tools/runBash", {"command": "echo go; exec sleep 4711"},
                   "text/event-stream")
        r.read_until("stdout")
        st, h, body = srv.request("POST", "/threads/n1/tools/runBash", {"command": "true"},
                                  accept="text/event-stream")
        ok(st == 409 and json.loads(body)["error"]["details"]["code"] == "run_in_flight",
           "native: a streamed call while a run is in flight is 409 run_in_flight")
        st, h, body = srv.request("GET", "/metrics")
        ok(st == 200 and b"\nb4box_stream_clients 1\n" in body,
           "native: the open stream counts in b4box_stream_clients")
        for _ in range(100):  # `exec sleep` follows the echo: a moment on a loaded host
            pids = pids_of("sleep 4711")
            cg = cgroup_of(pids[0]) if pids else None
            if cg:
                break
            time.sleep(0.05)
        ok(bool(pids) and cg is not None, "native: the streamed command runs (pid %s, cgroup %s)"
           % (pids, cg))
        r.close()  # the client goes away
        t0 = time.monotonic()
        while pids_of("sleep 4711") and time.monotonic() - t0 < 10:
            time.sleep(0.05)
        for _ in range(100):  # the response is dropped once the server sees the close
            st, h, body = srv.request("GET", "/metrics")
            if b"\nb4box_stream_clients 0\n" in body:
                break
            time.sleep(0.05)
        ok(b"\nb4box_stream_clients 0\n" in body, "native: ... and leaves it when the client goes")
        gone = time.monotonic() - t0
        ok(not pids_of("sleep 4711") and gone < KEEPALIVE_MS / 1000 + 2,
           "native: a dropped connection kills the command (%.2f s)" % gone)
        cgdir = "/sys/fs/cgroup/unified" + cg if cg and os.path.isdir("/sys/fs/cgroup/unified") \
            else "/sys/fs/cgroup" + (cg or "/none")
        for _ in range(100):
            if not os.path.exists(cgdir):
                break
            time.sleep(0.05)
        ok(not os.path.exists(cgdir), "native: and its cgroup is gone (%s)" % cgdir)
        st, h, body = srv.request("POST", "/threads/n1/tools/runBash", {"command": "echo free"})
        ok(st == 200 and json.loads(body)["result"]["stdout"] == "free\n",
           "native: the slot is free again")

        # accounting
        st, h, body = srv.request("POST", "/threads/n1/tools/runBash",
                                  {"command": "dd if=/dev/zero of=/dev/null bs=300M count=1"})
        res = json.loads(body)["result"]
        ok(res["oomKilled"] is True, "native: 300 MB under a 128 MiB limit: oomKilled true")
        ok(isinstance(res["peakMemoryBytes"], int) and res["peakMemoryBytes"] >= 64 << 20,
           "native: and peakMemoryBytes near the limit (%s)" % res["peakMemoryBytes"])
        st, h, body = srv.request("POST", "/threads/n1/tools/runBash", {"command": "echo x"})
        ok(json.loads(body)["result"]["oomKilled"] is False, "native: the next command: false")
        st, h, body = srv.request("POST", "/threads/n1/tools/runBash", {
            "command": "timeout 2 sh -c 'while :; do :; done'; times"})
        res = json.loads(body)["result"]
        secs = [int(m) * 60 + float(s) for m, s in re.findall(r"(\d+)m([\d.]+)s", res["stdout"])]
        truth = sum(secs) * 1000
        ok(isinstance(res["cpuMs"], int) and truth > 0 and abs(res["cpuMs"] - truth) <= 0.2 * truth,
           "native: a CPU loop's cpuMs (%s) is within 20%% of what the shell's times says "
           "(%.0f ms of %s ms wall)" % (res["cpuMs"], truth, res["wallMs"]))
        ok(res["wallMs"] >= 1900, "native: wallMs covers the loop (%s)" % res["wallMs"])
        backpressure_part(srv)
        cli_part(srv, work)
        options_part(srv, "native")
        bigfile_part(srv)
        srv.request("POST", "/threads/n1/tools/runBash", {"command": "mkdir -p sub"})
        st, h, body = srv.request("POST", "/threads/n1/tools/runBash",
                                  {"command": "pwd; echo $X", "cwd": "sub", "env": {"X": "y"}})
        doc = json.loads(body)
        ok(doc["ok"] and doc["result"]["stdout"] == "/workspace/sub\ny\n",
           "native: cwd and env apply (%s)" % doc)
        st, h, body = srv.request("POST", "/threads/n1/tools/runBash",
                                  {"command": "true", "cwd": "missing"})
        doc = json.loads(body)
        ok(not doc["ok"] and "cwd /workspace/missing" in doc["error"]["message"],
           "native: a missing cwd is refused (%s)" % doc["error"]["message"])
        st, h, body = srv.request("POST", "/threads/n1/tools/runBash",
                                  {"command": "sleep 5", "timeoutMs": 300})
        res = json.loads(body)["result"]
        ok(res["timedOut"] and res["exitCode"] == 124 and "timeoutMs: 300ms" in res["stderr"],
           "native: a per-call timeoutMs applies and is named (%s)" % res["stderr"].strip())
        st, h, body = srv.request("POST", "/threads/n1/tools/runBash",
                                  {"command": "true", "timeoutMs": 60001})
        doc = json.loads(body)
        ok(not doc["ok"] and "resources.timeoutMs (60000)" in doc["error"]["message"],
           "native: timeoutMs over the policy's is refused naming the bound")
        st, h, body = srv.request("POST", "/threads/n1/tools/runBash",
                                  {"command": "head -c 5000 /dev/zero | tr '\\0' x",
                                   "maxOutputBytes": 1000})
        res = json.loads(body)["result"]
        ok(res["truncated"] and len(res["stdout"]) < 1200, "native: maxOutputBytes caps the output")
    finally:
        srv.stop()


def main():
    work = tempfile.mkdtemp(prefix="b4t0720.")
    try:
        fake_part(work)
        if os.getuid() == 0:
            native_part(work)
        else:
            print("# native part skipped: not root")
    except Exception as e:  # a crash of the driver is a failure, with its story
        ok(False, "driver: %r" % e)
        for name in ("fake", "native"):
            p = os.path.join(work, name, "server.log")
            if os.path.exists(p):
                diag(open(p).read()[-3000:])
    finally:
        shutil.rmtree(work, ignore_errors=True)
    print("1..%d" % TAP["n"])
    sys.exit(1 if TAP["failed"] else 0)


main()
