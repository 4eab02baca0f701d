#!/usr/bin/env bash
# The image store (docs/images.md): b4box image import of OCI layouts (directory and tar)
# written here, verified blob by blob, layers applied with whiteouts and opaque directories,
# hard links and symlinks kept, setuid dropped, device nodes, path traversal and hard links
# out of the root refused, a bad digest refused; ls, inspect, rm (refused while in use).
#   t0001-image.sh B4BOX
set -uo pipefail
B4BOX=$1
HERE=$(cd "$(dirname "$0")" && pwd)
tmp=$(mktemp -d "${TMPDIR:-/tmp}/b4box-image.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
n=0 failed=0
ok() { n=$((n + 1)); echo "ok $n - $1"; }
not_ok() { n=$((n + 1)); failed=$((failed + 1)); echo "not ok $n - $1"; }
check() { local name=$1; shift; if "$@"; then ok "$name"; else not_ok "$name"; fi; }
[ -x /bin/busybox ] || { echo "1..0 # SKIP busybox-static is not installed"; exit 77; }
b4() { "$B4BOX" --state "$tmp/state" "$@"; }
json() { python3 -c 'import json,sys; v=json.load(sys.stdin)
for k in sys.argv[1].split("."): v = v[int(k)] if isinstance(v, list) else v[k]
print(json.dumps(v) if isinstance(v, (list, dict)) else v)' "$1"; }

want=$("$HERE/make-layout.py" "$tmp/good" good)
id=$(b4 image import "$tmp/good" --name local/test:v1 2>"$tmp/err")
check "an OCI layout directory imports; its id is the config digest" [ "$id" = "$want" ]
root=$tmp/state/images/roots/${want#sha256:}
check "whiteout: dir/a from the lower layer is gone" [ ! -e "$root/dir/a" ]
check "... dir/b stays" [ "$(cat "$root/dir/b")" = "b from layer 1" ]
check "opaque directory: only the upper layer's content" \
        [ "$(ls "$root/opq")" = new ] && [ "$(cat "$root/opq/new")" = "from layer 2" ]
check "a hard link is one file" [ "$(stat -c %i "$root/dir/hard")" = "$(stat -c %i "$root/dir/b")" ]
check "a symlink is kept as a link" [ "$(readlink "$root/bin/sh")" = busybox ]
check "setuid is dropped" [ "$(stat -c %a "$root/usr/bin/su")" = 755 ]
check "the gzip layer applied" [ "$(cat "$root/etc/motd")" = "hello from layer 2" ]
out=$(b4 image ls)
check "ls lists the archive's tag and --name" bash -c '[[ $1 == *"test/layered:1"*"$2"* && $1 == *"local/test:v1"* ]]' _ "$out" "$want"
out=$(b4 image inspect local/test:v1)
check "inspect: env, workingDir, user from the config" \
        [ "$(json env.1 <<<"$out")" = IMAGE_VAR=1 ] && [ "$(json workingDir <<<"$out")" = /opq ] &&
        [ "$(json user <<<"$out")" = 1000 ]
check "... by digest too" [ "$(b4 image inspect "$want" | json id)" = "$want" ]
fails_saying() { # fails_saying TEXT CMD...: CMD exits non-zero and says TEXT
        local text=$1 out
        shift
        out=$("$@" 2>&1) && return 1
        [[ $out == *"$text"* ]] || { echo "# $out"; return 1; }
}
check "an unknown reference is not in the store" fails_saying "is not in the store" b4 image inspect nope:1
tar -C "$tmp/good" -cf "$tmp/good.tar" .
check "the same layout as a tar imports to the same id (the root is shared)" \
        [ "$(b4 image import "$tmp/good.tar")" = "$want" ] && [ "$(ls "$tmp/state/images/roots" | wc -l)" = 1 ]

# An image already in the store is not unpacked again (its layers are not read): each refusal
# is tried on a store of its own.
refused() { # refused NAME VARIANT TEXT: the import fails saying TEXT, and keeps nothing
        local st=$tmp/state-$2 out rc
        "$HERE/make-layout.py" "$tmp/$2" "$2" >/dev/null
        out=$("$B4BOX" --state "$st" image import "$tmp/$2" 2>&1)
        rc=$?
        [ $rc != 0 ] && [[ $out == *"$3"* ]] || echo "# rc $rc: $out"
        check "$1" bash -c '[ "$1" != 0 ] && [[ $2 == *"$3"* ]] && [ -z "$(ls "$4/roots" 2>/dev/null)$(ls "$4/tmp" 2>/dev/null)$(ls "$4/refs" 2>/dev/null)" ]' \
                _ "$rc" "$out" "$3" "$st/images"
}
refused "a changed layer blob is refused" bad-digest "does not match its digest"
refused "a wrong diff id is refused" diff-mismatch "does not match the config's diff id"
refused "a device node is refused" device "is a device node"
refused "a path leaving the root is refused" traversal "leaves the image root"
refused "a hard link out of the root is refused" hardlink-out "points out of the image root"
check "not an image: refused" fails_saying "not an image" b4 image import /etc

mkdir -p "$tmp/state/images/users/${want#sha256:}" && : >"$tmp/state/images/users/${want#sha256:}/thr1"
out=$(b4 image rm "$want" 2>&1)
check "rm of an image a thread's sandbox uses is refused" bash -c '[ $1 != 0 ]' _ $? &&
        [[ $out == *"used by a thread"* ]] && [ -d "$root" ]
rm -f "$tmp/state/images/users/${want#sha256:}/thr1"
b4 image rm local/test:v1 >/dev/null
check "rm of one name keeps the image for its other name" [ -d "$root" ] &&
        [ "$(b4 image inspect test/layered:1 | json id)" = "$want" ]
b4 image rm test/layered:1 >/dev/null
check "rm of the last name removes the root and the config" \
        [ ! -e "$root" ] && [ -z "$(ls "$tmp/state/images/configs")" ]
echo "1..$n"
exit $((failed > 0))
