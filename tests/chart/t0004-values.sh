#!/usr/bin/env bash
# values.schema.json refuses bad values: helm template fails, naming the schema, for each row
# of the bad table; the templates refuse what the schema cannot see (the refused table); and
# each row of the good table renders (the schema is not stricter than documented). Arg: the build directory (helm is unpacked there).
set -uo pipefail
. "$(dirname "$0")/lib/helm.sh"
helm_setup "$1"
tmp=$(mktemp -d) || exit 1
trap 'rm -rf "$tmp"' EXIT

# what | values YAML
bad=(
        "unknown top-level key|namspace: {name: x}"
        "unknown nested key|reaper: {ttlHour: 5}"
        "ttlHours zero|reaper: {ttlHours: 0}"
        "ttlHours a string|reaper: {ttlHours: \"168\"}"
        "ttlHours fractional|reaper: {ttlHours: 1.5}"
        "privileged Pod Security level|podSecurity: {level: privileged}"
        "Pod Security version not a minor|podSecurity: {version: \"1.34\"}"
        "namespace name not a DNS label|namespace: {name: B4_Sandboxes}"
        "namespace name too long|namespace: {name: $(printf 'a%.0s' {1..64})}"
        "namespace labels override Pod Security|namespace: {labels: {pod-security.kubernetes.io/enforce: privileged}}"
        "subject without kind|orchestrator: {subjects: [{name: b4box, namespace: b4-app}]}"
        "ServiceAccount subject without namespace|orchestrator: {subjects: [{kind: ServiceAccount, name: b4box}]}"
        "User subject with a namespace|orchestrator: {subjects: [{kind: User, name: alice, namespace: b4-app}]}"
        "subject of unknown kind|orchestrator: {subjects: [{kind: Robot, name: r2}]}"
        "subject with an unknown key|orchestrator: {subjects: [{kind: ServiceAccount, name: b4box, namespace: b4-app, apiGroups: x}]}"
        "duplicate subjects|orchestrator: {subjects: [{kind: Group, name: g}, {kind: Group, name: g}]}"
        "subjects not a list|orchestrator: {subjects: {kind: Group, name: g}}"
        "allowDNS a string|networkPolicy: {allowDNS: \"yes\"}"
        "DNS CIDR not a CIDR|networkPolicy: {allowDNS: true, dns: {cidrs: [10.0.0.1]}}"
        "quota value not a quantity|resourceQuota: {hard: {pods: lots}}"
        "LimitRange unknown resource|limitRange: {container: {max: {gpu: \"1\"}}}"
        "LimitRange bad quantity|limitRange: {persistentVolumeClaim: {max: {storage: 10GB}}}"
        "reaper schedule of 4 fields|reaper: {schedule: \"0 * * *\"}"
        "reaper image digest not sha256|reaper: {image: {repository: b4box, digest: \"md5:abc\"}}"
        "reaper image with uppercase|reaper: {image: {repository: B4box}}"
        "reaper pull policy|reaper: {image: {repository: b4box, pullPolicy: Sometimes}}"
        "reaper toleration unknown key|reaper: {tolerations: [{key: a, operater: Exists}]}"
        "reaper resources unknown class|reaper: {resources: {limits: {nvidia.com/gpu: 1}}}"
        "APF with an unknown key|apf: {enabled: true, queue: 5}"
        "APF shares zero|apf: {enabled: true, nominalConcurrencyShares: 0}"
        "APF precedence of the exempt range|apf: {enabled: true, matchingPrecedence: 1}"
        "pre-pull image with a space|prepull: {enabled: true, images: [\"node 24\"]}"
        "pre-pull images not a list|prepull: {enabled: true, images: node}"
)
# Refused by the templates (what a schema cannot see): what | values YAML | message
refused=(
        "APF without any subject|apf: {enabled: true}|apf.enabled needs at least one orchestrator subject"
        "pre-pull without images|prepull: {enabled: true}|prepull.enabled needs prepull.images"
        "APF hand larger than its queues|{apf: {enabled: true, queuing: {queues: 4, handSize: 8, queueLengthLimit: 50}}, orchestrator: {subjects: [{kind: Group, name: g}]}}|cannot exceed apf.queuing.queues"
)
good=(
        "ServiceAccount, User and Group subjects|orchestrator: {subjects: [{kind: ServiceAccount, name: b4box, namespace: b4-app}, {kind: User, name: alice@example.com}, {kind: Group, name: ops}]}"
        "baseline at a pinned version|podSecurity: {level: baseline, version: v1.35}"
        "integer quota values|resourceQuota: {hard: {pods: 5000, requests.storage: 10Ti}}"
        "cron macro schedule|reaper: {schedule: \"@daily\", ttlHours: 87600}"
        "DNS with an IPv6 resolver|networkPolicy: {allowDNS: true, dns: {cidrs: [\"fd00::53/128\", 169.254.20.10/32]}}"
        "APF with a User subject|{apf: {enabled: true}, orchestrator: {subjects: [{kind: User, name: alice}]}}"
)
echo "1..$((${#bad[@]} + ${#good[@]} + ${#refused[@]}))"
n=0
for row in "${bad[@]}"; do
        n=$((n + 1))
        what=${row%%|*}
        printf '%s\n' "${row#*|}" >"$tmp/v.yaml"
        out=$(render default --values "$tmp/v.yaml" 2>&1)
        rc=$?
        if [ $rc -ne 0 ] && grep -q "values don't meet the specifications of the schema" <<<"$out"; then
                echo "ok $n - refused: $what"
        else
                echo "not ok $n - not refused by the schema: $what (exit $rc)"
                sed 's/^/# /' <<<"$out" | head -10
        fi
done
for row in "${good[@]}"; do
        n=$((n + 1))
        what=${row%%|*}
        printf '%s\n' "${row#*|}" >"$tmp/v.yaml"
        if out=$(render default --values "$tmp/v.yaml" 2>&1); then
                echo "ok $n - accepted: $what"
        else
                echo "not ok $n - refused: $what"
                sed 's/^/# /' <<<"$out" | head -10
        fi
done
for row in "${refused[@]}"; do
        n=$((n + 1))
        IFS='|' read -r what yaml want <<<"$row"
        printf '%s\n' "$yaml" >"$tmp/v.yaml"
        out=$(render default --values "$tmp/v.yaml" 2>&1)
        rc=$?
        if [ $rc -ne 0 ] && grep -qF "$want" <<<"$out"; then
                echo "ok $n - refused by the templates: $what"
        else
                echo "not ok $n - not refused by the templates: $what (exit $rc)"
                sed 's/^/# /' <<<"$out" | head -10
        fi
done
