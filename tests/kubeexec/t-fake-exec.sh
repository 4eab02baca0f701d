#!/usr/bin/env bash
# kube exec (src/lib/kube/ws.c, exec.c) against the fake API server over TLS: one-shot
# commands, refusals, and a b4box-agent session over one exec stream (fake-exec.c).
#   t-fake-exec.sh FAKE_EXEC_BINARY AGENT_BINARY [--bench N]
. "$(dirname "$0")/../kube/lib.sh"
# the fake offers h2 too: the client must still speak HTTP/1.1 (the Upgrade is 1.1 only)
start_fake --alpn h2,http/1.1 || exit 1
export FAKE_PID # --bench reads the fake's CPU time
bin=$1
shift
"$bin" "$KUBECONFIG" "$@"
