#!/usr/bin/env bash
# Unpacks helm, then runs t0003-objects.mjs (schemas, Restricted, RBAC, policies).
# Arg: the build directory (helm is unpacked there).
set -uo pipefail
. "$(dirname "$0")/lib/helm.sh"
helm_setup "$1"
HELM=$HELM HELM_CACHE_HOME=$HELM_HOME/cache HELM_CONFIG_HOME=$HELM_HOME/config \
        HELM_DATA_HOME=$HELM_HOME/data exec node "$CHART_TESTS/t0003-objects.mjs"
