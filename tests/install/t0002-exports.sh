#!/usr/bin/env bash
# libb4box.so exports the public API and nothing else: every defined dynamic symbol is
# b4_* (version script src/lib/libb4box.sym + -fvisibility=hidden), and b4_version is one.
# Arg: path of libb4box.so
set -uo pipefail
lib=$1
echo "1..3"
syms=$(nm -D --defined-only "$lib" | awk '{print $3}')
other=$(grep -v '^b4_' <<<"$syms")
if [ -n "$syms" ] && [ -z "$other" ]; then echo "ok 1 - only b4_* exported ($(wc -l <<<"$syms") symbols)"
else echo "not ok 1 - symbols outside b4_* exported:"; sed 's/^/# /' <<<"$other"; fi
if grep -qx 'b4_version' <<<"$syms" && grep -qx 'b4_provider_new' <<<"$syms"; then echo "ok 2 - b4_version, b4_provider_new exported"
else echo "not ok 2 - b4_version or b4_provider_new not exported"; fi
# Every B4_PUBLIC function declared in include/b4box is exported (none lost to the script).
missing=$(grep -rhoE 'B4_PUBLIC[^(]*\b(b4_[a-z0-9_]+)\(' "${B4BOX_SRCDIR:?}/include/b4box" |
        grep -oE 'b4_[a-z0-9_]+\($' | tr -d '(' | sort -u | grep -vxF -f <(printf '%s\n' "$syms"))
if [ -z "$missing" ]; then echo "ok 3 - every B4_PUBLIC function in include/b4box is exported"
else echo "not ok 3 - declared B4_PUBLIC but not exported:"; sed 's/^/# /' <<<"$missing"; fi
[ -z "$other" ] && [ -z "$missing" ] && [ -n "$syms" ]
