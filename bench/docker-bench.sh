#!/usr/bin/env bash
# Docker provider vs one `docker exec` CLI call per operation vs native, one workload, one
# run. Usage: bench/docker-bench.sh [BUILD_DIR]   (default: build)
# A daemon and a test image come from tests/docker/with-dockerd.sh, which also removes
# everything afterwards. DOCKER_CLI selects the CLI binary (default /usr/bin/docker).
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
build=${1:-$here/build}
ninja -C "$build" bench/docker-bench >/dev/null
exec "$here/tests/docker/with-dockerd.sh" "$build/bench/docker-bench"
