#!/usr/bin/env bash
# Staged uploads end to end (reference §6.3): PUT /workspace/sources/{digest} in its order of
# checks (policy before anything, option, digest, body cap, JSON, digest match, verification,
# quota), 201 created / 200 held, and b4box bundle create/verify feeding it.
B4BOX=${B4BOX:?}
. "$(dirname "$0")/lib.sh"

printf 'up-token-0123456789abc\n' > "$WORK/up.token"
printf 'ro-token-0123456789abc\n' > "$WORK/ro.token"
printf '#!/bin/sh\ncat >/dev/null\necho "{}"\n' > "$WORK/resolve.sh"
chmod +x "$WORK/resolve.sh"
access="\"threadAccess\": {\"principals\": [
    {\"name\": \"up\", \"tokenFile\": \"$WORK/up.token\", \"operations\": [\"workspace.source.put\", \"thread.create\"], \"threads\": \"own\"},
    {\"name\": \"ro\", \"tokenFile\": \"$WORK/ro.token\", \"operations\": [\"thread.read\"], \"threads\": \"own\"}]}"
UP=(-H "Authorization: Bearer up-token-0123456789abc")
RO=(-H "Authorization: Bearer ro-token-0123456789abc")

mkdir -p "$WORK/src/bin"
printf 'hello\n' > "$WORK/src/main.txt"
printf '#!/bin/sh\n' > "$WORK/src/bin/run.sh"
chmod +x "$WORK/src/bin/run.sh"
DIGEST=$("$B4BOX" bundle create "$WORK/src" -o "$WORK/b.json")
check "bundle create prints a digest" glob "$DIGEST" "[0-9a-f]*"
check "bundle verify agrees" [ "$("$B4BOX" bundle verify "$WORK/b.json" 2>/dev/null)" = "$DIGEST" ]
sed 's/"aGVsbG8K"/"aGVsbG8L"/' "$WORK/b.json" > "$WORK/bad.json"
fails() { ! "$@" 2>/dev/null; }
check "bundle verify refuses a changed file" fails "$B4BOX" bundle verify "$WORK/bad.json"

# Option off: the route exists but answers 404 (after the policy).
start_server "{\"sandbox\": {\"provider\": {\"type\": \"fake\", \"scope\": \"st\"}}, $access}" "$WORK/s0" ||
        { not_ok "server starts"; done_testing; exit 1; }
req PUT "/workspace/sources/$DIGEST" "@$WORK/b.json" "${RO[@]}"
check "policy first: a refused caller gets 403" [ "$STATUS" = 403 ]
req PUT "/workspace/sources/$DIGEST" "@$WORK/b.json"
check "no token: 401" [ "$STATUS" = 401 ]
req PUT "/workspace/sources/$DIGEST" "@$WORK/b.json" "${UP[@]}"
check "option off: 404" [ "$STATUS" = 404 ]
stop_server

start_server "{\"sandbox\": {\"provider\": {\"type\": \"fake\", \"scope\": \"st\"},
  \"thread\": {\"command\": [\"$WORK/resolve.sh\"]},
  \"stagedWorkspaces\": {\"maxUploadBytes\": 2000, \"maxStagedBytes\": 600}}, $access}" "$WORK/s1" ||
        { not_ok "server starts"; done_testing; exit 1; }
req PUT "/workspace/sources/$DIGEST" "@$WORK/b.json" "${RO[@]}"
check "option on, refused caller: 403 before anything" [ "$STATUS" = 403 ]
req PUT "/workspace/sources/ABC" "@$WORK/b.json" "${UP[@]}"
if [ "$STATUS" = 400 ] && [ "$(json_get "$BODY" error.details.code)" = invalid_digest ]; then ok "bad digest: 400"; else not_ok "bad digest: 400"; fi
head -c 3000 /dev/zero | tr '\0' ' ' > "$WORK/big.json"
req PUT "/workspace/sources/$DIGEST" "@$WORK/big.json" "${UP[@]}"
if [ "$STATUS" = 413 ] && [ "$(json_get "$BODY" error.details.code)" = payload_too_large ]; then ok "over maxUploadBytes: 413"; else not_ok "over maxUploadBytes: 413"; fi
req PUT "/workspace/sources/$DIGEST" "not json" "${UP[@]}"
if [ "$STATUS" = 400 ] && [ "$(json_get "$BODY" error.details.code)" = invalid_request ]; then ok "not JSON: 400"; else not_ok "not JSON: 400"; fi
OTHER=$(printf '%064d' 0)
req PUT "/workspace/sources/$OTHER" "@$WORK/b.json" "${UP[@]}"
if [ "$STATUS" = 400 ] && [ "$(json_get "$BODY" error.details.code)" = digest_mismatch ]; then ok "digest mismatch: 400"; else not_ok "digest mismatch: 400"; fi
BADD=$(sed 's/.*"digest":"\([0-9a-f]*\)".*/\1/' "$WORK/bad.json")
req PUT "/workspace/sources/$BADD" "@$WORK/bad.json" "${UP[@]}"
if [ "$STATUS" = 422 ] && [ "$(json_get "$BODY" error.details.code)" = workspace_source_invalid ]; then ok "content not matching its digest: 422"; else not_ok "content not matching its digest: 422"; fi
check "422 says why" [ "$(json_get "$BODY" error.message)" = "Source bundle digest mismatch" ]
req PUT "/workspace/sources/$DIGEST" "@$WORK/b.json" "${UP[@]}"
if [ "$STATUS" = 201 ] && [ "$(json_get "$BODY" status)" = created ]; then ok "new upload: 201 created"; else not_ok "new upload: 201 created"; fi
check "answer names the digest" [ "$(json_get "$BODY" digest)" = "$DIGEST" ]
req PUT "/workspace/sources/$DIGEST" "@$WORK/b.json" "${UP[@]}"
if [ "$STATUS" = 200 ] && [ "$(json_get "$BODY" status)" = held ]; then ok "same upload again: 200 held"; else not_ok "same upload again: 200 held"; fi
printf 'another file, long enough to go over the quota of this server....\n' > "$WORK/src/main.txt"
printf 'x%.0s' $(seq 300) >> "$WORK/src/main.txt"
D2=$("$B4BOX" bundle create "$WORK/src" -o "$WORK/b2.json")
req PUT "/workspace/sources/$D2" "@$WORK/b2.json" "${UP[@]}"
if [ "$STATUS" = 507 ] && [ "$(json_get "$BODY" error.details.code)" = staged_quota_exceeded ]; then ok "over maxStagedBytes: 507"; else not_ok "over maxStagedBytes: 507"; fi
# One upload at a time: a slow upload holds the slot, a second one is told to retry.
{ cat "$WORK/b.json"; head -c 1400 /dev/zero | tr '\0' ' '; } > "$WORK/padded.json"
curl -s "${JSON[@]}" --unix-socket "$SOCK" -X PUT --limit-rate 500 --data-binary "@$WORK/padded.json" "${UP[@]}" \
        -o /dev/null "http://b4/workspace/sources/$DIGEST" &
SLOW=$!
sleep 0.5
out=$(curl -s "${JSON[@]}" -i --unix-socket "$SOCK" -X PUT --data-binary "@$WORK/b.json" "${UP[@]}" \
        "http://b4/workspace/sources/$DIGEST")
check "a concurrent upload: 429 upload_in_flight" glob "$out" "*429*upload_in_flight*"
check "with retry-after: 1" glob "$out" "*[Rr]etry-[Aa]fter: 1*"
wait "$SLOW"
req PUT "/workspace/sources/$DIGEST" "@$WORK/b.json" "${UP[@]}"
check "the slot is free again after the slow upload" [ "$STATUS" = 200 ]
stop_server
done_testing
