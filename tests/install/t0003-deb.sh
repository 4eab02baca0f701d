#!/usr/bin/env bash
# The Debian packages and the container image (docs/install.md "Debian packages",
# "Container image"): dpkg-buildpackage builds b4box, libb4box0 and libb4box-dev from the
# tracked tree; lintian passes (errors and warnings); the packages install with dpkg into a
# clean Debian 12 root (the minbase tar scripts/install-deps makes) where b4box runs, checks
# a config and has its man page; and the Dockerfile builds an image from them on a private
# dockerd (offline: --network none) whose server answers on a bind-mounted socket.
#   t0003-deb.sh SRC_DIR
set -uo pipefail
src=$1
BASE_TAR=${B4BOX_BASE_TAR:-/var/cache/b4box-dev/bookworm-base.tar}
n=0
failed=0
ok() { n=$((n + 1)); echo "ok $n - $1"; }
not_ok() { n=$((n + 1)); failed=$((failed + 1)); echo "not ok $n - $1"; }
check() { local name=$1; shift; if "$@"; then ok "$name"; else not_ok "$name"; fi; }
for t in dpkg-buildpackage dh lintian; do
        command -v "$t" >/dev/null || { echo "1..0 # SKIP $t not installed (scripts/install-deps all)"; exit 77; }
done
[ "$(id -u)" = 0 ] || { echo "1..0 # SKIP installing into a chroot needs root"; exit 77; }
tmp=$(mktemp -d /var/tmp/b4box-deb.XXXXXX)
cleanup() { rm -rf "$tmp"; }
trap cleanup EXIT
echo "1..9"

mkdir -p "$tmp/b4box"
git -C "$src" ls-files -z | tar -C "$src" --null -T - -cf - | tar -C "$tmp/b4box" -xf -
(cd "$tmp/b4box" && DEB_BUILD_OPTIONS="nocheck parallel=2" \
        dpkg-buildpackage -us -uc -b >"$tmp/build.log" 2>&1)
rc=$?
[ $rc = 0 ] || tail -20 "$tmp/build.log" | sed 's/^/# /'
check "dpkg-buildpackage builds b4box, libb4box0 and libb4box-dev" \
        bash -c '[ $1 = 0 ] && ls "$2"/b4box_*.deb "$2"/libb4box0_*.deb "$2"/libb4box-dev_*.deb >/dev/null' _ "$rc" "$tmp"
lintian --tag-display-limit 0 --fail-on error,warning "$tmp"/b4box_*.changes >"$tmp/lintian.log" 2>&1
rc=$?
grep -E '^[EW]:' "$tmp/lintian.log" | sed 's/^/# /'
check "lintian: no error, no warning" [ $rc = 0 ]
check "b4box.deb holds the binary, the helpers in /usr/lib/b4box, the units, man pages" bash -c '
        l=$(dpkg -c "$1"/b4box_*.deb)
        for f in ./usr/bin/b4box ./usr/lib/b4box/b4box-full ./usr/lib/b4box/b4box-keeper \
                ./lib/systemd/system/b4box.service ./lib/systemd/system/b4box.socket \
                ./usr/share/man/man1/b4box.1.gz; do
                grep -q " $f\$" <<<"$l" || { echo "# missing $f"; exit 1; }
        done' _ "$tmp"

if [ ! -s "$BASE_TAR" ]; then
        for i in 4 5 6 7 8 9; do echo "ok $i # SKIP no clean root: $BASE_TAR (scripts/install-deps all makes it)"; done
        exit $((failed > 0))
fi
mkdir -p "$tmp/root"
tar -C "$tmp/root" -xf "$BASE_TAR"
mkdir -p "$tmp/root/tmp/debs"
cp "$tmp"/b4box_*.deb "$tmp"/libb4box0_*.deb "$tmp"/libb4box-dev_*.deb "$tmp/root/tmp/debs/"
check "the packages install with dpkg into a clean Debian 12 root" \
        chroot "$tmp/root" sh -c 'dpkg -i /tmp/debs/*.deb >/tmp/dpkg.log 2>&1 || { cat /tmp/dpkg.log; exit 1; }'
want=$(chroot "$tmp/root" /usr/bin/b4box version 2>&1)
check "b4box runs there ($want)" bash -c '[[ $1 == "b4box "[0-9]* ]]' _ "$want"
printf '{"sandbox": {"provider": {"type": "fake", "scope": "deb"}}}' >"$tmp/root/tmp/c.json"
check "b4box check passes a config there" \
        chroot "$tmp/root" sh -c '/usr/bin/b4box -c /tmp/c.json --state /tmp/st check >/dev/null'
check "man b4box resolves there" bash -c 'chroot "$1" man -w b4box | grep -q "/usr/share/man/man1/b4box.1.gz"' _ "$tmp/root"

mkdir -p "$tmp/image/debs"
cp "$tmp"/b4box_*.deb "$tmp"/libb4box0_*.deb "$tmp/image/debs/"
cp "$tmp/b4box/Dockerfile" "$tmp/b4box/.dockerignore" "$tmp/image/"
out=$("$src/tests/docker/with-dockerd.sh" "$src/tests/install/docker-image.sh" "$tmp/image" "$BASE_TAR")
rc=$?
if [ $rc = 77 ]; then
        echo "ok 8 # SKIP no dockerd can run here"
        echo "ok 9 # SKIP no dockerd can run here"
        exit $((failed > 0))
fi
while read -r line; do # docker-image.sh prints "ok - NAME" / "not ok - NAME", two of them
        case $line in
        "ok - "*) ok "${line#ok - }" ;;
        "not ok - "*) not_ok "${line#not ok - }" ;;
        *) echo "# $line" ;;
        esac
done <<<"$out"
exit $((failed > 0 || n != 9))
