#!/usr/bin/env bash
# helm lint --strict passes for the default values and every value set of tests/chart/values,
# with nothing but the icon recommendation reported; a chart whose release namespace is the
# sandbox namespace fails to render (the seed: keep the release in the management namespace;
# helm lint itself reports a template's `fail` as [INFO] only, so rendering is what proves it).
# Arg: the build directory (helm is unpacked there).
set -uo pipefail
. "$(dirname "$0")/lib/helm.sh"
helm_setup "$1"
sets=$(value_sets)
echo "1..$(($(wc -l <<<"$sets") + 1))"
n=0
lint() {
        HELM_CACHE_HOME=$HELM_HOME/cache HELM_CONFIG_HOME=$HELM_HOME/config \
                HELM_DATA_HOME=$HELM_HOME/data "$HELM" lint --strict "$CHART_DIR" "$@" 2>&1
}
for set in $sets; do
        n=$((n + 1))
        args=(--namespace b4-app)
        [ "$set" = default ] || args+=(--values "$CHART_TESTS/values/$set.yaml")
        out=$(lint "${args[@]}")
        rc=$?
        # [INFO] icon is the one note allowed: the chart has no icon.
        noise=$(grep -E '^\[(INFO|WARNING|ERROR)\]' <<<"$out" | grep -v 'icon is recommended')
        if [ $rc -eq 0 ] && [ -z "$noise" ] && grep -q '1 chart(s) linted, 0 chart(s) failed' <<<"$out"; then
                echo "ok $n - helm lint --strict, values $set"
        else
                echo "not ok $n - helm lint --strict, values $set (exit $rc)"
                sed 's/^/# /' <<<"$out"
        fi
done
n=$((n + 1))
out=$(render default --namespace b4-sandboxes 2>&1)
if [ $? -ne 0 ] && grep -q 'is the release namespace' <<<"$out"; then
        echo "ok $n - the release in the sandbox namespace is refused"
else
        echo "not ok $n - rendering with --namespace b4-sandboxes did not fail as it should"
        sed 's/^/# /' <<<"$out" | head -20
fi
