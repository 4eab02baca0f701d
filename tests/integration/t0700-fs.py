#!/usr/bin/python3
# The handle's filesystem over HTTP (POST /threads/{id}/fs/{op}, issue 16 item 6): the tool
# suite's path cases through every route, binary round trips of every byte value, the
# bounds, the refusal codes and the access policy, on the fake provider and, as root, on the
# native one, whose answers must be identical (mtimes aside). TAP on stdout.
import base64
import json
import os
import shutil
import sys
import threading
import time

from b4http import MIB, SERVERS, TAP, WORK, Server, code, diag, ok


def strip_times(v):
    if isinstance(v, dict):
        return {k: strip_times(x) for k, x in v.items() if k != "mtimeMs"}
    if isinstance(v, list):
        return [strip_times(x) for x in v]
    return v


def answer_of(a):
    """What must be the same on every provider: the status, the code, the body sans mtimes."""
    status, body = a
    if isinstance(body, dict) and "error" in body:
        return status, code(a)[1], body["error"]["message"]
    return status, strip_times(body)


EVERY_BYTE = bytes(range(256)) * 4


def b64(b):
    return base64.b64encode(b).decode()


# ---- the cases every provider answers the same --------------------------------------------

def cases(s, t, label):
    """Run the shared cases on thread @t; return {case: answer} for the comparison."""
    got = {}

    def run(name, op, body, want_status, want_code=None, check=None):
        a = s.fs(t, op, body)
        got[name] = answer_of(a)
        good = a[0] == want_status and (want_code is None or code(a)[1] == want_code)
        if good and check:
            good = bool(check(a[1]))
        if not ok(good, "%s: %s" % (label, name)):
            diag(json.dumps(a[1])[:600] if not isinstance(a[1], bytes) else a[1][:300])
        return a[1]

    run("write text", "write", {"path": "a.txt", "content": "hello\n"}, 200,
        check=lambda b: b == {"path": "a.txt", "bytes": 6})
    run("read text", "read", {"path": "a.txt"}, 200,
        check=lambda b: b["content"] == "hello\n" and b["size"] == 6 and b["eof"] and
        b["length"] == 6 and b["encoding"] == "utf8" and b["offset"] == 0)
    run("read a range", "read", {"path": "/workspace/a.txt", "offset": 1, "length": 3}, 200,
        check=lambda b: b["content"] == "ell" and not b["eof"] and b["size"] == 6)
    run("read past the end", "read", {"path": "a.txt", "offset": 100}, 200,
        check=lambda b: b["content"] == "" and b["length"] == 0 and b["eof"])
    run("read length 0", "read", {"path": "a.txt", "length": 0}, 200,
        check=lambda b: b["content"] == "" and not b["eof"])
    run("stat a file", "stat", {"path": "a.txt"}, 200,
        check=lambda b: b["kind"] == "file" and b["size"] == 6 and b["executable"] is False and
        b["mtimeMs"] > 0)
    run("lstat a file", "lstat", {"path": "a.txt"}, 200, check=lambda b: b["kind"] == "file")
    run("realPath normalises", "realPath", {"path": "sub/../a.txt"}, 200,
        check=lambda b: b == {"path": "/workspace/a.txt"})
    run("realPath of a missing tail", "realPath", {"path": "no/such"}, 200,
        check=lambda b: b == {"path": "/workspace/no/such"})
    run("mkdir -p", "mkdir", {"path": "d/e/f"}, 200)
    run("mkdir again is success", "mkdir", {"path": "d/e/f"}, 200)
    run("stat a directory", "stat", {"path": "d/e"}, 200,
        check=lambda b: b["kind"] == "directory")
    run("write in a new directory", "write", {"path": "d/e/f/g.txt", "content": "g"}, 200)
    run("list names with types", "list", {"path": "."}, 200,
        check=lambda b: [(e["name"], e["kind"]) for e in b["entries"]] ==
        [("a.txt", "file"), ("d", "directory")])
    run("walk the tree", "walk", {"path": "."}, 200,
        check=lambda b: [e["path"] for e in b["entries"]] ==
        ["a.txt", "d", "d/e", "d/e/f", "d/e/f/g.txt"])
    run("walk with prune", "walk", {"path": ".", "prune": ["d"]}, 200,
        check=lambda b: [e["path"] for e in b["entries"]] == ["a.txt", "d"])
    run("walk over maxEntries is 413", "walk", {"path": ".", "maxEntries": 2}, 413, "too_large")
    run("walk maxEntries over the bound is 400", "walk", {"path": ".", "maxEntries": 10001}, 400,
        "invalid_request")
    run("walk prune with a slash is 400", "walk", {"path": ".", "prune": ["d/e"]}, 400,
        "invalid_request")
    run("touch creates", "touch", {"path": "t"}, 200)
    run("touched file is empty", "stat", {"path": "t"}, 200, check=lambda b: b["size"] == 0)
    run("touch keeps content", "touch", {"path": "a.txt"}, 200)
    run("touch kept the bytes", "read", {"path": "a.txt"}, 200,
        check=lambda b: b["content"] == "hello\n")
    run("remove a file", "remove", {"path": "t"}, 200)
    run("a removed file is 404", "stat", {"path": "t"}, 404, "not_found")
    run("remove a missing path is success", "remove", {"path": "t"}, 200)
    run("remove a non-empty directory is 409", "remove", {"path": "d/e"}, 409, "not_empty")
    run("remove the workspace root is 403", "remove", {"path": "."}, 403, "permission_denied")
    run("remove /workspace is 403", "remove", {"path": "/workspace/"}, 403, "permission_denied")
    run("remove an empty directory", "remove", {"path": "d/e/f/g.txt"}, 200)
    run("then its directory", "remove", {"path": "d/e/f"}, 200)
    # binary round trips
    run("write every byte value", "write",
        {"path": "bin/all", "content": b64(EVERY_BYTE), "encoding": "base64"}, 200,
        check=lambda b: b["bytes"] == 1024)
    run("read every byte value back", "read", {"path": "bin/all", "encoding": "base64"}, 200,
        check=lambda b: base64.b64decode(b["content"]) == EVERY_BYTE and b["size"] == 1024)
    run("a base64 range", "read",
        {"path": "bin/all", "encoding": "base64", "offset": 250, "length": 10}, 200,
        check=lambda b: base64.b64decode(b["content"]) == EVERY_BYTE[250:260])
    run("binary as utf8 is 422", "read", {"path": "bin/all"}, 422, "not_utf8")
    run("a NUL in text survives", "write", {"path": "nul.txt", "content": "a\u0000b"}, 200,
        check=lambda b: b["bytes"] == 3)
    run("and reads back", "read", {"path": "nul.txt", "encoding": "base64"}, 200,
        check=lambda b: base64.b64decode(b["content"]) == b"a\x00b")
    run("UTF-8 text round trip", "write", {"path": "u.txt", "content": "h\u00e9\u20ac\U0001F600"},
        200, check=lambda b: b["bytes"] == 10)
    run("UTF-8 text reads back", "read", {"path": "u.txt"}, 200,
        check=lambda b: b["content"] == "h\u00e9\u20ac\U0001F600")
    run("a range cutting a character is 422", "read", {"path": "u.txt", "offset": 2}, 422,
        "not_utf8")
    run("base64 not canonical is 400", "write",
        {"path": "x", "content": "abc", "encoding": "base64"}, 400, "invalid_request")
    run("base64 with whitespace is 400", "write",
        {"path": "x", "content": "YW Jj", "encoding": "base64"}, 400, "invalid_request")
    run("an empty file", "write", {"path": "empty", "content": ""}, 200)
    run("reads as empty", "read", {"path": "empty", "encoding": "base64"}, 200,
        check=lambda b: b["content"] == "" and b["eof"] and b["size"] == 0)
    # the refusals
    run("read a directory is 409", "read", {"path": "d"}, 409, "is_directory")
    run("read a missing file is 404", "read", {"path": "missing"}, 404, "not_found")
    run("list a missing directory is 404", "list", {"path": "missing"}, 404, "not_found")
    run("list a file is 409", "list", {"path": "a.txt"}, 409, "not_directory")
    run("write over a directory is 409", "write", {"path": "d", "content": "x"}, 409,
        "is_directory")
    run("an empty path is 400", "stat", {"path": ""}, 400, "invalid_path")
    run("a NUL in a path is 400", "stat", {"path": "a\u0000b"}, 400, "invalid_path")
    run("a path that is not a string is 400", "stat", {"path": 7}, 400, "invalid_path")
    run("no path is 400", "stat", {}, 400, "invalid_path")
    run("a path over 4096 bytes is 400", "stat", {"path": "a" * 4097}, 400, "invalid_path")
    run("an unknown field is 400", "stat", {"path": "a.txt", "follow": True}, 400,
        "invalid_request")
    run("a length over the bound is 400", "read", {"path": "a.txt", "length": 16 * MIB + 1}, 400,
        "invalid_request")
    run("a negative offset is 400", "read", {"path": "a.txt", "offset": -1}, 400,
        "invalid_request")
    run("an unknown encoding is 400", "read", {"path": "a.txt", "encoding": "hex"}, 400,
        "invalid_request")
    run("an unknown op is 404", "chmod", {"path": "a.txt"}, 404, "unknown_fs_op")
    # outside the workspace: the tools' gate, non-interactive: fail closed
    run("a read outside the workspace is refused", "read", {"path": "/etc/hostname"}, 403,
        "permission_denied")
    run("so is a stat", "stat", {"path": "../etc/hostname"}, 403, "permission_denied")
    run("and a write", "write", {"path": "/tmp/x", "content": "x"}, 403, "permission_denied")
    run("and a list", "list", {"path": "/"}, 403, "permission_denied")
    run("tool-outputs reads", "write", {"path": "tool-outputs/o.txt", "content": "out"}, 200)
    run("tool-outputs reads back", "read", {"path": "tool-outputs/o.txt"}, 200,
        check=lambda b: b["content"] == "out")
    return got


def bounds(s, t, label):
    big = b"\x01" * (16 * MIB + 5)
    a = s.fs(t, "write", {"path": "big", "content": b64(big), "encoding": "base64"})
    ok(a[0] == 200, "%s: a 16 MiB + 5 file is written" % label)
    a = s.fs(t, "read", {"path": "big", "encoding": "base64"})
    ok(code(a) == (413, "too_large"), "%s: reading it whole is 413 too_large" % label)
    a = s.fs(t, "read", {"path": "big", "encoding": "base64", "offset": 16 * MIB, "length": 100})
    ok(a[0] == 200 and base64.b64decode(a[1]["content"]) == b"\x01" * 5 and a[1]["eof"] and
       a[1]["size"] == 16 * MIB + 5, "%s: its tail is read as a range" % label)
    a = s.fs(t, "read", {"path": "big", "encoding": "base64", "offset": 5, "length": 16 * MIB})
    ok(a[0] == 200 and a[1]["length"] == 16 * MIB,
       "%s: the largest range (16 MiB) is served" % label)
    raw = json.dumps({"path": "huge", "content": "x" * (32 * MIB)}).encode()
    a = s.request("POST", "/threads/%s/fs/write" % t, raw=raw)
    ok(a[0] == 413, "%s: a write body over maxToolBodyBytes is 413" % label)
    a = s.fs(t, "stat", {"path": "huge"})
    ok(code(a) == (404, "not_found"), "%s: and nothing was written" % label)
    a = s.fs(t, "remove", {"path": "big"})
    ok(a[0] == 200, "%s: the big file is removed" % label)


def native_only(s, t):
    a = s.request("POST", "/threads/%s/tools/runBash" % t,
                  {"command": "ln -s /etc out && ln -s a.txt link && ln -s loop loop && "
                   "printf '#!/bin/sh\\n' > x.sh && chmod +x x.sh && mkfifo fifo"})
    ok(a[0] == 200 and a[1]["result"]["exitCode"] == 0, "native: links made by a command")
    a = s.fs(t, "read", {"path": "out/hostname"})
    ok(code(a) == (403, "permission_denied"), "native: a link out of the workspace is gated")
    a = s.fs(t, "lstat", {"path": "link"})
    ok(a[0] == 200 and a[1]["kind"] == "symlink" and a[1]["target"] == "a.txt",
       "native: lstat sees the link, with its target")
    a = s.fs(t, "stat", {"path": "link"})
    ok(a[0] == 200 and a[1]["kind"] == "file" and a[1]["size"] == 6, "native: stat follows it")
    a = s.fs(t, "realPath", {"path": "link"})
    ok(a == (200, {"path": "/workspace/a.txt"}), "native: realPath resolves it")
    a = s.fs(t, "realPath", {"path": "loop"})
    ok(code(a)[0] in (400, 403), "native: a link loop is refused")
    a = s.fs(t, "stat", {"path": "x.sh"})
    ok(a[0] == 200 and a[1]["executable"] is True, "native: executable bit")
    a = s.fs(t, "read", {"path": "fifo"})
    ok(code(a) == (409, "not_regular_file"), "native: a fifo is not read (409)")
    a = s.fs(t, "stat", {"path": "fifo"})
    ok(a[0] == 200 and a[1]["kind"] == "other" and a[1]["size"] == 0, "native: a fifo is other")
    a = s.fs(t, "remove", {"path": "link"})
    ok(a[0] == 200, "native: remove a link")
    a = s.fs(t, "stat", {"path": "a.txt"})
    ok(a[0] == 200, "native: removing the link left its target")
    a = s.fs(t, "remove", {"path": "out"})
    ok(a[0] == 200 and os.path.exists("/etc/passwd"),
       "native: removing a link out of the workspace removes the link only")
    a = s.fs(t, "lstat", {"path": "out"})
    ok(code(a) == (404, "not_found"), "native: the link is gone")
    a = s.fs(t, "write", {"path": "x.sh", "content": "#!/bin/sh\necho hi\n"})
    a = s.fs(t, "stat", {"path": "x.sh"})
    ok(a[0] == 200 and a[1]["executable"], "native: a write keeps the mode")
    a = s.request("POST", "/threads/%s/tools/runBash" % t, {"command": "stat -c %u:%g bin/all"})
    ok(a[0] == 200 and a[1]["result"]["stdout"].strip() == "1000:1000",
       "native: written files belong to the sandbox user")
    hold = threading.Thread(target=s.request, args=("POST", "/threads/%s/tools/runBash" % t,
                                                     {"command": "sleep 1.5"}))
    hold.start()
    time.sleep(0.5)
    a = s.fs(t, "stat", {"path": "a.txt"})
    hold.join()
    ok(code(a) == (409, "run_in_flight"), "native: a file operation during a run is 409")


def policy_cases():
    tok = {n: "%s-token-0123456789abcdef" % n for n in ("runner", "reader", "viewer")}
    for n, v in tok.items():
        with open(os.path.join(WORK, n + ".token"), "w") as f:
            f.write(v)
    principals = [
        {"name": "runner", "tokenFile": os.path.join(WORK, "runner.token"),
         "operations": ["thread.create", "thread.read", "thread.run"], "threads": "all"},
        {"name": "reader", "tokenFile": os.path.join(WORK, "reader.token"),
         "operations": ["thread.read", "thread.workspace"], "threads": "all"},
        {"name": "viewer", "tokenFile": os.path.join(WORK, "viewer.token"),
         "operations": ["thread.read"], "threads": "all"},
    ]
    s = Server("policy", {"sandbox": {"provider": {"type": "fake", "scope": "it-fs-policy"}},
                          "threadAccess": {"principals": principals}})
    if not ok(s.up(), "policy: server starts"):
        return
    s.request("POST", "/threads", {"thread_id": "p"}, token=tok["runner"])
    a = s.fs("p", "write", {"path": "f", "content": "x"}, token=tok["runner"])
    ok(a[0] == 200, "policy: thread.run writes")
    for op in ("stat", "lstat", "realPath", "list", "walk", "read"):
        a = s.fs("p", op, {"path": "f"}, token=tok["reader"])
        ok(code(a) == (404, "thread_not_found"),
           "policy: without thread.run a %s is the missing thread's 404" % op)
    for op in ("write", "mkdir", "remove", "touch"):
        body = {"path": "f", "content": "y"} if op == "write" else {"path": "f"}
        a = s.fs("p", op, body, token=tok["reader"])
        ok(code(a) == (403, "forbidden"), "policy: a reader-only principal cannot %s" % op)
    a = s.fs("p", "read", {"path": "f"}, token=tok["runner"])
    ok(a[1]["content"] == "x", "policy: and the file is unchanged")
    a = s.fs("p", "stat", {"path": "f"}, token=tok["viewer"])
    ok(code(a) == (404, "thread_not_found"), "policy: thread.read alone sees no file (404)")
    a = s.fs("p", "stat", {"path": "f"})
    ok(a[0] == 401, "policy: no token is 401")
    a = s.fs("nope", "stat", {"path": "f"}, token=tok["runner"])
    ok(code(a) == (404, "thread_not_found"), "policy: a missing thread is 404")
    s.stop()


def compare(answers, a, b):
    diff = [k for k in answers[a] if answers[a][k] != answers[b].get(k)]
    for k in diff:
        diag("%s:\n  %s %s\n  %s %s" % (k, a, answers[a][k], b, answers[b].get(k)))
    ok(not diff, "%s and %s answer every shared case the same (%d cases)" %
       (a, b, len(answers[a])))


def docker_main(common):
    """Under tests/docker/with-dockerd.sh: the fake's answers against Docker's."""
    answers = {}
    fake = Server("fake", dict(common, sandbox={"provider": {"type": "fake", "scope": "it-fs"}}))
    if ok(fake.up(), "fake: server starts"):
        fake.request("POST", "/threads", {"thread_id": "f1"})
        answers["fake"] = cases(fake, "f1", "fake")
        fake.stop()
    provider = {"type": "docker", "scope": os.environ["B4BOX_TEST_DOCKER_SCOPE"],
                "image": os.environ["B4BOX_TEST_DOCKER_IMAGE"],
                "host": os.environ["B4BOX_TEST_DOCKER_HOST"]}
    docker = Server("docker", dict(common, sandbox={"provider": provider,
                                                    "network": {"mode": "deny"}}))
    if ok(docker.up(), "docker: server starts"):
        docker.request("POST", "/threads", {"thread_id": "d1"})
        answers["docker"] = cases(docker, "d1", "docker")
        bounds(docker, "d1", "docker")
        docker.request("DELETE", "/threads/d1")
        docker.stop()
    if "fake" in answers and "docker" in answers:
        compare(answers, "fake", "docker")


def main():
    common = {"permissions": {"mode": "non-interactive",
                              "allow": {"bash": ["ln -s ", "stat -c ", "sleep "]}}}
    interactive = Server("interactive", {"permissions": {"mode": "interactive"}, "sandbox": {
        "provider": {"type": "fake", "scope": "it-fs-ia"}}})
    if ok(interactive.up(), "interactive: server starts"):
        interactive.request("POST", "/threads", {"thread_id": "i1"})
        a = interactive.fs("i1", "read", {"path": "/etc/hostname"})
        ok(code(a) == (403, "permission_required") and
           a[1]["error"]["message"] == "permission required: /etc/hostname",
           "interactive: an ask is 403 permission_required, nothing parked")
        a = interactive.fs("i1", "write", {"path": "in.txt", "content": "x"})
        ok(a[0] == 200, "interactive: inside the workspace no one is asked")
        interactive.stop()
    if os.environ.get("B4BOX_TEST_DOCKER_IMAGE"):
        return docker_main(common)
    fake = Server("fake", dict(common, sandbox={"provider": {"type": "fake", "scope": "it-fs"}}))
    answers = {}
    if ok(fake.up(), "fake: server starts"):
        fake.request("POST", "/threads", {"thread_id": "f1"})
        answers["fake"] = cases(fake, "f1", "fake")
        bounds(fake, "f1", "fake")
        fake.stop()
    if os.geteuid() == 0:
        native = Server("native", dict(common, sandbox={
            "provider": {"type": "native", "scope": "it-fs-native"},
            "network": {"mode": "deny"}}))
        if ok(native.up(), "native: server starts"):
            native.request("POST", "/threads", {"thread_id": "n1"})
            answers["native"] = cases(native, "n1", "native")
            bounds(native, "n1", "native")
            native_only(native, "n1")
            native.request("DELETE", "/threads/n1")
            native.stop()
        if "fake" in answers and "native" in answers:
            compare(answers, "fake", "native")
    else:
        print("ok %d - native # SKIP not root" % (TAP["n"] + 1))
        TAP["n"] += 1
    policy_cases()


try:
    main()
finally:
    for s in SERVERS:
        s.stop()
    if os.environ.get("KEEP_WORK"):
        diag("work dir kept: " + WORK)
    else:
        shutil.rmtree(WORK, ignore_errors=True)
print("1..%d" % TAP["n"])
sys.exit(1 if TAP["failed"] else 0)
