#!/usr/bin/env bash
# with-fake.sh CLIENT: start the fake API server, run one honesty scenario against it
# (*.mjs with node, *.py with Debian's python3), stop the fake. The client prints TAP and
# finds the fake through KUBECONFIG, FAKE_URL, FAKE_ADMIN, FAKE_CA and FAKE_STATE.
SCENARIO=$1
. "$(dirname "$0")/lib.sh"
client=$1
shift
case $client in
*.mjs)
        command -v node >/dev/null || skip_all "no node"
        [ -d "$HERE/node_modules/@kubernetes/client-node" ] ||
                skip_all "tests/kube/node_modules missing: run scripts/install-deps (npm ci)"
        runner=(node) ;;
*.py)
        "$PY" -c 'import kubernetes' 2>/dev/null || skip_all "no python3-kubernetes"
        runner=("$PY") ;;
*) echo "with-fake.sh: unknown client $client" >&2; exit 2 ;;
esac
start_fake "$@" || exit 1
"${runner[@]}" "$client"
