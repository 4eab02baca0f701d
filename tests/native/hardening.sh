#!/usr/bin/env bash
# Native hardening end to end (TAP, root only), through the CLI in a deny-mode app:
#   audit M5: a static probe copied into the workspace finds io_uring, vsock and other
#             address families, personality flags, modify_ldt, kcmp, memfd_secret, the
#             NUMA calls, ptrace, namespaces, mounts, keyrings and bpf denied with EPERM,
#             clone3 ENOSYS, and what a sandbox keeps allowed;
#   audit L6: a descriptor the launching process leaks (non-CLOEXEC) never reaches the
#             keeper, which outlives that process.
# Usage: hardening.sh B4BOX SECCOMP_PROBE
set -uo pipefail
b4box=$(realpath "$1")
probe=$(realpath "$2")
if [ "$(id -u)" -ne 0 ]; then
        echo "1..0 # SKIP needs root"
        exit 0
fi
dir=$(mktemp -d)
cleanup() {
        (cd "$dir/app" && "$b4box" --state "$dir/st" destroy hard >/dev/null 2>&1)
        rm -rf "$dir"
}
trap cleanup EXIT
mkdir -p "$dir/app"
echo '{"sandbox":{"provider":{"type":"native","scope":"hardening-test"},"network":{"mode":"deny"}}}' \
        >"$dir/app/b4box.json"
x() { (cd "$dir/app" && "$b4box" --state "$dir/st" "$@"); }

echo "1..3"
n=0
check() { n=$((n + 1)); if eval "$2"; then echo "ok $n - $1"; else echo "not ok $n - $1"; fi; }

# L6: the keeper starts under this exec, which holds fd 7 open without CLOEXEC.
: >"$dir/inherited-marker"
exec 7<"$dir/inherited-marker"
x exec --thread hard -- true
exec 7<&-
pid=$(awk '{print $2}' "$dir"/st/native/run/*.keeper 2>/dev/null | head -n1)
leaked=$(ls -l "/proc/$pid/fd" 2>/dev/null | grep -c inherited-marker)
fds=$(ls "/proc/$pid/fd" 2>/dev/null | sort -n | tr '\n' ' ')
check "L6: the keeper holds no inherited descriptor (fds: $fds)" \
        '[ -n "$pid" ] && [ -d "/proc/$pid/fd" ] && [ "$leaked" = 0 ]'

# M5: the probe runs as the sandbox user from the workspace.
ws=$(ls -d "$dir"/st/native/workspaces/*/ | head -n1)
cp "$probe" "$ws/probe" && chown 1000:1000 "$ws/probe" && chmod 0755 "$ws/probe"
out=$(x exec --thread hard -- ./probe 2>&1); rc=$?
check "M5: the seccomp filter denies what Docker's default profile denies (EPERM)" '[ $rc -eq 0 ]'
[ $rc -eq 0 ] || sed 's/^/# /' <<<"$out"
cases=$(sed -n 's/^cases //p' <<<"$out")
check "M5: every probe case ran ($cases)" \
        '[ -n "$cases" ] && [ "$(grep -c "^ok " <<<"$out")" -eq "$cases" ] && [ "$cases" -ge 49 ]'
