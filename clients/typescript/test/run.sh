#!/bin/sh
# The TypeScript package's suite, as meson runs it (suite 'ts-client'): build with the pinned
# tsc (node_modules from `npm ci`, which scripts/install-deps runs), then node's test runner
# against a real `b4box serve` ($B4BOX) with TAP on stdout.
set -eu
cd "$(dirname "$0")/.."
if ! command -v node >/dev/null 2>&1; then
        echo "1..0 # SKIP node is not installed (scripts/install-deps installs nodejs)"
        exit 0
fi
if [ ! -x node_modules/.bin/tsc ]; then
        echo "Bail out! clients/typescript/node_modules is missing: run scripts/install-deps (npm ci)"
        exit 1
fi
if ! out=$(node_modules/.bin/tsc -p tsconfig.json 2>&1); then
        echo "Bail out! tsc failed"
        printf '%s\n' "$out" | sed 's/^/# /'
        exit 1
fi
# examples/b4run-config/b4.config.ts must type-check with b4boxSandbox() as B4.run's provider.
if ! out=$(node_modules/.bin/tsc -p test/example/tsconfig.json 2>&1); then
        echo "Bail out! examples/b4run-config/b4.config.ts does not type-check"
        printf '%s\n' "$out" | sed 's/^/# /'
        exit 1
fi
# node's TAP nests subtests (indented) with YAML blocks, which meson's parser calls unknown:
# the top-level lines are the result, the rest goes through as comments.
log=$(mktemp "${TMPDIR:-/tmp}/b4ts-tap.XXXXXX")
rc=0
node --test --test-reporter=tap test/*.test.mjs >"$log" 2>&1 || rc=$?
sed -E '/^(TAP version|ok |not ok |1\.\.|Bail out!|#)/!s/^/# /' "$log"
rm -f "$log"
exit "$rc"
