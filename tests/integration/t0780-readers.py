#!/usr/bin/python3
# Workspace readers over HTTP (issue 17 item 1, issue 16 item 6): open, every read op agrees
# with the fs routes' answer, no write op, another thread's reader id, the bounds, idle
# expiry, delete, thread deletion, release (native: no keeper needed), a run in flight, the
# switch and the access policy (another principal's reader is 404). TAP on stdout.
import json
import os
import re
import shutil
import sys
import threading
import time

from b4http import SERVERS, TAP, WORK, Server, code, diag, ok


RESOLVER = os.path.join(WORK, "resolve.sh")


TOKENS = {n: "%s-token-0123456789" % n for n in ("alice", "bob", "carol")}
ALL_OPS = ["thread.create", "thread.read", "thread.run", "thread.delete", "thread.update",
           "thread.workspace"]


def principal(name, ops):
    path = os.path.join(WORK, name + ".token")
    with open(path, "w") as f:
        f.write(TOKENS[name])
    return {"name": name, "tokenFile": path, "operations": ops, "threads": "all"}


def config(provider, scope, extra=None, policy=None):
    """workspaceRead needs managed workspaces (a thread resolver giving every thread an empty
    one) and a thread-access policy (alice may do everything unless @policy says more)."""
    sandbox = {"provider": {"type": provider, "scope": scope},
               "thread": {"command": [RESOLVER]}, "workspaceRead": "http"}
    if provider == "native":
        sandbox["network"] = {"mode": "deny"}
    sandbox.update(extra or {})
    c = {"sandbox": sandbox, "permissions": {"mode": "non-interactive",
                                             "allow": {"bash": ["sleep ", "ln -s ", "chmod ",
                                                                "mkdir "]}}}
    c["threadAccess"] = policy or {"principals": [principal("alice", ALL_OPS)]}
    return c


def serve(name, cfg):
    """A server whose resolver's "empty" source directory sits next to its config."""
    s = Server(name, cfg)
    os.makedirs(os.path.join(s.dir, "empty"), exist_ok=True)
    s.token = TOKENS["alice"]
    return s


def opened(s, t, body=None, token=None):
    return s.request("POST", "/threads/%s/readers" % t, body, token=token)


def rfs(s, t, rid, op, body, token=None):
    return s.request("POST", "/threads/%s/readers/%s/fs/%s" % (t, rid, op), body, token=token)


def close(s, t, rid, token=None):
    return s.request("DELETE", "/threads/%s/readers/%s" % (t, rid), token=token)


READS = [
    ("read", {"path": "a.txt"}), ("read", {"path": "a.txt", "offset": 1, "length": 3}),
    ("read", {"path": "bin", "encoding": "base64"}), ("read", {"path": "bin"}),
    ("read", {"path": "missing"}), ("read", {"path": "d"}),
    ("stat", {"path": "a.txt"}), ("stat", {"path": "d"}), ("lstat", {"path": "a.txt"}),
    ("realPath", {"path": "d/../a.txt"}),
    ("realPath", {"path": "no/such"}), ("list", {"path": "."}), ("list", {"path": "d"}),
    ("walk", {"path": "."}), ("walk", {"path": ".", "prune": ["d"]}),
    ("walk", {"path": ".", "maxEntries": 1}), ("walk", {"path": ".", "maxEntries": 10001}),
    ("read", {"path": ""}), ("stat", {"path": "a.txt", "extra": 1}),
]


def populate(s, t, native):
    for p, c in (("a.txt", "hello\n"), ("d/e/f.txt", "f"), ("bin", "\u00ff")):
        s.fs(t, "write", {"path": p, "content": c})
    s.request("POST", "/threads/%s/fs/write" % t,
              {"path": "bin", "content": "AP8BAg==", "encoding": "base64"})
    if native:
        a = s.request("POST", "/threads/%s/tools/runBash" % t,
                      {"command": "mkdir empty && ln -s a.txt link && chmod +x d/e/f.txt"})
        ok(a[0] == 200 and a[1]["result"]["exitCode"] == 0, "native: links, modes, empty dirs")
        READS.extend([("lstat", {"path": "link"}), ("stat", {"path": "link"}),
                      ("realPath", {"path": "link"}), ("stat", {"path": "d/e/f.txt"}),
                      ("list", {"path": "empty"})])


def agree(s, t, rid, label):
    diff = []
    for op, body in READS:
        want = s.fs(t, op, body)
        got = rfs(s, t, rid, op, body)
        if want != got:
            diff.append((op, body, want, got))
    for op, body, want, got in diff:
        diag("%s %s:\n  fs     %s\n  reader %s" % (op, json.dumps(body), want, got))
    ok(not diff, "%s: every read answers as the fs route does (%d cases)" % (label, len(READS)))
    # A reader sees the workspace only: outside it there is nothing to read or gate.
    a = rfs(s, t, rid, "read", {"path": "/etc/passwd"})
    ok(a[0] in (403, 404), "%s: a path outside the workspace is not read (%d)" % (label, a[0]))


def basics(s, label, native):
    s.request("POST", "/threads", {"thread_id": "t1"})
    s.request("POST", "/threads", {"thread_id": "t2"})
    a = opened(s, "t1")
    ok(code(a) == (404, "workspace_not_found"), "%s: a thread that never ran has no workspace "
       "(404 workspace_not_found)" % label)
    populate(s, "t1", native)
    s.fs("t2", "write", {"path": "other", "content": "2"})
    a = opened(s, "t1")
    good = a[0] == 201 and re.fullmatch(r"[0-9a-f]{32}", a[1].get("readerId", "")) is not None
    ok(good and a[1]["expiresMs"] > time.time() * 1000 and a[1]["idleTimeoutMs"] == 60000,
       "%s: open is 201 {readerId: 128-bit hex, expiresMs, idleTimeoutMs}" % label)
    if not good:
        diag(a)
        return
    rid = a[1]["readerId"]
    agree(s, "t1", rid, label)
    for op in ("write", "mkdir", "remove", "touch"):
        a = rfs(s, "t1", rid, op, {"path": "a.txt", "content": "x"})
        ok(code(a) == (404, "unknown_fs_op"), "%s: no %s op on a reader (404)" % (label, op))
    ok(s.fs("t1", "read", {"path": "a.txt"})[1]["content"] == "hello\n",
       "%s: and the file is unchanged" % label)
    a = rfs(s, "t2", rid, "stat", {"path": "."})
    ok(code(a) == (404, "reader_not_found"), "%s: the reader through another thread is 404" %
       label)
    a = rfs(s, "t1", "0" * 32, "stat", {"path": "."})
    ok(code(a) == (404, "reader_not_found"), "%s: an unknown reader id is 404" % label)
    if native:  # the fake runs no sleep: a run in flight is native's case
        run_in_flight(s, rid, label)
    a = s.request("POST", "/threads/t1/release")
    ok(a[0] == 200, "%s: release" % label)
    a = rfs(s, "t1", rid, "read", {"path": "a.txt"})
    ok(a[0] == 200 and a[1]["content"] == "hello\n",
       "%s: the reader keeps reading after a release" % label)
    a = close(s, "t1", rid)
    ok(a == (204, None), "%s: DELETE is 204 with no body" % label)
    ok(code(close(s, "t1", rid)) == (404, "reader_not_found"), "%s: a second DELETE is 404" % label)
    a = rfs(s, "t1", rid, "stat", {"path": "."})
    ok(code(a) == (404, "reader_not_found"), "%s: a closed reader is 404" % label)
    bounds(s, label)
    a = opened(s, "t1")
    rid = a[1]["readerId"]
    s.request("DELETE", "/threads/t1")
    s.request("POST", "/threads", {"thread_id": "t1"})
    a = rfs(s, "t1", rid, "stat", {"path": "."})
    ok(code(a) == (404, "reader_not_found"), "%s: deleting the thread closed its reader" % label)
    s.request("DELETE", "/threads/t1")
    s.request("DELETE", "/threads/t2")


def run_in_flight(s, rid, label):
    """A run in flight does not block a reader (the fs route answers 409 meanwhile)."""
    box = {}
    th = threading.Thread(target=lambda: box.update(r=s.request(
        "POST", "/threads/t1/tools/runBash", {"command": "sleep 2"})))
    th.start()
    time.sleep(0.7)
    busy = s.fs("t1", "stat", {"path": "a.txt"})
    a = rfs(s, "t1", rid, "read", {"path": "a.txt"})
    th.join()
    if not ok(code(busy) == (409, "run_in_flight") and a[0] == 200 and
              a[1]["content"] == "hello\n", "%s: a reader reads while a run is in flight" % label):
        diag("fs: %s\nreader: %s\nrun: %s" % (busy, a, box.get("r")))


def bounds(s, label):
    rids = []
    for _ in range(8):
        a = opened(s, "t1", {})
        if a[0] == 201:
            rids.append(a[1]["readerId"])
    a = opened(s, "t1")
    ok(len(rids) == 8 and code(a) == (429, "too_many_readers"),
       "%s: the 9th reader of a thread is 429 too_many_readers" % label)
    a = opened(s, "t2")
    ok(a[0] == 201, "%s: another thread still opens one" % label)
    if a[0] == 201:
        close(s, "t2", a[1]["readerId"])
    close(s, "t1", rids.pop())
    a = opened(s, "t1")
    ok(a[0] == 201, "%s: closing one makes room" % label)
    if a[0] == 201:
        rids.append(a[1]["readerId"])
    for r in rids:
        close(s, "t1", r)
    for body, what in (({"idleTimeoutMs": 999}, "under 1000"), ({"idleTimeoutMs": 600001},
                       "over 600000"), ({"x": 1}, "an unknown key")):
        ok(code(opened(s, "t1", body)) == (400, "invalid_request"),
           "%s: idleTimeoutMs %s is 400" % (label, what))
    a = opened(s, "t1", {"idleTimeoutMs": 1000})
    rid = a[1]["readerId"]
    time.sleep(0.5)
    a = rfs(s, "t1", rid, "stat", {"path": "."})
    ok(a[0] == 200, "%s: a call within the idle timeout works" % label)
    time.sleep(0.7)
    a = rfs(s, "t1", rid, "stat", {"path": "."})
    ok(a[0] == 200, "%s: ... and renewed it" % label)
    time.sleep(1.3)
    a = rfs(s, "t1", rid, "stat", {"path": "."})
    ok(code(a) == (404, "reader_not_found"), "%s: an idle reader expires (404)" % label)


def switch_off():
    c = config("fake", "it-rd-off")
    del c["sandbox"]["workspaceRead"]
    s = serve("off", c)
    if not ok(s.up(), "off: server starts"):
        return
    s.request("POST", "/threads", {"thread_id": "t"})
    s.fs("t", "write", {"path": "a", "content": "a"})
    a = opened(s, "t")
    ok(a == (404, {"error": {"message": "Not found"}}),
       "off: without workspaceRead the routes are the bare 404")
    s.stop()


def policy_cases():
    tok = TOKENS
    principals = [principal("alice", ALL_OPS), principal("bob", ALL_OPS),
                  principal("carol", ["thread.read", "thread.run"])]
    s = serve("policy", config("fake", "it-rd-policy", policy={"principals": principals}))
    s.token = None
    if not ok(s.up(), "policy: server starts"):
        return
    s.request("POST", "/threads", {"thread_id": "p"}, token=tok["alice"])
    s.request("POST", "/threads/p/fs/write", {"path": "f", "content": "x"}, token=tok["alice"])
    a = opened(s, "p", token=tok["alice"])
    rid = a[1]["readerId"] if a[0] == 201 else ""
    ok(a[0] == 201, "policy: alice opens a reader")
    a = rfs(s, "p", rid, "read", {"path": "f"}, token=tok["alice"])
    ok(a[0] == 200 and a[1]["content"] == "x", "policy: alice reads through it")
    a = rfs(s, "p", rid, "read", {"path": "f"}, token=tok["bob"])
    ok(code(a) == (404, "reader_not_found"), "policy: bob cannot use alice's reader (404)")
    ok(code(close(s, "p", rid, token=tok["bob"])) == (404, "reader_not_found"),
       "policy: nor close it (404)")
    a = opened(s, "p", token=tok["carol"])
    ok(code(a) == (404, "thread_not_found"),
       "policy: without thread.workspace opening is the missing thread's 404")
    a = rfs(s, "p", rid, "read", {"path": "f"}, token=tok["carol"])
    ok(code(a) == (404, "thread_not_found"), "policy: ... and so is reading")
    ok(s.request("POST", "/threads/p/readers")[0] == 401, "policy: no token is 401")
    ok(close(s, "p", rid, token=tok["alice"])[0] == 204, "policy: alice closes it")
    s.stop()


def main():
    with open(RESOLVER, "w") as f:
        f.write('#!/bin/sh\ncat >/dev/null\necho \'{"workspace": {"source": '
                '{"directory": "empty", "include": []}}}\'\n')
    os.chmod(RESOLVER, 0o755)
    fake = serve("fake", config("fake", "it-rd"))
    if ok(fake.up(), "fake: server starts"):
        basics(fake, "fake", False)
        fake.stop()
    if os.geteuid() == 0:
        native = serve("native", config("native", "it-rd-native"))
        if ok(native.up(), "native: server starts"):
            basics(native, "native", True)
            native.stop()
    else:
        print("ok %d - native # SKIP not root" % (TAP["n"] + 1))
        TAP["n"] += 1
    switch_off()
    policy_cases()


try:
    main()
finally:
    for srv in SERVERS:
        srv.stop()
    if os.environ.get("KEEP_WORK"):
        print("# kept " + WORK)
    else:
        shutil.rmtree(WORK, ignore_errors=True)
print("1..%d" % TAP["n"])
sys.exit(1 if TAP["failed"] else 0)
