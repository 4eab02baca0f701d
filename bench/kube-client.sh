#!/usr/bin/env bash
# bench/kube-client.sh BUILD [N]: the kube client against tests/fakes/kube-apiserver.py on
# loopback (root: the fake's exec sandbox): GET latency and the token bucket's rate
# (bench/kube-client-bench.c). Starts the fake in a temp dir and stops it by its pid.
set -eu
build=${1:?usage: bench/kube-client.sh BUILD [N]}
n=${2:-300}
here=$(cd "$(dirname "$0")/.." && pwd)
state=$(mktemp -d "${TMPDIR:-/tmp}/b4kube-bench.XXXXXX")
/usr/bin/python3 "$here/tests/fakes/kube-apiserver.py" --state "$state" >/dev/null 2>"$state/stderr" &
pid=$!
trap 'kill -TERM $pid 2>/dev/null; wait $pid 2>/dev/null; rm -rf "$state"' EXIT
for _ in $(seq 200); do [ -s "$state/server.json" ] && break; sleep 0.05; done
[ -s "$state/server.json" ] || { cat "$state/stderr"; exit 1; }
"$build/bench/kube-client-bench" "$state/kubeconfig" "$n"
