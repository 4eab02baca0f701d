#!/usr/bin/env bash
# Rootless mode end to end (TAP): b4box runs as a throwaway unprivileged system user that this
# test creates (root is needed only for that and for the cleanup), with its own state dir.
# Every thread is destroyed, leftover keepers are killed by their recorded pid, the user and
# the dir are removed. Usage: rootless.sh B4BOX USERNS_OFF ROOTLESS_API
set -uo pipefail
b4box=$(realpath "$1")
userns_off=$(realpath "$2")
rootless_api=$(realpath "$3")
keeper=${B4BOX_KEEPER:-}
if [ "$(id -u)" -ne 0 ] || ! command -v useradd >/dev/null || ! command -v setpriv >/dev/null; then
        echo "1..0 # SKIP needs root, useradd and setpriv"
        exit 0
fi
user=b4box-test-$$
if ! useradd --system --no-create-home --user-group --shell /usr/sbin/nologin "$user"; then
        echo "1..0 # SKIP cannot create a test user"
        exit 0
fi
uid=$(id -u "$user")
gid=$(id -g "$user")
dir=$(mktemp -d)
chmod 755 "$dir"
home=$dir/home
mkdir "$home" && chown "$uid:$gid" "$home"
as() {
        (cd "$home" && setpriv --reuid="$uid" --regid="$gid" --clear-groups \
                env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin HOST_SECRET=leaked \
                ${keeper:+B4BOX_KEEPER=$keeper} "$b4box" --state "$home/st" "$@")
}
cleanup() {
        for t in rl rl-allow; do as destroy "$t" >/dev/null 2>&1; done
        for rec in "$home"/st/native/run/*.keeper "$home"/api-st/native/run/*.keeper; do
                [ -f "$rec" ] || continue
                pid=$(awk '{print $2}' "$rec")
                echo "# leaked keeper $pid"
                kill -KILL "$pid" 2>/dev/null
        done
        rm -rf "$dir"
        userdel "$user" 2>/dev/null
        getent group "$user" >/dev/null && groupdel "$user"
}
trap cleanup EXIT
cat >"$home/b4box.json" <<JSON
{"sandbox": {"provider": {"type": "native", "scope": "rootless-test"},
             "network": {"mode": "deny"}, "resources": {"timeoutMs": 20000}}}
JSON
chown "$uid:$gid" "$home/b4box.json"

echo "1..15"
n=0
check() { n=$((n + 1)); if eval "$2"; then echo "ok $n - $1"; else echo "not ok $n - $1"; fi; }

out=$(as check 2>&1); rc=$?
printf '%s\n' "$out" | sed 's/^/# /'
check "check passes and says rootless" '[ $rc -eq 0 ] && printf "%s\n" "$out" | grep -q "^privileges *enforced *rootless (user namespaces)"'
# the default pidsLimit is set, so NOT ENFORCED; memoryMb and cpus are not (audit L5: "not set")
check "check lists the cgroup limits as NOT ENFORCED or not set, with the reason" 'printf "%s\n" "$out" | grep -q "^pids limit *NOT ENFORCED *512 processes configured, but rootless without a delegated" && printf "%s\n" "$out" | grep -q "^memory limit *not set *no resources\.memoryMb; not enforceable here: rootless without a delegated" && printf "%s\n" "$out" | grep -q "^cpu limit *not set *no resources\.cpus; not enforceable here: rootless without a delegated"'
check "check says allow mode cannot run rootless" 'printf "%s\n" "$out" | grep -q "^network allow *NOT ENFORCED *rootless mode"'

out=$(as exec --thread rl -- 'id -u; id -g'); rc=$?
check "uid and gid 1000 inside" '[ $rc -eq 0 ] && [ "$out" = "1000
1000" ]'
out=$(as exec --thread rl -- 'grep -E "^(CapEff|CapBnd|NoNewPrivs|Seccomp):" /proc/self/status | tr -s "\t" " "')
check "CapEff 0, CapBnd 0, NoNewPrivs 1, Seccomp 2" '[ "$out" = "CapEff: 0000000000000000
CapBnd: 0000000000000000
NoNewPrivs: 1
Seccomp: 2" ]'
out=$(as exec --thread rl -- 'touch /usr/x 2>/dev/null && echo usr; touch /x 2>/dev/null && echo root; echo w >/workspace/f && echo ws; echo t >/tmp/f && echo tmp')
check "root read-only, /workspace and /tmp writable" '[ "$out" = "ws
tmp" ]'
out=$(as exec --thread rl -- 'tail -n +3 /proc/net/dev | cut -d: -f1 | tr -d " "')
check "only lo in deny mode" '[ "$out" = lo ]'
out=$(as exec --thread rl -- 'env | grep -c HOST_SECRET; exit 0')
check "the host environment is absent" '[ "$out" = 0 ]'
out=$(as exec --thread rl -- 'mount -t tmpfs t /tmp 2>/dev/null && echo mounted; unshare -U true 2>/dev/null && echo userns; exit 0')
check "mount and unshare -U fail" '[ -z "$out" ]'
check "workspace files belong to the invoking user on the host" '[ "$(stat -c %u:%g "$home"/st/native/workspaces/*/f)" = "$uid:$gid" ]'
out=$(as tool --thread rl --mode bypass writeFile '{"path":"/workspace/sub/h.txt","content":"host"}' 2>&1)
printf '%s\n' "$out" | sed 's/^/# /'
in=$(as exec --thread rl -- 'stat -c %u:%g /workspace/sub /workspace/sub/h.txt; cat /workspace/sub/h.txt')
check "host-side writes are the invoking user's outside, 1000 inside" '[ "$(stat -c %u:%g "$home"/st/native/workspaces/*/sub/h.txt)" = "$uid:$gid" ] && [ "$in" = "1000:1000
1000:1000
host" ]'
rec1=$(cat "$home"/st/native/run/*.keeper)
as exec --thread rl -- 'sleep 4444 >/dev/null 2>&1 &'
out=$(as exec --thread rl -- 'for f in /proc/[0-9]*/cmdline; do tr "\0" " " <$f; echo; done | grep -c "^sleep 4444 $"; exit 0')
rec2=$(cat "$home"/st/native/run/*.keeper)
check "a later process adopts the keeper (background job still there)" '[ "$rec1" = "$rec2" ] && [ "$out" = 1 ]'
as exec --thread rl --timeout 500 -- sleep 30 2>"$dir/e"; rc=$?
check "timeout gives 124 and the message" '[ $rc -eq 124 ] && grep -qx "Command timed out after 1s (resources.timeoutMs: 500ms)." "$dir/e"'
sed -i 's/"deny"/"allow"/' "$home/b4box.json"
as exec --thread rl-allow -- true 2>"$dir/e"; rc=$?
sed -i 's/"allow"/"deny"/' "$home/b4box.json"
out=$(cd "$home" && "$userns_off" "$uid" "$gid" env -i PATH=/usr/bin:/bin ${keeper:+B4BOX_KEEPER=$keeper} \
        "$b4box" --state "$home/st" exec --thread rl -- true 2>&1); rc2=$?
printf '%s\n' "$out" | sed 's/^/# /'
check "allow mode is refused (B4_E2001) and so is acquire without user namespaces" \
        'grep -q "network \"allow\" needs a veth and NAT but rootless mode.*B4_E2001" "$dir/e" && [ $rc -ne 0 ] &&
         [ $rc2 -ne 0 ] && printf "%s\n" "$out" | grep -q "user namespaces are disabled (user.max_user_namespaces = 0).*B4_E2001"'
out=$(cd "$home" && setpriv --reuid="$uid" --regid="$gid" --clear-groups env -i PATH=/usr/bin:/bin \
        ${keeper:+B4BOX_KEEPER=$keeper} "$rootless_api" "$home/api-st" 2>&1); rc=$?
printf '%s\n' "$out" | sed 's/^/# /'
check "the provider API rootless: fs ops, reader, release, destroy (rootless-api)" \
        '[ $rc -eq 0 ] && [ "$(printf "%s\n" "$out" | grep -c "^ok")" = 9 ]'
