#!/usr/bin/env python3
# A policy program for t0330 (docs/configuration.md "The policy program"): tokens by
# digest, own threads only, uploads stamped with the uploader, a create naming a workspace
# allowed only to one of its uploaders. Headers x-test-* make it misbehave on purpose.
import hashlib, json, sys, time

TOKENS = {hashlib.sha256(f"{n}-token-0123456789abc".encode()).hexdigest(): n
          for n in ("alice", "bob")}
log = open(sys.argv[1], "a")

def answer(req):
    h = req.get("headers") or {}
    who = TOKENS.get(req.get("tokenDigest"))
    if h.get("x-test-slow"):
        time.sleep(5)
    if h.get("x-test-pause"):
        time.sleep(float(h["x-test-pause"]))
    if h.get("x-test-garbage"):
        return "this is not json"
    if h.get("x-test-exit"):
        sys.exit(3)
    if who is None:
        return {"allow": False}
    a = {"allow": True, "identity": who}
    thread = req.get("thread")
    if thread is not None and thread.get("owner") != who:
        return {"allow": False}
    if req["operation"] == "workspace.source.put":
        a["stamp"] = {"by": who}
    ws = req.get("requestedWorkspace")
    if req["operation"] == "thread.create" and ws is not None:
        if not any(s.get("by") == who for s in ws["uploadedBy"]):
            return {"allow": False, "status": 403, "message": "choose a source you uploaded"}
    if (req.get("threadId") or "").startswith("locked"):
        return {"allow": False, "status": 423, "message": "this thread is locked"}
    return a

for line in sys.stdin:
    log.write(line)
    log.flush()
    req = json.loads(line)
    a = answer(req)
    if isinstance(a, str):
        print(a, flush=True)
        continue
    a["id"] = req["id"]
    print(json.dumps(a), flush=True)
