#!/usr/bin/env bash
# helm template of the default values and of every value set in tests/chart/values matches its
# golden file tests/chart/golden/SET.yaml byte for byte, and the NOTES.txt helm install would
# print matches golden/SET.notes.txt. After a deliberate chart change, regenerate them with
# tests/chart/regen-golden BUILD_DIR and review the diff.
# Arg: the build directory (helm is unpacked there).
set -uo pipefail
. "$(dirname "$0")/lib/helm.sh"
helm_setup "$1"
sets=$(value_sets)
echo "1..$(($(wc -l <<<"$sets") * 2))"
n=0
for set in $sets; do
        n=$((n + 1))
        golden=$CHART_TESTS/golden/$set.yaml
        if ! out=$(render "$set" 2>&1); then
                echo "not ok $n - values $set: helm template failed"
                sed 's/^/# /' <<<"$out"
        elif [ ! -f "$golden" ]; then
                echo "not ok $n - values $set: no golden file $golden (tests/chart/regen-golden)"
        elif d=$(diff -u "$golden" - <<<"$out"); then
                echo "ok $n - values $set renders as golden/$set.yaml ($(grep -c '^kind:' <<<"$out") objects)"
        else
                echo "not ok $n - values $set differs from golden/$set.yaml (tests/chart/regen-golden)"
                sed 's/^/# /' <<<"$d" | head -80
        fi
done
for set in $sets; do
        n=$((n + 1))
        golden=$CHART_TESTS/golden/$set.notes.txt
        if ! out=$(render_notes "$set" 2>&1); then
                echo "not ok $n - values $set: NOTES.txt failed to render"
                sed 's/^/# /' <<<"$out"
        elif [ ! -f "$golden" ]; then
                echo "not ok $n - values $set: no golden file $golden (tests/chart/regen-golden)"
        elif d=$(diff -u "$golden" - <<<"$out"); then
                echo "ok $n - values $set: NOTES.txt as golden/$set.notes.txt"
        else
                echo "not ok $n - values $set: NOTES.txt differs from golden/$set.notes.txt (tests/chart/regen-golden)"
                sed 's/^/# /' <<<"$d" | head -40
        fi
done
