#!/usr/bin/env bash
# `b4box conformance` end to end against the fake provider (TAP).
set -uo pipefail
b4box=$(realpath "$1")
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
cd "$dir" || exit 1
echo "1..5"
n=0
check() { n=$((n + 1)); if eval "$2"; then echo "ok $n - $1"; else echo "not ok $n - $1"; fi; }

out=$("$b4box" conformance --provider fake 2>"$dir/err"); rc=$?
check "fake passes every case, exit 0" '[ $rc -eq 0 ] && [ "$(printf "%s\n" "$out" | tail -n1)" = "12 passed, 0 failed" ]'
check "one line per case" '[ "$(printf "%s\n" "$out" | grep -c ": ok$")" -eq 12 ] && grep -q "^10. a non-zero exit code comes back exactly: ok$" <<<"$out"'
printf '{"sandbox": {"provider": {"type": "fake", "scope": "from-file"}}}' > "$dir/fake.json"
out=$("$b4box" conformance -c "$dir/fake.json" 2>&1); rc=$?
check "-c selects the provider" '[ $rc -eq 0 ] && grep -q "^12 passed, 0 failed$" <<<"$out"'
"$b4box" conformance --nope >/dev/null 2>"$dir/err"; rc=$?
check "unknown option is a usage error" '[ $rc -eq 2 ] && grep -q "^b4box: conformance: unexpected argument" "$dir/err"'
"$b4box" conformance --provider nosuch >/dev/null 2>"$dir/err"; rc=$?
check "unknown provider fails" '[ $rc -eq 1 ] && grep -q "not available in this build" "$dir/err"'
