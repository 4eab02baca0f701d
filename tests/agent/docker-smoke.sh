#!/usr/bin/env bash
# Manual smoke (not registered with meson): b4box-agent inside the Docker test image, hardened
# as a sandbox (uid 1000, read-only root, no capabilities, no-new-privileges), the binary
# bind-mounted read-only, spoken to over `docker run -i` by agent-smoke-client.py. The docker
# CLI is the test's client here only; the provider never spawns it.
#   tests/docker/with-dockerd.sh tests/agent/docker-smoke.sh build-dbg/src/agent/b4box-agent
set -euo pipefail
agent=$(realpath "$1")
exec python3 "$(dirname "$0")/agent-smoke-client.py" \
        docker -H "$B4BOX_TEST_DOCKER_HOST" run --rm -i --user 1000:1000 --read-only \
        --tmpfs /tmp --cap-drop ALL --security-opt no-new-privileges \
        -v "$agent:/b4/agent:ro" "$B4BOX_TEST_DOCKER_IMAGE" /b4/agent
