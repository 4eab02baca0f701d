#!/usr/bin/env bash
# kube exec (src/lib/kube/ws.c, exec.c) against the fake API server over TLS: one-shot
# commands, refusals, and a b4box-agent session over one exec stream (fake-exec.c).
#   t-fake-exec.sh FAKE_EXEC_BINARY AGENT_BINARY [--bench N]
. "$(dirname "$0")/../kube/lib.sh"
start_fake || exit 1
bin=$1
shift
"$bin" "$KUBECONFIG" "$@"
