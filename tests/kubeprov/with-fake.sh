#!/usr/bin/env bash
# with-fake.sh CMD [ARGS...]: start the fake API server (tests/fakes/kube-apiserver.py, its
# command line is documented at its top) in a private state dir, run CMD against it, stop
# the fake. CMD finds it through:
#   B4BOX_TEST_KUBE_CONFIG     the fake's kubeconfig (token user, context "fake")
#   B4BOX_TEST_KUBE_NAMESPACE  the namespace the fake serves (b4-sandboxes)
#   B4BOX_TEST_KUBE_IMAGE      the image the Pods name (the fake runs the host's root)
#   KUBE_FAKE_URL, KUBE_FAKE_ADMIN, KUBE_FAKE_STATE  its URL, control token and state dir
# The fake's exec sandbox needs root (mount namespaces): without it this fails (no skip
# counted as a pass). CMD's exit status is ours.
set -u
here=$(cd "$(dirname "$0")" && pwd)
fake=${B4BOX_KUBE_FAKE:-$here/../fakes/kube-apiserver.py}
py=/usr/bin/python3
[ "$(id -u)" = 0 ] || { echo "with-fake.sh: the fake API server needs root" >&2; exit 1; }
[ -f "$fake" ] || { echo "with-fake.sh: no fake API server at $fake" >&2; exit 1; }
state=$(mktemp -d "${TMPDIR:-/tmp}/b4kubeprov.XXXXXX")
pid=
cleanup() {
        [ -n "$pid" ] && kill -TERM "$pid" 2>/dev/null && wait "$pid" 2>/dev/null
        [ -n "${KEEP_FAKE_LOG:-}" ] && cp "$state/stderr" "$KEEP_FAKE_LOG" 2>/dev/null
        rm -rf "$state"
}
trap cleanup EXIT
"$py" "$fake" --state "$state" --namespace b4-sandboxes ${KUBE_FAKE_ARGS:-} \
        >"$state/stdout" 2>"$state/stderr" &
pid=$!
for _ in $(seq 300); do
        [ -s "$state/server.json" ] && break
        kill -0 "$pid" 2>/dev/null || break
        sleep 0.05
done
if [ ! -s "$state/server.json" ]; then
        echo "with-fake.sh: the fake did not start:" >&2
        tail -n 20 "$state/stderr" >&2
        exit 1
fi
export B4BOX_TEST_KUBE_CONFIG=$state/kubeconfig B4BOX_TEST_KUBE_NAMESPACE=b4-sandboxes
export B4BOX_TEST_KUBE_IMAGE=${B4BOX_TEST_KUBE_IMAGE:-debian:12}
KUBE_FAKE_URL=$("$py" -c 'import json,sys; print(json.load(open(sys.argv[1]))["url"])' \
        "$state/server.json")
KUBE_FAKE_ADMIN=$(cat "$state/admin-token")
export KUBE_FAKE_URL KUBE_FAKE_ADMIN KUBE_FAKE_STATE=$state
"$@"
