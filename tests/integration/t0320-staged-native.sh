#!/usr/bin/env bash
# A staged workspace on the native provider, through a sandbox.workspace resolver command that
# answers the staged form itself: upload -> create with links and a git baseline -> the first
# run sees the files with their executable bit, the link as a symlink and one baseline commit.
B4BOX=${B4BOX:?}
. "$(dirname "$0")/lib.sh"
[ "$(id -u)" = 0 ] || skip_all "native sandboxes need root here"

printf 'nat-token-0123456789ab\n' > "$WORK/nat.token"
NT=(-H "Authorization: Bearer nat-token-0123456789ab")
cat > "$WORK/resolve.py" <<EOF
#!/usr/bin/python3
import json, sys
d = json.load(sys.stdin)
with open("$WORK/resolver-" + d["threadId"] + ".json", "w") as f:
    json.dump(d, f)
print(json.dumps(d["staged"] or {"source": {"directory": "empty", "include": []}}))
EOF
chmod +x "$WORK/resolve.py"
mkdir -p "$WORK/empty" "$WORK/src/bin"
printf 'native hello\n' > "$WORK/src/main.txt"
printf '#!/bin/sh\necho ran\n' > "$WORK/src/bin/run.sh"
chmod +x "$WORK/src/bin/run.sh"
DIGEST=$("$B4BOX" bundle create "$WORK/src" -o "$WORK/b.json")

start_server "{\"sandbox\": {\"provider\": {\"type\": \"native\", \"scope\": \"it-staged\"},
  \"network\": {\"mode\": \"deny\"}, \"workspace\": {\"command\": [\"$WORK/resolve.py\"]},
  \"stagedWorkspaces\": true},
  \"threadAccess\": {\"principals\": [{\"name\": \"n\", \"tokenFile\": \"$WORK/nat.token\",
  \"operations\": [\"workspace.source.put\", \"thread.create\", \"thread.run\", \"thread.delete\"],
  \"threads\": \"own\"}]}}" || { not_ok "server starts"; done_testing; exit 1; }
out=$(B4BOX_URL="unix:$SOCK" B4BOX_TOKEN=nat-token-0123456789ab "$B4BOX" upload "$WORK/b.json")
check "upload" [ "$out" = "$DIGEST created" ]
req POST /threads "{\"thread_id\": \"s1\", \"workspace\": {\"sourceDigest\": \"$DIGEST\",
  \"baseline\": \"git\", \"environmentLinks\": [{\"path\": \"tools/sh\", \"target\": \"/bin/sh\"}]}}" "${NT[@]}"
check "create with links and a git baseline" [ "$STATUS" = 201 ]
req POST /threads/s1/tools/runBash '{"command": "cat main.txt; ./bin/run.sh; readlink tools/sh; git rev-list --count HEAD; git status --porcelain | wc -l"}' "${NT[@]}"
got=$(json_get "$BODY" result.stdout)
check "first run: files, executable bit, link, one clean baseline commit" \
        [ "$got" = "$(printf 'native hello\nran\n/bin/sh\n1\n0')" ]
check "the workspace resolver saw staged with the link" \
        [ "$(json_get "$(cat "$WORK/resolver-s1.json")" staged.environmentLinks.0.target)" = /bin/sh ]
req POST /threads '{"thread_id": "p1"}' "${NT[@]}"
req POST /threads/p1/tools/runBash '{"command": "ls | wc -l"}' "${NT[@]}"
check "a thread without a staged workspace gets the resolver's own (empty) one" \
        [ "$(json_get "$BODY" result.stdout)" = 0 ]
for t in s1 p1; do req DELETE "/threads/$t" "" "${NT[@]}"; done
check "threads deleted" [ "$STATUS" = 200 ]
stop_server
done_testing
