#!/usr/bin/env bash
# Run "$@" in a private network namespace made for the test (loopback up, forwarding on), so
# allow-mode sandboxes get their veth and NAT rules there, with no route to any real network.
set -euo pipefail
if [ "$(id -u)" -ne 0 ]; then
        exec "$@" # unprivileged: the test itself skips
fi
exec unshare --net -- sh -c 'ip link set lo up && echo 1 >/proc/sys/net/ipv4/ip_forward &&
        exec "$@"' sh "$@"
