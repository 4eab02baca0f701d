#!/usr/bin/python3
# Crash consistency (security issue 14): 1,000 mixed operations against `b4box serve` on the
# native provider, the server SIGKILLed at random points (mid-request) about ten times and
# restarted on the same state dir. After every restart: no acknowledged write lost, thread
# rows <=> workspaces, no keeper / cgroup / veth / rule / record / id claim of a thread that
# is gone. Ends by planting orphans (a real keeper whose row is deleted behind the server's
# back, a fake workspace + intent record + cgroup) to prove the checker sees them and the
# restart's sweep removes them. TAP on stdout; B4CRASH_SEED reproduces a run.
import hashlib
import http.client
import json
import os
import random
import shutil
import signal
import socket
import sqlite3
import subprocess
import sys
import tempfile
import threading
import time

B4BOX = os.environ["B4BOX"]
SEED = int(os.environ.get("B4CRASH_SEED", str(random.SystemRandom().randrange(1 << 30))))
N_OPS = int(os.environ.get("B4CRASH_OPS", "1000"))
rng = random.Random(SEED)
TAP = {"n": 0, "failed": 0}


def ok(cond, name):
    TAP["n"] += 1
    if not cond:
        TAP["failed"] += 1
    print(("ok %d - %s" if cond else "not ok %d - %s") % (TAP["n"], name), flush=True)
    return cond


def diag(msg):
    for line in str(msg).splitlines():
        print("# " + line, flush=True)


WORK = tempfile.mkdtemp(prefix="b4crash.")
STATE = os.path.join(WORK, "state")
SCOPE = "crash-%d" % SEED
NATIVE = os.path.join(STATE, "native")
CFG = os.path.join(WORK, "b4box.json")
TOKEN = "crash-token-%016x" % SEED


def resource_id(thread_id):
    j = json.dumps(["b4-sandbox-scope-v1", SCOPE, thread_id], separators=(",", ":"),
                   ensure_ascii=False)
    return hashlib.sha256(j.encode()).hexdigest()[:40]


def host_id(rid):
    real = os.path.realpath(NATIVE)
    return hashlib.sha256((real + "/" + rid).encode()).hexdigest()[:40]


# ---- the server ---------------------------------------------------------------------------

class Server:
    def __init__(self):
        self.proc = None
        self.port = None
        self.log = open(os.path.join(WORK, "server.log"), "ab")

    def start(self):
        s = socket.socket()
        s.bind(("127.0.0.1", 0))
        self.port = s.getsockname()[1]
        s.close()
        self.proc = subprocess.Popen([B4BOX, "-c", CFG, "--state", STATE, "serve", "--listen",
                                      "127.0.0.1:%d" % self.port],
                                     stdin=subprocess.DEVNULL, stdout=self.log, stderr=self.log)
        for _ in range(200):
            try:
                if self.request("GET", "/healthz", timeout=1)[0] == 200:
                    return True
            except OSError:
                pass
            if self.proc.poll() is not None:
                break
            time.sleep(0.05)
        return False

    def kill(self):
        if self.proc:
            os.kill(self.proc.pid, signal.SIGKILL)
            self.proc.wait()
            self.proc = None

    def stop(self):
        """SIGTERM; the exit status (a sanitizer report makes it non-zero)."""
        if not self.proc:
            return None
        os.kill(self.proc.pid, signal.SIGTERM)
        rc = self.proc.wait()
        self.proc = None
        return rc

    def request(self, method, path, body=None, timeout=60):
        c = http.client.HTTPConnection("127.0.0.1", self.port, timeout=timeout)
        try:
            data = None if body is None else (body if isinstance(body, bytes)
                                              else json.dumps(body).encode())
            headers = {"Authorization": "Bearer " + TOKEN}
            if data is not None:
                headers["Content-Type"] = "application/json"
            c.request(method, path, body=data, headers=headers)
            r = c.getresponse()
            raw = r.read()
            try:
                return r.status, json.loads(raw) if raw else None
            except ValueError:
                return r.status, raw
        finally:
            c.close()


# ---- the model of what was acknowledged ---------------------------------------------------

class Model:
    """threads: id -> {"parent", "root", "maybe"}; files: (root, path) -> set of contents
    (None = absent) any of which is acceptable; a single element once acknowledged."""

    def __init__(self):
        self.threads = {}
        self.files = {}
        self.ever = set()  # every thread id ever tried (for attributing host objects)
        self.pending_delete = None
        self.acked_writes = 0
        self.acked_uploads = set()

    def roots(self):
        return [t for t, v in self.threads.items() if v["parent"] is None]

    def root_of(self, tid):
        return self.threads[tid]["root"]

    def family(self, tid):
        fam, grow = {tid}, True
        while grow:
            grow = False
            for t, v in self.threads.items():
                if v["parent"] in fam and t not in fam:
                    fam.add(t)
                    grow = True
        return fam

    def drop(self, tid):
        root = self.threads[tid]["parent"] is None
        for t in self.family(tid):
            del self.threads[t]
        if root:
            for k in [k for k in self.files if k[0] == tid]:
                del self.files[k]

    def write(self, tid, path, content, acked):
        key = (self.root_of(tid), path)
        if acked:
            self.files[key] = {content}
            self.acked_writes += 1
        else:
            self.files[key] = self.files.get(key, {None}) | {content}


M = Model()
SRV = Server()
STATS = {"ops": 0, "acked": 0, "unacked": 0, "kills": 0, "restarts": 0, "checks": 0}


def call(method, path, body=None):
    """(acknowledged, status, json): acknowledged when a 2xx answer arrived."""
    try:
        st, js = SRV.request(method, path, body)
    except (OSError, http.client.HTTPException):
        return False, None, None
    return 200 <= st < 300, st, js


REFUSED = {}  # what was answered but not acknowledged: "<what> <status>" -> (count, sample)


def refused(what, st, js):
    if st is None:
        return
    key = "%s %s" % (what, st)
    n, sample = REFUSED.get(key, (0, js))
    REFUSED[key] = (n + 1, sample)


def tool(tid, name, args):
    ack, st, js = call("POST", "/threads/%s/tools/%s" % (tid, name), args)
    acked = ack and isinstance(js, dict) and js.get("ok") is True
    if not acked:
        refused(name, st, js)
    return acked, js


# ---- operations -------------------------------------------------------------------------

SEQ = {"t": 0, "f": 0}
BUNDLES = []  # (digest, path, {relpath: content})


def new_id(prefix):
    SEQ["t"] += 1
    tid = "%s%d" % (prefix, SEQ["t"])
    M.ever.add(tid)
    return tid


def pick_thread(roots_only=False):
    ids = [t for t, v in M.threads.items() if not v["maybe"]]
    if roots_only:
        ids = [t for t in ids if M.threads[t]["parent"] is None]
    return rng.choice(sorted(ids)) if ids else None


def op_create():
    tid = new_id("t")
    ack, st, js = call("POST", "/threads", {"thread_id": tid, "metadata": {"n": SEQ["t"]}})
    M.threads[tid] = {"parent": None, "root": tid, "maybe": not ack}
    return ack


def op_create_child():
    parent = pick_thread()
    if not parent:
        return op_create()
    tid = new_id("c")
    ack, st, js = call("POST", "/threads", {"thread_id": tid, "parent_thread_id": parent})
    M.threads[tid] = {"parent": parent, "root": M.root_of(parent), "maybe": not ack}
    return ack


def op_create_staged():
    if not M.acked_uploads:
        return op_upload()
    digest = rng.choice(sorted(M.acked_uploads))
    files = next(b[2] for b in BUNDLES if b[0] == digest)
    tid = new_id("s")
    ack, st, js = call("POST", "/threads", {"thread_id": tid,
                                            "workspace": {"sourceDigest": digest}})
    M.threads[tid] = {"parent": None, "root": tid, "maybe": not ack, "staged": files}
    return ack


def op_delete():
    tid = pick_thread()
    if not tid:
        return op_create()
    M.pending_delete = tid
    ack, st, js = call("DELETE", "/threads/%s" % tid)
    if ack:
        M.drop(tid)
    elif st is None:
        for t in M.family(tid):
            M.threads[t]["maybe"] = True
    M.pending_delete = None
    return ack


def content():
    return "v%d-%s\n" % (rng.randrange(1 << 30), "x" * rng.randrange(0, 200))


def op_write():
    tid = pick_thread()
    if not tid:
        return op_create()
    SEQ["f"] += 1
    path = "d%d/f%d.txt" % (rng.randrange(4), rng.randrange(60)) if rng.random() < 0.5 else \
        "f%d.txt" % SEQ["f"]
    data = content()
    ack, js = tool(tid, "writeFile", {"path": path, "content": data})
    M.write(tid, path, data, ack)
    return ack


def op_edit():
    tid = pick_thread()
    if not tid:
        return op_create()
    root = M.root_of(tid)
    known = sorted(k[1] for k, v in M.files.items()
                   if k[0] == root and len(v) == 1 and next(iter(v)) is not None)
    if not known:
        return op_write()
    path = rng.choice(known)
    old = next(iter(M.files[(root, path)]))
    new = "e%d-%s" % (rng.randrange(1 << 20), old)
    ack, js = tool(tid, "editFile", {"path": path, "oldText": old, "newText": new})
    M.write(tid, path, new, ack)
    return ack


def op_bash():
    tid = pick_thread()
    if not tid:
        return op_create()
    SEQ["f"] += 1
    path = "b%d.txt" % SEQ["f"]
    word = "w%d" % rng.randrange(1 << 30)
    ack, js = tool(tid, "runBash", {"command": "echo %s > %s && cat %s" % (word, path, path)})
    ack = ack and js["result"]["exitCode"] == 0 and js["result"]["stdout"] == word + "\n"
    M.write(tid, path, word + "\n", ack)
    return ack


def op_run():
    tid = pick_thread()
    if not tid:
        return op_create()
    calls, writes = [], []
    for _ in range(rng.randrange(2, 6)):
        SEQ["f"] += 1
        path, data = "r%d.txt" % SEQ["f"], content()
        calls.append({"tool": "writeFile", "args": {"path": path, "content": data}})
        writes.append((path, data))
    ack, st, js = call("POST", "/threads/%s/runs" % tid, {"calls": calls})
    results = js.get("results", []) if ack and isinstance(js, dict) else []
    for i, (path, data) in enumerate(writes):
        M.write(tid, path, data, i < len(results) and results[i].get("ok") is True)
    return ack


def op_read():
    tid = pick_thread()
    if not tid:
        return op_create()
    root = M.root_of(tid)
    known = sorted(k[1] for k, v in M.files.items() if k[0] == root and len(v) == 1)
    if not known:
        return op_write()
    path = rng.choice(known)
    want = next(iter(M.files[(root, path)]))
    ack, js = tool(tid, "readFile", {"path": path})
    if ack and want is not None and js.get("result") != want:
        ok(False, "readFile %s of %s answers the acknowledged content" % (path, tid))
    return ack


def op_release():
    tid = pick_thread(roots_only=True)
    if not tid:
        return op_create()
    ack, st, js = call("POST", "/threads/%s/release" % tid)
    return ack


def op_upload():
    digest, path, files = rng.choice(BUNDLES)
    with open(path, "rb") as f:
        ack, st, js = call("PUT", "/workspace/sources/%s" % digest, f.read())
    if ack:
        M.acked_uploads.add(digest)
    return ack


OPS = [(op_create, 10), (op_create_child, 3), (op_create_staged, 4), (op_delete, 7),
       (op_write, 28), (op_edit, 10), (op_bash, 12), (op_run, 6), (op_read, 10),
       (op_release, 3), (op_upload, 4)]


def pick_op():
    x = rng.randrange(sum(w for _, w in OPS))
    for fn, w in OPS:
        if x < w:
            return fn
        x -= w


def run_op_with_kill(fn, delay):
    """Run @fn while a timer SIGKILLs the server after @delay seconds (mid-request)."""
    pid = SRV.proc.pid
    t = threading.Timer(delay, lambda: os.kill(pid, signal.SIGKILL))
    t.start()
    acked = fn()
    t.join()
    SRV.proc.wait()
    SRV.proc = None
    return acked


# ---- checks -------------------------------------------------------------------------------

def listed_threads():
    st, js = SRV.request("GET", "/threads")
    return {t["thread_id"]: t for t in js["threads"]}


def resolve_maybes(listed):
    """After a restart: an unacknowledged create or delete either happened or did not."""
    for tid in sorted(M.threads):
        if tid in M.threads and M.threads[tid]["maybe"]:
            if tid in listed:
                M.threads[tid]["maybe"] = False
            else:
                M.drop(tid)


def read_disk(rid, path):
    try:
        with open(os.path.join(NATIVE, "workspaces", rid, path), encoding="utf-8") as f:
            return f.read()
    except FileNotFoundError:
        return None


def check_writes(problems):
    n = 0
    for (root, path), want in sorted(M.files.items()):
        got = read_disk(resource_id(root), path)
        if got not in want:
            problems.append("lost write: %s:%s has %r, acknowledged %r" %
                            (root, path, got, sorted(w for w in want if w)[:2]))
        else:
            M.files[(root, path)] = {got}
            n += 1
    return n


def check_rows(listed, problems):
    for tid in M.threads:
        if tid not in listed:
            problems.append("thread %s lost its row" % tid)
    for tid in listed:
        if tid not in M.threads and tid.startswith(("t", "c", "s")):
            problems.append("thread %s came back after an acknowledged delete" % tid)
    live_roots = {resource_id(t) for t in listed if listed[t]["parent_thread_id"] is None}
    ws = os.listdir(os.path.join(NATIVE, "workspaces"))
    for name in ws:
        if name not in live_roots:
            problems.append("workspace %s has no thread row" % name)
    for (root, path), want in M.files.items():
        if want != {None} and resource_id(root) not in ws:
            problems.append("thread %s has acknowledged files but no workspace" % root)
            break
    return live_roots


def keeper_pids():
    """Keepers tied to this state dir: b4box-keeper processes with our workspaces mounted."""
    mark = os.path.join(os.path.basename(WORK), "state", "native", "workspaces") + "/"
    found = {}
    for pid in os.listdir("/proc"):
        if not pid.isdigit():
            continue
        try:
            if os.path.basename(os.readlink("/proc/%s/exe" % pid)) != "b4box-keeper":
                continue
            with open("/proc/%s/mountinfo" % pid) as f:
                for line in f:
                    i = line.find(mark)
                    if i >= 0:
                        found[int(pid)] = line[i + len(mark):].split()[0].split("/")[0]
                        break
        except OSError:
            continue
    return found


def our_cgroups():
    """cgroup dirs under */b4box/ named by the host id of any thread id ever used here."""
    hids = {host_id(resource_id(t)): t for t in M.ever | PLANTED}
    found = []
    base = "/sys/fs/cgroup"
    for hier in [""] + sorted(os.listdir(base)):
        d = os.path.join(base, hier, "b4box")
        if os.path.isdir(d):
            found += [(hids[n], os.path.join(d, n)) for n in os.listdir(d) if n in hids]
    return found


def check_host(live_roots, problems):
    """Keepers, cgroups, veths, rules, records and id claims: only for live root threads."""
    live_hids = {host_id(r) for r in live_roots}
    keepers = keeper_pids()
    for pid, rid in keepers.items():
        if rid not in live_roots:
            problems.append("orphan keeper pid %d (workspace %s)" % (pid, rid))
    cgs = our_cgroups()
    for tid, path in cgs:
        if host_id(resource_id(tid)) not in live_hids:
            problems.append("orphan cgroup %s (thread %s)" % (path, tid))
    links = subprocess.run(["ip", "-o", "link"], capture_output=True, text=True).stdout
    rules = subprocess.run(["iptables-save"], capture_output=True, text=True).stdout
    for tid in M.ever | PLANTED:
        hid = host_id(resource_id(tid))
        if "b4h" + hid[:12] in links or "b4box:" + hid in rules:
            problems.append("veth or rule of thread %s left" % tid)
    for d in ("run", "ids"):
        for name in os.listdir(os.path.join(NATIVE, d)):
            rid = name.lstrip(".").split(".")[0]
            if len(rid) == 40 and rid not in live_roots:
                problems.append("stale %s/%s" % (d, name))
    claims = "/run/b4box/ids"
    real = os.path.realpath(NATIVE) + "/"
    for name in os.listdir(claims) if os.path.isdir(claims) else []:
        try:
            target = os.readlink(os.path.join(claims, name))
        except OSError:
            continue
        if target.startswith(real) and target[len(real):] not in live_roots:
            problems.append("stale id claim %s -> %s" % (name, target))
    return len(keepers), len(cgs)


def staged_first_files(listed, problems):
    """A staged thread's first run sees its bundle (the upload survived with it)."""
    n = 0
    for tid, v in sorted(M.threads.items()):
        if "staged" not in v or v.get("staged_seen") or tid not in listed:
            continue
        path, want = sorted(v["staged"].items())[0]
        ack, js = tool(tid, "readFile", {"path": path})
        if not ack:
            continue  # a run may fail for its own reasons; the disk check covers the rest
        v["staged_seen"] = True
        n += 1
        if js.get("result") != want:
            problems.append("staged thread %s: %s is %r" % (tid, path, js.get("result")))
    return n


def check_uploads(problems):
    db = sqlite3.connect("file:%s?mode=ro" % os.path.join(STATE, "b4box.db"), uri=True)
    held = {r[0] for r in db.execute("SELECT digest FROM sources WHERE uploaded_ms > 0")}
    db.close()
    for d in M.acked_uploads - held:
        problems.append("acknowledged upload %s lost" % d)
    return len(M.acked_uploads)


def check_all(what):
    problems = []
    listed = listed_threads()
    resolve_maybes(listed)
    writes = check_writes(problems)
    live_roots = check_rows(listed, problems)
    keepers, cgs = check_host(live_roots, problems)
    uploads = check_uploads(problems)
    staged = staged_first_files(listed, problems)
    STATS["checks"] += 1
    diag("%s: checked %d acknowledged writes, %d uploads, %d threads (%d roots), %d keepers, "
         "%d cgroups, %d staged first reads, %d orphans" %
         (what, writes, uploads, len(listed), len(live_roots), keepers, cgs, staged,
          len(problems)))
    for p in problems[:20]:
        diag("  " + p)
    return problems, {"writes": writes, "threads": len(listed), "uploads": uploads}


# ---- setup --------------------------------------------------------------------------------

PLANTED = set()


def setup():
    resolver = os.path.join(WORK, "resolve.py")
    with open(resolver, "w") as f:
        f.write("#!/usr/bin/python3\nimport json, sys\nd = json.load(sys.stdin)\n"
                "print(json.dumps(d['staged'] or {'source': {'directory': 'empty', "
                "'include': []}}))\n")
    os.chmod(resolver, 0o755)
    os.mkdir(os.path.join(WORK, "empty"))
    for b in range(3):
        src = os.path.join(WORK, "src%d" % b)
        os.makedirs(os.path.join(src, "sub"))
        files = {"main.txt": "bundle %d %d\n" % (b, SEED), "sub/more.txt": "more %d\n" % b}
        for rel, data in files.items():
            with open(os.path.join(src, rel), "w") as f:
                f.write(data)
        out = os.path.join(WORK, "b%d.json" % b)
        digest = subprocess.run([B4BOX, "bundle", "create", src, "-o", out], check=True,
                                capture_output=True, text=True).stdout.strip()
        BUNDLES.append((digest, out, files))
    token = os.path.join(WORK, "token")
    with open(token, "w") as f:
        f.write(TOKEN + "\n")
    os.chmod(token, 0o600)
    with open(CFG, "w") as f:
        json.dump({"sandbox": {"provider": {"type": "native", "scope": SCOPE},
                               "network": {"mode": "deny"},
                               "resources": {"timeoutMs": 20000},
                               "workspace": {"command": [resolver]},
                               "stagedWorkspaces": True},
                   "threadAccess": {"principals": [{
                       "name": "crash", "tokenFile": token, "threads": "all",
                       "operations": ["thread.create", "thread.read", "thread.update",
                                      "thread.delete", "thread.run", "thread.workspace",
                                      "workspace.source.put"]}]}}, f)


def plant_orphans():
    """A real keeper whose row vanished (as if a crash hit between row and sandbox) and a
    fake workspace + intent record + cgroup of a thread that never had a row."""
    PLANTED.update({"ghost", "ghost2"})
    r = subprocess.run([B4BOX, "-c", CFG, "--state", STATE, "exec", "--thread", "ghost", "--",
                        "echo boo > g.txt"], capture_output=True, text=True)
    ok(r.returncode == 0, "a local exec starts a keeper for thread ghost")
    db = sqlite3.connect(os.path.join(STATE, "b4box.db"))
    db.execute("DELETE FROM threads WHERE id = 'ghost'")
    db.commit()
    db.close()
    rid2 = resource_id("ghost2")
    os.mkdir(os.path.join(NATIVE, "workspaces", rid2))
    with open(os.path.join(NATIVE, "workspaces", rid2, "x"), "w") as f:
        f.write("x")
    with open(os.path.join(NATIVE, "run", rid2 + ".host"), "w") as f:
        f.write(host_id(rid2) + "\n")
    made = 0
    for hier in ["pids", "memory", ""]:
        d = os.path.join("/sys/fs/cgroup", hier, "b4box")
        if os.path.isdir(d):
            try:
                os.mkdir(os.path.join(d, host_id(rid2)))
                made += 1
            except OSError:
                pass
    return made


def main():
    if os.geteuid() != 0:
        print("1..0 # SKIP native sandboxes need root here")
        return 0
    diag("seed %d (B4CRASH_SEED=%d reproduces), %d operations" % (SEED, SEED, N_OPS))
    setup()
    if not ok(SRV.start(), "server starts"):
        return 1
    kill_at = set()
    i = rng.randrange(50, 150)
    while i < N_OPS:
        kill_at.add(i)
        i += rng.randrange(50, 150)
    all_problems = []
    t0 = time.time()
    for n in range(N_OPS):
        fn = pick_op()
        if n in kill_at:
            acked = run_op_with_kill(fn, rng.uniform(0, 0.006))
            STATS["kills"] += 1
            STATS["mid"] = STATS.get("mid", 0) + (not acked)
            if not SRV.start():
                ok(False, "server restarts after SIGKILL %d" % STATS["kills"])
                return 1
            STATS["restarts"] += 1
            problems, _ = check_all("after kill %d at op %d (%s, %s)" %
                                    (STATS["kills"], n, fn.__name__,
                                     "acknowledged" if acked else "not acknowledged"))
            all_problems += problems
        else:
            acked = fn()
        STATS["ops"] += 1
        STATS["acked" if acked else "unacked"] += 1
    diag("%d ops in %.1fs: %d acknowledged, %d not (in flight at a kill, or refused), "
         "%d kills" % (STATS["ops"], time.time() - t0, STATS["acked"], STATS["unacked"],
                       STATS["kills"]))
    for key, (n, sample) in sorted(REFUSED.items()):
        diag("answered without acknowledging: %s x%d, e.g. %s" % (key, n, str(sample)[:300]))
    ok(STATS["kills"] >= N_OPS // 200, "the server was SIGKILLed %d times (%d mid-request)" %
       (STATS["kills"], STATS.get("mid", 0)))
    ok(not all_problems, "after every restart: no lost write, rows <=> workspaces, no orphan")

    SRV.kill()
    SRV.start()
    problems, counts = check_all("final restart")
    ok(not problems, "final: %d acknowledged writes, %d uploads, %d threads, 0 orphans" %
       (counts["writes"], counts["uploads"], counts["threads"]))
    ok(M.acked_writes >= N_OPS // 4, "%d writes were acknowledged in all" % M.acked_writes)

    # the checker is not blind: planted orphans are seen, and a restart sweeps them
    SRV.kill()
    cg_planted = plant_orphans()
    problems, _ = check_all_offline("planted")
    ok(any("orphan keeper" in p for p in problems), "the checker sees a planted orphan keeper")
    ok(any("has no thread row" in p for p in problems),
       "the checker sees a planted orphan workspace")
    ok(cg_planted == 0 or sum("orphan cgroup" in p for p in problems) >= cg_planted,
       "the checker sees %d planted cgroup dirs" % cg_planted)
    ok(any("stale run/" in p for p in problems), "the checker sees a planted intent record")
    SRV.start()
    problems, counts = check_all("after the sweep")
    ok(not problems, "the restart's sweep removed every planted orphan")

    # clean up: delete every thread, stop, nothing of ours left
    for tid in sorted(listed_threads()):
        call("DELETE", "/threads/%s" % tid)
    M.threads.clear()
    M.files.clear()
    problems, _ = check_all("after deleting everything")
    locks = [p for p in problems if p.endswith(".lock")]
    ok(len(locks) == len(problems) and not os.listdir(os.path.join(NATIVE, "workspaces")),
       "every thread deleted: nothing of ours left but %d lock files" % len(locks))
    SRV.kill()
    SRV.start()
    problems, _ = check_all("after deleting everything and a restart")
    ok(not problems, "the restart's sweep removed the lock files too")
    ok(SRV.stop() == 0, "the server stops cleanly on SIGTERM")
    print("1..%d" % TAP["n"])
    return 1 if TAP["failed"] else 0


def check_all_offline(what):
    """The host-side checks with the server down (so no restart sweeps first)."""
    problems = []
    db = sqlite3.connect("file:%s?mode=ro" % os.path.join(STATE, "b4box.db"), uri=True)
    rows = {r[0]: {"thread_id": r[0], "parent_thread_id": r[1]}
            for r in db.execute("SELECT id, parent_id FROM threads")}
    db.close()
    live_roots = check_rows(rows, problems)
    keepers, cgs = check_host(live_roots, problems)
    diag("%s: %d keepers, %d cgroups, %d orphans" % (what, keepers, cgs, len(problems)))
    for p in problems[:20]:
        diag("  " + p)
    return problems, None


if __name__ == "__main__":
    rc = 1
    try:
        rc = main()
    finally:
        try:
            SRV.kill()
        except Exception:
            pass
        if TAP["failed"] or rc:
            shutil.copy(os.path.join(WORK, "server.log"), "/tmp/b4crash-%d.log" % SEED) \
                if os.path.exists(os.path.join(WORK, "server.log")) else None
            diag("server log kept in /tmp/b4crash-%d.log" % SEED)
        for tid in sorted(M.ever | PLANTED):  # whatever a failure left behind
            subprocess.run([B4BOX, "-c", CFG, "--state", STATE, "destroy", tid],
                           capture_output=True)
        shutil.rmtree(WORK, ignore_errors=True)
    sys.exit(rc)
