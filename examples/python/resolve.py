#!/usr/bin/python3
# The software factory's thread resolver (seed 001, "Hand a thread its workspace"): a thread
# starts from the workspace its creator staged, and only from one.
import json
import sys

req = json.load(sys.stdin)
if not req.get("staged"):
    print(json.dumps({"refuse": "create threads with a staged workspace"}))
    sys.exit(3)
print(json.dumps({"workspace": req["staged"]}))
