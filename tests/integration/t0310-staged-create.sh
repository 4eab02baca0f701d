#!/usr/bin/env bash
# POST /threads with a staged workspace (reference §6.4) end to end: every status in its order
# of checks, the in-flight limit, threadAccess.stagedSources "own", the upload client, and the
# whole flow: upload -> create with sourceDigest -> first run materialises the files -> the
# resolver saw `staged` (verified against the held source).
B4BOX=${B4BOX:?}
. "$(dirname "$0")/lib.sh"

printf 'alice-token-0123456789\n' > "$WORK/alice.token"
printf 'bob-token-0123456789ab\n' > "$WORK/bob.token"
printf 'ro-token-0123456789abc\n' > "$WORK/ro.token"
ops='["workspace.source.put", "thread.create", "thread.read", "thread.run", "thread.delete"]'
access="\"threadAccess\": {\"principals\": [
    {\"name\": \"alice\", \"tokenFile\": \"$WORK/alice.token\", \"operations\": $ops, \"threads\": \"own\"},
    {\"name\": \"bob\", \"tokenFile\": \"$WORK/bob.token\", \"operations\": $ops, \"threads\": \"own\"},
    {\"name\": \"ro\", \"tokenFile\": \"$WORK/ro.token\", \"operations\": [\"thread.read\"], \"threads\": \"own\"}]"
AL=(-H "Authorization: Bearer alice-token-0123456789")
BO=(-H "Authorization: Bearer bob-token-0123456789ab")
RO=(-H "Authorization: Bearer ro-token-0123456789abc")
fails() { ! "$@" 2>/dev/null; }

# The resolver keeps what it was given and answers the staged reference as the workspace.
mkdir -p "$WORK/empty"
cat > "$WORK/resolve.py" <<EOF
#!/usr/bin/python3
import json, sys
d = json.load(sys.stdin)
with open("$WORK/resolver-" + d["threadId"] + ".json", "w") as f:
    json.dump(d, f)
s = d["staged"]
if d["metadata"].get("mode") == "other":
    s = dict(s or {}, sourceDigest="0" * 64)
print(json.dumps({"workspace": s if s else {"source": {"directory": "empty", "include": []}}}))
EOF
chmod +x "$WORK/resolve.py"

mkdir -p "$WORK/src/bin"
printf 'hello from the bundle\n' > "$WORK/src/main.txt"
printf '#!/bin/sh\necho run\n' > "$WORK/src/bin/run.sh"
chmod +x "$WORK/src/bin/run.sh"
DIGEST=$("$B4BOX" bundle create "$WORK/src" -o "$WORK/b.json")
MISSING=$(printf '%064d' 7)
ws() { printf '{"thread_id": "%s", "workspace": %s}' "$1" "$2"; }

# Option off: the field is shape-checked, then refused once the policy allowed the caller.
start_server "{\"sandbox\": {\"provider\": {\"type\": \"fake\", \"scope\": \"sc0\"}}, $access}}" "$WORK/s0" ||
        { not_ok "server starts"; done_testing; exit 1; }
req POST /threads "$(ws t0 "{\"sourceDigest\": \"$DIGEST\"}")" "${RO[@]}"
check "off: the policy first (403)" [ "$STATUS" = 403 ]
req POST /threads "$(ws t0 '{"sourceDigest": "nope"}')" "${AL[@]}"
if [ "$STATUS" = 400 ] && [ "$(json_get "$BODY" error.details.code)" = invalid_request ]; then ok "off: a malformed field is 400 invalid_request"; else not_ok "off: a malformed field is 400 invalid_request"; fi
req POST /threads "$(ws t0 "{\"sourceDigest\": \"$DIGEST\"}")" "${AL[@]}"
if [ "$STATUS" = 400 ] && [ "$(json_get "$BODY" error.details.code)" = workspace_not_accepted ]; then ok "off: 400 workspace_not_accepted"; else not_ok "off: 400 workspace_not_accepted"; fi
req GET /threads/t0 "" "${AL[@]}"
check "off: nothing was created" [ "$STATUS" = 404 ]
stop_server

CFG="{\"sandbox\": {\"provider\": {\"type\": \"fake\", \"scope\": \"sc1\"},
  \"thread\": {\"command\": [\"$WORK/resolve.py\"]}, \"stagedWorkspaces\": true}, $access}}"
start_server "$CFG" "$WORK/s1" || { not_ok "server starts"; done_testing; exit 1; }
req POST /threads "$(ws t1 "{\"sourceDigest\": \"$DIGEST\"}")" "${RO[@]}"
check "on: the policy first (403)" [ "$STATUS" = 403 ]
head -c 1100000 /dev/zero | tr '\0' ' ' > "$WORK/big.json"
req POST /threads "@$WORK/big.json" "${RO[@]}"
check "over 1 MiB, refused caller: the policy's 403, not 413" [ "$STATUS" = 403 ]
req POST /threads "@$WORK/big.json" "${AL[@]}"
if [ "$STATUS" = 413 ] && [ "$(json_get "$BODY" error.details.code)" = payload_too_large ]; then ok "over 1 MiB: 413 payload_too_large"; else not_ok "over 1 MiB: 413 payload_too_large"; fi
for bad in '"x"' '{}' '{"sourceDigest": "ABC"}' "{\"sourceDigest\": \"$DIGEST\", \"extra\": 1}" \
        "{\"sourceDigest\": \"$DIGEST\", \"baseline\": \"svn\"}" \
        "{\"sourceDigest\": \"$DIGEST\", \"environmentLinks\": [{\"path\": \"a\"}]}" \
        "{\"sourceDigest\": \"$DIGEST\", \"environmentLinks\": {}}"; do
        req POST /threads "$(ws t1 "$bad")" "${AL[@]}"
        if [ "$STATUS" = 400 ] && [ "$(json_get "$BODY" error.details.code)" = invalid_request ]; then ok "malformed workspace $bad: 400"; else not_ok "malformed workspace $bad: 400"; fi
done
req POST /threads "$(ws t1 "{\"sourceDigest\": \"$MISSING\"}")" "${AL[@]}"
if [ "$STATUS" = 422 ] && [ "$(json_get "$BODY" error.details.code)" = workspace_source_not_held ]; then ok "a digest nobody uploaded: 422 workspace_source_not_held"; else not_ok "a digest nobody uploaded: 422 workspace_source_not_held"; fi

# The upload client.
export B4BOX_URL="unix:$SOCK" B4BOX_TOKEN=alice-token-0123456789
out=$("$B4BOX" upload "$WORK/b.json" 2>&1)
check "upload: created" [ "$out" = "$DIGEST created" ]
out=$("$B4BOX" upload "$WORK/b.json" 2>&1)
check "upload again: already held" [ "$out" = "$DIGEST held" ]
sed 's/"aGVsbG8gZnJvbSB0aGUgYnVuZGxlCg=="/"aGVsbG8gZnJvbSB0aGUgYnVuZGxlCh=="/' "$WORK/b.json" > "$WORK/bad.json"
check "upload refuses a bundle that fails verification, before sending" fails "$B4BOX" upload "$WORK/bad.json"
B4BOX_TOKEN=ro-token-0123456789abc
out=$("$B4BOX" upload "$WORK/b.json" 2>&1)
check "upload reports the server's refusal" glob "$out" "*403*"
B4BOX_TOKEN=alice-token-0123456789

# Against a scripted server: a 429 is retried after Retry-After; an answer for another
# digest is refused; the response read is bounded.
cat > "$WORK/fake-server.py" <<'EOF'
import http.server, json, os, socketserver, sys
answers = [json.loads(a) for a in sys.argv[2:]]
class H(http.server.BaseHTTPRequestHandler):
    def do_PUT(self):
        self.rfile.read(int(self.headers["Content-Length"]))
        status, retry, body = answers.pop(0) if len(answers) > 1 else answers[0]
        with open(sys.argv[1] + ".log", "a") as f:
            f.write("PUT %s\n" % self.path)
        self.send_response(status)
        if retry:
            self.send_header("Retry-After", str(retry))
        data = body.encode() if isinstance(body, str) else b"x" * body
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)
    def log_message(self, *a):
        pass
class S(socketserver.UnixStreamServer):
    def get_request(self):
        req, _ = super().get_request()
        return req, ["local", 0]
try:
    os.unlink(sys.argv[1])
except FileNotFoundError:
    pass
S(sys.argv[1], H).serve_forever()
EOF
fake_upload() { # ANSWER_JSON...: run b4box upload against a scripted server, sets out/rc
        rm -f "$WORK/fake.sock.log" "$WORK/fake.sock" # a socket left by the last one would pass the wait
        python3 "$WORK/fake-server.py" "$WORK/fake.sock" "$@" &
        local fp=$!
        for _ in $(seq 100); do [ -S "$WORK/fake.sock" ] && break; sleep 0.05; done
        out=$(B4BOX_URL="unix:$WORK/fake.sock" "$B4BOX" upload "$WORK/b.json" 2>&1); rc=$?
        kill "$fp"; wait "$fp" 2>/dev/null
}
ok201="[201, 0, \"{\\\"digest\\\": \\\"$DIGEST\\\", \\\"status\\\": \\\"created\\\"}\"]"
busy='[429, 1, "{\"error\": {\"message\": \"busy\", \"details\": {\"code\": \"upload_in_flight\"}}}"]'
fake_upload "$busy" "$busy" "$ok201"
if [ "$rc" = 0 ] && [ "$out" = "$DIGEST created" ]; then ok "upload retries a 429 after Retry-After, then reports created"; else not_ok "upload retries a 429 after Retry-After, then reports created"; fi
check "three attempts were made" [ "$(grep -c "PUT /workspace/sources/$DIGEST" "$WORK/fake.sock.log")" = 3 ]
fake_upload "$busy"
if [ "$rc" = 1 ] && glob "$out" "*429*upload_in_flight*" && [ "$(grep -c PUT "$WORK/fake.sock.log")" = 5 ]; then ok "upload gives up after 5 attempts"; else not_ok "upload gives up after 5 attempts"; fi
fake_upload "[201, 0, \"{\\\"digest\\\": \\\"$MISSING\\\", \\\"status\\\": \\\"created\\\"}\"]"
if [ "$rc" = 1 ] && glob "$out" "*answered for digest $MISSING*"; then ok "upload refuses an answer for another digest"; else not_ok "upload refuses an answer for another digest"; fi
fake_upload '[200, 0, 100000]'
if [ "$rc" = 1 ] && glob "$out" "*larger than 65536 bytes*"; then ok "upload bounds the response it reads"; else not_ok "upload bounds the response it reads"; fi

# Links are checked against the held bundle.
req POST /threads "$(ws t1 "{\"sourceDigest\": \"$DIGEST\", \"environmentLinks\": [{\"path\": \"main.txt\", \"target\": \"/etc/hosts\"}]}")" "${AL[@]}"
if [ "$STATUS" = 422 ] && [ "$(json_get "$BODY" error.details.code)" = workspace_invalid ]; then ok "a link over a bundle file: 422 workspace_invalid"; else not_ok "a link over a bundle file: 422 workspace_invalid"; fi
check "422 says why" glob "$(json_get "$BODY" error.message)" "*main.txt*"
req POST /threads "$(ws t1 "{\"sourceDigest\": \"$DIGEST\", \"environmentLinks\": [{\"path\": \"l\", \"target\": \"relative\"}]}")" "${AL[@]}"
if [ "$STATUS" = 422 ] && [ "$(json_get "$BODY" error.details.code)" = workspace_invalid ]; then ok "a relative link target: 422 workspace_invalid"; else not_ok "a relative link target: 422 workspace_invalid"; fi
req POST /threads "$(ws t1 "{\"sourceDigest\": \"$DIGEST\", \"baseline\": \"git\", \"environmentLinks\": [{\"path\": \".git\", \"target\": \"/x\"}]}")" "${AL[@]}"
if [ "$STATUS" = 422 ] && [ "$(json_get "$BODY" error.details.code)" = workspace_invalid ]; then ok "a .git link under a git baseline: 422 workspace_invalid"; else not_ok "a .git link under a git baseline: 422 workspace_invalid"; fi
req POST /threads "$(ws t1 "{\"sourceDigest\": \"$DIGEST\"}")" "${AL[@]}"
if [ "$STATUS" = 201 ] && [ "$(json_get "$BODY" thread_id)" = t1 ]; then ok "create with a held source: 201"; else not_ok "create with a held source: 201"; fi
check "the reference is not in the metadata" [ "$(json_get "$BODY" metadata)" = "{}" ]
req POST /threads "$(ws t1 "{\"sourceDigest\": \"$DIGEST\"}")" "${AL[@]}"
check "the same id again: 409" [ "$STATUS" = 409 ]
req POST /threads "{\"thread_id\": \"t1c\", \"parent_thread_id\": \"t1\", \"workspace\": {\"sourceDigest\": \"$DIGEST\"}}" "${AL[@]}"
check "a child thread may not name a workspace: 400" [ "$STATUS" = 400 ]

# The first run materialises the staged files; the resolver saw the staged reference.
req POST /threads/t1/tools/readFile '{"path": "main.txt"}' "${AL[@]}"
if [ "$STATUS" = 200 ] && glob "$BODY" "*hello from the bundle*"; then ok "first run: readFile sees the staged file"; else not_ok "first run: readFile sees the staged file"; fi
req POST /threads/t1/tools/readFile '{"path": "bin/run.sh"}' "${AL[@]}"
if [ "$STATUS" = 200 ] && glob "$BODY" "*echo run*"; then ok "and the nested one"; else not_ok "and the nested one"; fi
check "the resolver ran with staged" [ "$(json_get "$(cat "$WORK/resolver-t1.json")" staged.sourceDigest)" = "$DIGEST" ]
check "staged carries the links, sorted and empty here" [ "$(json_get "$(cat "$WORK/resolver-t1.json")" staged.environmentLinks)" = "[]" ]
check "and the client metadata without it" [ "$(json_get "$(cat "$WORK/resolver-t1.json")" metadata)" = "{}" ]
req POST /threads '{"thread_id": "plain"}' "${AL[@]}"
req POST /threads/plain/tools/listDir '{}' "${AL[@]}"
check "a thread without a workspace: staged is null" [ "$(json_get "$(cat "$WORK/resolver-plain.json")" staged)" = None ]

# threads create --source through the CLI.
out=$("$B4BOX" threads create --id t2 --source "$DIGEST" --link tools/sh=/bin/sh 2>&1)
check "threads create --source" glob "$out" '*"thread_id":"t2"*'
req POST /threads/t2/tools/listDir '{"path": "tools"}' "${AL[@]}"
check "the link was made (fake: links unsupported, so the run says so)" glob "$BODY" "*symlink*"
check "the resolver saw the link" glob "$(cat "$WORK/resolver-t2.json")" '*"path": "tools/sh", "target": "/bin/sh"*'

# The resolver may only answer the thread's own staged source.
req POST /threads "{\"thread_id\": \"t5\", \"metadata\": {\"mode\": \"other\"}, \"workspace\": {\"sourceDigest\": \"$DIGEST\"}}" "${AL[@]}"
req POST /threads/t5/tools/listDir '{}' "${AL[@]}"
if [ "$STATUS" = 503 ] && glob "$BODY" "*is not the thread's staged source*"; then ok "a resolver naming another source: refused at admission"; else not_ok "a resolver naming another source: refused at admission"; fi
# The held source is checked byte for byte against its canonical form at admission.
python3 - "$WORK/s1/b4box.db" "$DIGEST" <<'EOF'
import sqlite3, sys
c = sqlite3.connect(sys.argv[1], isolation_level=None)
(p,) = c.execute("SELECT payload FROM sources WHERE digest = ?", (sys.argv[2],)).fetchone()
c.execute("UPDATE sources SET payload = ? WHERE digest = ?", (b" " + bytes(p), sys.argv[2]))
EOF
req POST /threads "$(ws t6 "{\"sourceDigest\": \"$DIGEST\"}")" "${AL[@]}"
req POST /threads/t6/tools/listDir '{}' "${AL[@]}"
if [ "$STATUS" = 503 ] && glob "$BODY" "*does not match its held source*"; then ok "a held source that differs from its canonical bytes: refused at admission"; else not_ok "a held source that differs from its canonical bytes: refused at admission"; fi
check "and the resolver never ran" [ ! -e "$WORK/resolver-t6.json" ]

# stagedSources "own" (below): refused callers hear "not held", like an unknown digest.
stop_server
unset B4BOX_URL B4BOX_TOKEN
start_server "${CFG%\}\}}, \"stagedSources\": \"own\"}}" "$WORK/s1" || { not_ok "server restarts"; done_testing; exit 1; }
req POST /threads "$(ws t3 "{\"sourceDigest\": \"$DIGEST\"}")" "${BO[@]}"
if [ "$STATUS" = 422 ] && [ "$(json_get "$BODY" error.details.code)" = workspace_source_not_held ]; then ok "own: bob did not upload it, 422 workspace_source_not_held"; else not_ok "own: bob did not upload it, 422 workspace_source_not_held"; fi
req POST /threads "$(ws t3 "{\"sourceDigest\": \"$DIGEST\", \"environmentLinks\": [{\"path\": \"main.txt\", \"target\": \"/x\"}]}")" "${BO[@]}"
if [ "$STATUS" = 422 ] && [ "$(json_get "$BODY" error.details.code)" = workspace_source_not_held ]; then ok "own: no workspace_invalid leak of another's file names"; else not_ok "own: no workspace_invalid leak of another's file names"; fi
req POST /threads "$(ws t3 "{\"sourceDigest\": \"$DIGEST\"}")" "${AL[@]}"
check "own: alice uploaded it, 201" [ "$STATUS" = 201 ]
req PUT "/workspace/sources/$DIGEST" "@$WORK/b.json" "${BO[@]}"
check "bob uploads the same bundle: 200 held" [ "$STATUS" = 200 ]
req POST /threads "$(ws t4 "{\"sourceDigest\": \"$DIGEST\"}")" "${BO[@]}"
check "own: now bob is an uploader too, 201" [ "$STATUS" = 201 ]

# At most 4 creates naming a workspace at once: hold the store's write lock from outside so
# creates that got a slot wait inside it, start five at once, and expect exactly one to be told
# to retry (whichever arrived last), then release the lock before the store's busy timeout.
python3 - "$WORK/s1/b4box.db" "$WORK/release" <<'EOF' &
import os, sqlite3, sys, time
c = sqlite3.connect(sys.argv[1], isolation_level=None)
c.execute("BEGIN IMMEDIATE")
open(sys.argv[1] + ".held", "w").close()
for _ in range(400):
    if os.path.exists(sys.argv[2]):
        break
    time.sleep(0.01)
c.execute("ROLLBACK")
EOF
LOCKER=$!
for _ in $(seq 400); do [ -e "$WORK/s1/b4box.db.held" ] && break; sleep 0.01; done
HELD=()
for i in 1 2 3 4 5; do
        curl -s "${JSON[@]}" -i --unix-socket "$SOCK" -X POST "${AL[@]}" \
                --data-binary "$(ws "h$i" "{\"sourceDigest\": \"$DIGEST\"}")" http://b4/threads \
                > "$WORK/held-$i.out" &
        HELD+=($!)
done
for _ in $(seq 300); do
        grep -l "workspace_create_in_flight" "$WORK"/held-*.out >/dev/null 2>&1 && break
        sleep 0.01
done
touch "$WORK/release"
wait "$LOCKER" "${HELD[@]}"
REFUSED=$(grep -l "workspace_create_in_flight" "$WORK"/held-*.out)
check "five creates at once: exactly one 429 workspace_create_in_flight" [ "$(echo $REFUSED | wc -w)" = 1 ]
check "with retry-after: 1" grep -qi "^retry-after: 1" $REFUSED
check "the four others complete" [ "$(grep -l "^HTTP/1.1 201" "$WORK"/held-*.out | wc -l)" = 4 ]
h=$(basename "$REFUSED" .out)
req POST /threads "$(ws "h${h#held-}" "{\"sourceDigest\": \"$DIGEST\"}")" "${AL[@]}"
check "the slot is free again" [ "$STATUS" = 201 ]
stop_server
done_testing
