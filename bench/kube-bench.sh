#!/usr/bin/env bash
# The kubernetes provider against the fake API server: API requests per acquire, reattach,
# release, destroy and tool call (the fake's counters), and loopback wall times.
# Usage: bench/kube-bench.sh [BUILD_DIR] [pool [ROUNDS]]   (default: build; root: the fake's
# exec sandbox). "pool": warm pool adoption, p50/p90 to the first tool call.
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
build=${1:-$here/build}
shift || true
ninja -C "$build" bench/kube-bench src/agent/b4box-agent >/dev/null
exec "$here/tests/kubeprov/with-fake.sh" "$build/bench/kube-bench" "$@"
